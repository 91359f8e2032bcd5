"""Where the uncertainty of the leading gap comes from: test cases, training samples, seeds.

The leading gap is the CRS of the point top less the runner-up's. Its bootstrap variance splits into
- training samples: the training-sample bootstrap's variance less the fitted probes' (the refit term is
  drawn from a stream of its own, independent of the case and seed counts, so the variances add);
- seeds: the variance of the same gap under seed resampling alone (unit case weights);
- test cases: the fitted probes' variance less the seeds' (clipped at 0).
Doubling a source halves its part (each is a variance of means: test cases and seeds are averaged, and a
probe's deviation from its expectation over training samples goes as 1 / the training examples), so the
gap's standard error after doubling it is sqrt(total - part / 2); the source whose doubling takes it
lowest narrows the tier most (the tier's bound on this gap is gap - q se).
"""

from __future__ import annotations

import math

import numpy as np

from crsbench.crs.definition import CRSConfig, reference_index
from crsbench.scoring.axes import AxisScores
from crsbench.scoring.statistics import OVERALL, crs_from_counts, seed_resample_counts

SOURCES = ("test cases", "training samples", "seeds")
DOUBLING = {"test cases": "twice the test cases", "training samples": "twice the labelled training images",
            "seeds": "twice the seeds"}


def leading_gap_variance(boot, axis_scores: AxisScores, reference: str, config: CRSConfig) -> dict:
    """{top, runner_up, gap, se, variance: {source: v}, share: {source: s}, se_doubled: {source: se}, best};
    training samples None where the intervals do not include them; {} with fewer than two encoders."""
    overall, fitted = boot.overall, boot.fitted_probes.get(OVERALL, boot.overall)
    encoders = list(overall.encoders)
    if len(encoders) < 2:
        return {}
    point = overall.intervals["crs"].to_numpy()
    top, runner = np.argsort(-point, kind="stable")[:2]

    def variance(draws: np.ndarray) -> float:
        return float(np.var(draws[:, top] - draws[:, runner], ddof=1)) if len(draws) > 1 else 0.0

    counts = seed_resample_counts(np.random.default_rng(config.seed), len(axis_scores.seeds), config.n_boot)
    seed_draws, _ = crs_from_counts(axis_scores, counts, reference_index(encoders, reference), config, OVERALL)
    case_seed, seeds = variance(fitted.draws), variance(seed_draws)
    parts = {"test cases": max(case_seed - seeds, 0.0), "seeds": seeds,
             "training samples": max(variance(overall.draws) - case_seed, 0.0) if boot.training_samples else None}
    total = sum(v for v in parts.values() if v is not None)
    known = {s: v for s, v in parts.items() if v is not None}
    doubled = {s: math.sqrt(max(total - v / 2, 0.0)) for s, v in known.items()}
    return {
        "top": encoders[top], "runner_up": encoders[runner], "gap": float(point[top] - point[runner]),
        "se": math.sqrt(total), "variance": parts,
        "share": {s: (v / total if total > 0 else 0.0) if v is not None else None for s, v in parts.items()},
        "se_doubled": doubled, "best": min(doubled, key=doubled.get) if total > 0 else None,
    }


def gap_sentence(gap: dict) -> str:
    """The decomposition in one sentence, every number from the dict it prints."""
    if not gap:
        return ""
    share = gap["share"]
    parts = ", ".join(f"{share[s]:.0%} from {s}" for s in SOURCES if share.get(s) is not None)
    doubled = "; ".join(f"{DOUBLING[s]} would take its s.e. to {v:.2f}" for s, v in gap["se_doubled"].items())
    missing = "" if share.get("training samples") is not None else (
        " Training samples are not in these intervals (no refits stored), so their part is unknown.")
    best = f" {DOUBLING[gap['best']].capitalize()} would narrow the tier most." if gap.get("best") else ""
    return (f"The leading gap ({gap['top']} over {gap['runner_up']}, {gap['gap']:.2f} CRS points, s.e. {gap['se']:.2f}) "
            f"takes {parts} of its variance; {doubled}.{best}{missing}")
