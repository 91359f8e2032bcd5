"""Simulated benchmark runs with refits: the training-sample intervals' arithmetic on cohorts whose
training-sample law is the one-scalar model the refits estimate (benchmarks/refit_acceptance.py;
docs/bootstrap.md), a check of the construction, not of the refits' calibration (that is
benchmarks/pool_calibration.py's, on real images and on generated embeddings). The two-sided checks'
constants and bookkeeping here serve both.

Per cohort, R runs: each realises every probe on a fresh training sample (`realise_refits`), draws a test
set, the seeds' subsets and K paired refits, and scores them with the case-and-seed bootstrap. From the same
runs and draws: "before" reads the fitted probes' summaries (no refit term: what a store without refits
gets, and the planted too-narrow estimator), "after" the training-sample ones, "oracle" the same
construction with the true training-sample covariance in place of the refits' estimate (`oracle_spread`,
the same t for the same K), and "wide" the refits' deviations doubled (the planted too-wide estimator).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from crsbench.crs.definition import CRSConfig
from crsbench.scoring.axes import compute_axes
from crsbench.results.record_set import Records
from crsbench.scoring.axes import AXES, AxisScores
from crsbench.scoring.case_bootstrap import case_bootstrap, training_spread
from crsbench.scoring.refits import RefitSpread
from crsbench.simulation.cohort import (Design, EncoderTruth, population_crs, realise_refits, simulate,
                                         training_sample_covariance)

CONFIG = CRSConfig(n_boot=200, n_weight_draws=0)
LEVEL = 0.95


HAND_CHOSEN_REFIT_SD = 0.04  # the published-like spread before it was derived (simulation/published_spread.py)


def published_like(scale: float = 1.0, refit_sd: float = HAND_CHOSEN_REFIT_SD) -> Design:
    """15 encoders (two clearly behind), 3 binary tasks of about 5,000, 730 and 20,000 test cases, every
    probe's separation spread by `refit_sd` over training samples (`published_spread.matching_refit_sd`
    derives it from the pool design's measurement)."""
    separations = np.linspace(1.55, 1.25, 13).tolist() + [0.6, 0.5]
    encoders = tuple(EncoderTruth(f"e{i:02d}", s, slope=1.0 + 0.05 * (i % 4), hunger=0.25 + 0.02 * (i % 3),
                                  fragility=0.2, refit_sd=refit_sd) for i, s in enumerate(separations))
    sizes = tuple(max(60, int(round(n * scale))) for n in (5_000, 730, 20_000))
    return Design(encoders, n_cases=sizes[0], tasks=("derm", "ophtho", "cxr"), task_cases=sizes,
                  fractions=(0.1, 1.0), severities=(1, 3, 5))


def small_split() -> Design:
    """Three encoders on 300 test cases with a refit spread like the demo's."""
    return Design((EncoderTruth("a", 1.5, refit_sd=0.12), EncoderTruth("b", 1.35, slope=1.3, refit_sd=0.12),
                   EncoderTruth("c", 0.85, refit_sd=0.10)), n_cases=300, fractions=(0.1, 1.0))


def doubled(design: Design) -> Design:
    return replace(design, encoders=tuple(replace(t, refit_sd=2 * t.refit_sd) for t in design.encoders))


ESTIMATORS = ("before", "after", "oracle", "wide")  # module docstring
COVERAGE_FLOOR = 0.92  # coverage at least this less 3 s.e. counted by runs
COVERAGE_UPPER = 0.98  # its upper end, reported beside it (a too-wide interval fails the width check instead)
WIDTH_BAND = (0.8, 1.25)  # the interval's mean width over the oracle's


def oracle_spread(covariances: dict[str, np.ndarray], axis_scores: AxisScores, refits: int) -> RefitSpread:
    """The true training-sample spread as a RefitSpread: per task, rows whose sample covariance is each
    encoder's true axis covariance (`training_sample_covariance`, one (A, A) per encoder, the same on every
    task of a design), encoders independent (each probe is fitted on its own), drawn as the t with
    `refits` - 1 degrees of freedom: the width the chosen construction would give, for the same K, had its
    refits estimated the spread without error."""
    deviations, degrees = {}, {}
    names = list(axis_scores.encoders)
    for t, task in enumerate(axis_scores.tasks):
        task_axes = axis_scores.task_values(t)[1]
        keep = [AXES.index(a) for a in task_axes]
        rows = []
        for e, name in enumerate(names):
            values, vectors = np.linalg.eigh(covariances[name][np.ix_(keep, keep)])
            for value, vector in zip(values, vectors.T):
                row = np.zeros((len(names), len(keep)))
                row[e] = np.sqrt(max(value, 0.0)) * vector
                rows.append(row)
        # task_refit_draws divides by sqrt(rows - 1): scaled so the rows' sample covariance is the true one
        deviations[task] = np.stack(rows) * np.sqrt(len(rows) - 1)
        degrees[task] = refits - 1
    return RefitSpread(deviations, {t: refits for t in deviations}, (), degrees)


@dataclass
class Runs:
    names: list[str]
    reference: str
    expected: np.ndarray  # (E,) CRS expected over training samples
    points: np.ndarray  # (R, E)
    intervals: dict[str, tuple[np.ndarray, np.ndarray]]  # before / after -> (low, high), each (R, E)
    tiers: dict[str, list[np.ndarray]]  # before / after -> per run, a bool (E,)
    seconds: float
    pairwise: dict[str, np.ndarray] | None = None  # before / after -> (R, E, E) stated P(CRS row > CRS column)


def _one_run(design: Design, reference: str, refits: int, seed: int, r: int,
             covariances: dict[str, np.ndarray] | None, planted: bool) -> dict[str, np.ndarray]:
    """Run r of a cohort, from a generator of its own (seed, r): runs are independent of how they are spread.
    The oracle (where `covariances` are given) and the doubled estimator (where `planted`) are scored on
    the same records and draws as the run's own."""
    names = [t.name for t in design.encoders]
    rng = np.random.default_rng([seed, r])
    spread = {t.name: t.refit_sd for t in design.encoders}
    records, stored = simulate(realise_refits(design, rng), rng, refits=refits, refit_sd=spread)
    axis_scores = compute_axes(records, delta=CONFIG.delta)
    config = CONFIG.model_copy(update={"seed": r})
    boot = case_bootstrap(records, stored, axis_scores, reference, config)
    results = {"before": boot.fitted_probes["overall"], "after": boot.overall}
    if covariances is not None:
        results["oracle"] = case_bootstrap(records, stored, axis_scores, reference, config,
                                           spread=oracle_spread(covariances, axis_scores, refits)).overall
    if planted:
        doubled_term = training_spread(Records.of(records), axis_scores).scaled(2.0)
        results["wide"] = case_bootstrap(records, stored, axis_scores, reference, config, spread=doubled_term).overall
    out = {"point": boot.overall.intervals.loc[names, "crs"].to_numpy()}
    for which, result in results.items():
        out[f"{which} low"] = result.intervals.loc[names, "ci_low"].to_numpy()
        out[f"{which} high"] = result.intervals.loc[names, "ci_high"].to_numpy()
        out[f"{which} tier"] = result.tier.loc[names, "in_leading_tier"].to_numpy().astype(bool)
        out[f"{which} pairwise"] = result.pairwise.loc[names, names].to_numpy(dtype=float)
    return out


def _one_core_each(cores) -> None:
    # each worker process takes a core of its own, so the bootstrap's threads do not oversubscribe the machine
    try:
        os.sched_setaffinity(0, {cores.get()})
    except (AttributeError, OSError):
        pass


def simulate_runs(design: Design, reference: str, repetitions: int, refits: int, seed: int = 2026,
                  workers: int = 1, oracle: bool = True, planted: bool = False) -> Runs:
    """R independent runs of a cohort; `workers` > 1 spreads them over processes with identical results.
    oracle: also the oracle's intervals; planted: also the doubled refit term's (module docstring)."""
    started = time.perf_counter()
    names = [t.name for t in design.encoders]
    expected = population_crs(design, reference, CONFIG, over_refits=True)[names].to_numpy()
    covariances = {t.name: training_sample_covariance(t, design) for t in design.encoders} if oracle else None
    args = [(design, reference, refits, seed, r, covariances, planted) for r in range(repetitions)]
    if workers > 1:
        cores = multiprocessing.get_context("fork").Queue()
        available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(workers))
        for i in range(workers):
            cores.put(available[i % len(available)])
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_one_core_each, initargs=(cores,)) as pool:
            runs = list(pool.map(_one_run, *zip(*args)))
    else:
        runs = [_one_run(*a) for a in args]
    stack = {key: np.array([run[key] for run in runs]) for key in runs[0]}
    drawn = [w for w in ESTIMATORS if f"{w} low" in stack]
    return Runs(names, reference, expected, stack["point"],
                {w: (stack[f"{w} low"], stack[f"{w} high"]) for w in drawn},
                {w: list(stack[f"{w} tier"]) for w in drawn},
                time.perf_counter() - started,
                {w: stack[f"{w} pairwise"] for w in drawn})


def reliability(runs: Runs, which: str, edges: tuple[float, ...] = (0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)) -> pd.DataFrame:
    """How often the stated P(CRS e > CRS f) comes true: per bin of the stated probability, the pairs, their
    mean stated probability, and the share whose expected CRS (over training samples) does order them so.
    Pairs whose expected CRS tie are left out; a stated 1.0 falls in the top bin."""
    assert runs.pairwise is not None
    stated = runs.pairwise[which]
    truth = runs.expected[:, None] > runs.expected[None, :]
    tied = np.isclose(runs.expected[:, None], runs.expected[None, :]) | np.eye(len(runs.names), dtype=bool)
    keep = np.broadcast_to(~tied, stated.shape) & np.isfinite(stated)
    p, hit = stated[keep], np.broadcast_to(truth, stated.shape)[keep]
    bins = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, len(edges) - 2)
    rows = []
    for b in range(len(edges) - 1):
        inside = bins == b
        n = int(inside.sum())
        rows.append({"stated": f"{edges[b]:.1f}-{edges[b + 1]:.1f}", "pairs": n,
                     "mean stated": float(p[inside].mean()) if n else np.nan,
                     "came true": float(hit[inside].mean()) if n else np.nan})
    return pd.DataFrame(rows)


def se(p: float, n: int) -> float:
    return float(np.sqrt(max(p * (1 - p), 1e-4) / max(n, 1)))


def by_runs(per_run: np.ndarray, target: float) -> tuple[float, float]:
    """The mean of per-run rates and its s.e. counted by runs (the encoders of a run share its test set and
    draws, so they are not independent); at the target's binomial s.e. over runs where every run agrees."""
    spread = per_run.std(ddof=1) / np.sqrt(len(per_run)) if len(per_run) > 1 else 0.0
    return float(per_run.mean()), float(spread if spread > 0 else se(target, len(per_run)))


def width_ratio(runs: Runs, which: str) -> tuple[float, float]:
    """The mean interval width of `which` over the oracle's (same runs, encoders other than the reference),
    and its s.e. counted by runs (the delta method for a ratio of means)."""
    others = [i for i, e in enumerate(runs.names) if e != runs.reference]
    width = [(high - low)[:, others].mean(axis=1) for low, high in (runs.intervals[which], runs.intervals["oracle"])]
    ratio = width[0].mean() / width[1].mean()
    return float(ratio), float((width[0] - ratio * width[1]).std(ddof=1) / np.sqrt(len(width[0])) / width[1].mean())


def verdict(runs: Runs, which: str) -> dict[str, bool]:
    """The two-sided acceptance: coverage at least COVERAGE_FLOOR less 3 s.e. counted by runs (fails a
    too-narrow estimator), and the mean width within WIDTH_BAND of the oracle's (fails a too-wide one)."""
    coverage, s = rates(runs, which)["coverage by runs"]
    ratio = width_ratio(runs, which)[0]
    return {"coverage": coverage >= COVERAGE_FLOOR - 3 * s, "width": WIDTH_BAND[0] <= ratio <= WIDTH_BAND[1]}


def _mean_with_se(values) -> tuple[float, float]:
    """The mean over runs and its s.e. counted by runs (0 for one run)."""
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def rates(runs: Runs, which: str) -> dict[str, tuple[float, float]]:
    """(rate, Monte Carlo s.e.) per acceptance item; s.e. at the target where the rate sits at a bound."""
    others = [i for i, e in enumerate(runs.names) if e != runs.reference]
    low, high = runs.intervals[which]
    target = runs.expected[None, :]
    covered = ((low <= target) & (target <= high))[:, others]
    best = int(np.argmax(runs.expected))
    tiers = runs.tiers[which]
    r = len(tiers)
    tops = runs.points.argmax(axis=1)
    fresh = np.array([tiers[i][tops[i + 1]] for i in range(r - 1)])
    holds = np.array([t[best] for t in tiers])
    sd = (runs.points[:, [best]] - runs.points).std(axis=0, ddof=1)
    losers = [i for i in range(len(runs.names)) if i != best and runs.expected[best] - runs.expected[i] > 4 * sd[i]]
    excluded = np.array([[not t[i] for i in losers] for t in tiers]).ravel() if losers else np.array([])
    width = (high - low)[:, others].mean()
    out = {
        "coverage": (covered.mean(), se(LEVEL, covered.size)),
        "coverage by runs": by_runs(covered.mean(axis=1), LEVEL),
        "fresh top in tier": (fresh.mean(), se(0.95, len(fresh))),
        "tier holds best": (holds.mean(), se(0.90, r)),
        "excludes losers": (excluded.mean() if len(excluded) else np.nan, se(0.9, len(excluded))),
        "losers": (float(len(losers)), 0.0),
        "mean tier size": _mean_with_se([t.sum() for t in tiers]),
        "mean interval width": (float(width), 0.0),
    }
    if "oracle" in runs.intervals:
        out["width / oracle width"] = width_ratio(runs, which)
        out["oracle tier size"] = _mean_with_se([t.sum() for t in runs.tiers["oracle"]])
    return out
