"""Paired case-and-seed bootstrap speed on a cohort of the demo's shape, against a plain loop.

The cohort (crsbench.simulation.cohort): 5 encoders x 3 tasks (3-class dermoscopy, 5-class fundus, 3-label
chest X-ray), 300 test cases per task in clusters of two, 5 seeds x 6 label fractions, 4
perturbations x 3 severities; every record keeps its per-case predictions.
  - vectorised: bootstrap.case_bootstrap with 2,000 draws (weighted metrics vectorised over draws,
    axes, CRS per task and across tasks, ranks, intervals, tier);
  - baseline: the same chain as a straightforward loop over draws (each draw repeats the drawn
    cases and calls metrics/classification.py per record, then axis_math and crs_batch), timed on a few draws and
    extrapolated per draw. The baseline uses the same random draws and must agree on them.
Run: python benchmarks/case_bootstrap_speed.py [--draws 2000] [--loop-draws 10] [--smoke]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from crsbench.crs import axis_math

from crsbench.metrics import classification as metrics
from crsbench.scoring.axes import compute_axes
from crsbench.scoring.case_bootstrap import case_bootstrap
from crsbench.scoring.task_draws import plan_tasks
from crsbench.crs.definition import CRSConfig, crs_batch
from crsbench.simulation.cohort import Design, EncoderTruth, simulate

ENCODERS = tuple(
    EncoderTruth(f"encoder_{i}", separation, slope, hunger, fragility)
    for i, (separation, slope, hunger, fragility) in enumerate(
        [(1.2, 1.0, 0.25, 0.15), (1.35, 0.8, 0.35, 0.25), (1.05, 1.15, 0.15, 0.1), (1.45, 0.7, 0.45, 0.35), (0.3, 1.0, 0.1, 0.1)]
    )
)
DEMO_SHAPE = Design(
    ENCODERS, n_cases=300, tasks=("derm", "fundus", "cxr"), task_classes=(3, 5, 3), multi_label_tasks=("cxr",),
    fractions=(0.01, 0.05, 0.10, 0.25, 0.50, 1.0), perturbations=("noise", "blur", "jpeg", "contrast"), severities=(1, 3, 5),
)
HEADER = "cohort:"
SMOKE = dict(draws=20, loop_draws=1, cases=60)


def loop_bootstrap(records, stored, axis_scores, config: CRSConfig, n_loop: int) -> np.ndarray:
    """Cross-task CRS (n_loop, E) for the first draws, one draw at a time with metrics/classification.py."""
    plans = plan_tasks(records, stored, axis_scores)
    rng = np.random.default_rng(config.seed)
    n_seeds, encoders = len(axis_scores.seeds), list(axis_scores.encoders)
    seed_counts = rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), config.n_boot)
    task_types = records.groupby("task")["task_type"].first().to_dict()
    counts = {}
    for plan in plans:
        n_clusters = stored.case_set(plan.test_set).cluster_codes()[1]
        counts[plan.task] = rng.multinomial(n_clusters, np.full(n_clusters, 1 / n_clusters), config.n_boot)
    out = np.empty((n_loop, len(encoders)))
    for b in range(n_loop):
        total = np.zeros((len(encoders), len(axis_scores.axes)))
        for plan in plans:
            cases = stored.case_set(plan.test_set)
            codes, _ = cases.cluster_codes()
            rows = np.repeat(np.arange(len(codes)), counts[plan.task][b][codes])
            labels, task_type = cases.labels[rows], task_types[plan.task]

            def auroc(digest):
                probs = stored.probabilities(digest).astype(np.float64)
                if task_type != "multi_label":
                    probs /= probs.sum(axis=1, keepdims=True)
                return (metrics.auroc_macro(task_type, labels, probs[rows]),
                        metrics.brier(task_type, labels, probs[rows]))

            def prior_brier(prior):
                return metrics.brier(task_type, labels, np.tile(np.asarray(prior, dtype=np.float64), (len(rows), 1)))

            values = np.zeros((len(encoders), len(plan.axes)))
            for e in range(len(encoders)):
                per_seed = []
                for s in range(n_seeds):
                    clean, brier = auroc(plan.full[(e, s)])
                    curve = [auroc(plan.curve[(e, s, f)])[0] for f in range(len(plan.fractions))]
                    pert = [auroc(plan.pert[(e, s, p)])[0] for p in range(len(plan.perturbed))]
                    axis = {"discrimination": clean,
                            "calibration": axis_math.brier_skill(brier, prior_brier(plan.prior[(e, s)])),
                            "label_efficiency": axis_math.label_efficiency(np.array(curve), plan.fractions),
                            "robustness": axis_math.robustness(np.array(pert))}
                    per_seed.append([float(axis[a]) for a in plan.axes])
                values[e] = np.average(np.array(per_seed), axis=0, weights=seed_counts[b])
            for k, a in enumerate(plan.axes):
                total[:, axis_scores.axes.index(a)] += values[:, k]
        overall = total / axis_scores.task_mask.sum(axis=0)
        out[b] = crs_batch(overall, 0, config, axis_scores.axes).crs
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--loop-draws", type=int, default=10)
    parser.add_argument("--cases", type=int, default=DEMO_SHAPE.n_cases, help="test cases per task")
    parser.add_argument("--smoke", action="store_true", help=f"seconds: {SMOKE}")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    design = dataclasses.replace(DEMO_SHAPE, n_cases=args.cases)
    records, stored = simulate(design, np.random.default_rng(0))
    config = CRSConfig(n_boot=args.draws, n_weight_draws=0)
    axis_scores = compute_axes(records, delta=config.delta, predictions=stored)
    print(f"{HEADER} {len(records)} records, {stored.index['probs'].nunique()} distinct prediction vectors, "
          f"{design.n_cases} cases per task")

    started = time.perf_counter()
    result = case_bootstrap(records, stored, axis_scores, axis_scores.encoders[0], config)
    vectorised = time.perf_counter() - started
    print(f"vectorised: {args.draws} draws in {vectorised:.1f} s ({vectorised / args.draws * 1e3:.2f} ms per draw)")

    started = time.perf_counter()
    looped = loop_bootstrap(records, stored, axis_scores, config, args.loop_draws)
    per_draw = (time.perf_counter() - started) / args.loop_draws
    print(f"loop baseline: {per_draw * 1e3:.0f} ms per draw, {per_draw * args.draws:.0f} s for {args.draws} draws "
          f"(extrapolated from {args.loop_draws})")
    np.testing.assert_allclose(looped, result.overall.draws[: args.loop_draws], atol=1e-9)
    print(f"agreement on the baseline's draws: yes; speed-up {per_draw * args.draws / vectorised:.0f}x")


if __name__ == "__main__":
    main()
