"""The training-sample intervals' arithmetic checked by simulation (docs/bootstrap.md, "Training samples").

What this is: a fast check of the interval's construction on cohorts whose training-sample law is known
exactly, the one-scalar model (`realise_refits`: a fresh training sample scales an encoder's separation by
1 + refit_sd N(0, 1)) that the simulated refits then estimate, so coverage near 0.95 here partly follows by
construction. It is not the acceptance of the refits as an estimator of training variability: that is
benchmarks/pool_calibration.py, on real images and (`--generated`) on training samples drawn at the
embedding level, reduced in the suite by tests/benchmarks/test_pool_calibration.py and
tests/simulation/test_refit_acceptance.py. The published-like cohort's refit spread is derived from the
pool design's measurement (simulation/published_spread.py; `--refit-sd` overrides it).

Per cohort, R simulated benchmark runs: each realises every probe on a fresh training sample
(`realise_refits`), draws a test set, the seeds' subsets and K paired refits, and scores them with the
case-and-seed bootstrap. "before" reads the fitted probes' summaries (what a store without refits gets),
"after" the training-sample ones, from the same runs and draws. Rates, each with its Monte Carlo s.e.:

- coverage: the 95 % intervals cover each encoder's CRS expected over training samples (target 0.92-0.98);
- fresh top in tier: run r + 1's point top lies in run r's tier (target >= 0.95);
- tier holds best: the tier holds the encoder of highest expected CRS (target >= 0.90);
- excludes losers: an encoder trailing the best by more than 4 sd of its paired difference over runs is out
  of the tier (target >= 0.90 with 3 encoders, 0.80 with 15), beside the mean tier size;
- planted change: the same cohort with every refit spread doubled: the intervals widen and still cover;
- two-sided checks, per estimator: coverage at least 0.92 less 3 s.e. counted by runs (its upper end
  0.98 + 3 s.e. printed beside it), and the mean width within 0.8-1.25 of the oracle's (the same
  construction, the same K, the true training-sample covariance in place of the refits' estimate), for
  "after", the oracle, the planted too-narrow estimator ("before": no refit term) and the planted too-wide
  one ("wide": the refits' deviations doubled); the mean tier size beside the oracle tier's.

Cohorts: the four calibrated to real runs (RetinaMNIST, PneumoniaMNIST, PH2 from the shared data, the
demo's dermoscopy task; `--real`, through tests/simulation/test_real_profile_simulation.py, which embeds
the images first) and a 15-encoder x 3-task cohort at published-like test sizes (`--scale` shrinks them).

    python benchmarks/refit_acceptance.py --smoke
    python benchmarks/refit_acceptance.py --repetitions 250 --real --planted --workers 2
    python benchmarks/refit_acceptance.py --only published --repetitions 30 --workers 2

The stated pairwise probabilities P(CRS e > CRS f) are binned against how often the expected CRS orders the
pair so (reported, not asserted), per cohort and pooled over the cohorts run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from crsbench.simulation import published_spread
from crsbench.simulation.training_samples import (CONFIG, COVERAGE_FLOOR, COVERAGE_UPPER, HAND_CHOSEN_REFIT_SD, WIDTH_BAND,
                                                  Design, Runs, doubled, published_like, rates, reliability,
                                                  simulate_runs, small_split, verdict, width_ratio)

HEADER = "pooled over the "

def table(name: str, runs: Runs, planted: Runs | None) -> str:
    before, after = rates(runs, "before"), rates(runs, "after")
    lines = [f"\n{name}: {len(runs.tiers['after'])} runs, {len(runs.names)} encoders ({runs.seconds:.0f} s)",
             f"{'':22s} {'before':>16s} {'after':>16s}"]
    for key in before:
        b, a = before[key], after[key]
        lines.append(f"{key:22s} {b[0]:9.3f} ({b[1]:.3f}) {a[0]:9.3f} ({a[1]:.3f})")
    if "oracle" in runs.intervals:
        lines.append(f"two-sided checks (coverage >= {COVERAGE_FLOOR} - 3 s.e. by runs, upper end {COVERAGE_UPPER} + 3 "
                     f"s.e. reported; width / oracle in {WIDTH_BAND[0]}-{WIDTH_BAND[1]}):")
    for which in runs.intervals if "oracle" in runs.intervals else ():
        coverage, s = rates(runs, which)["coverage by runs"]
        ratio, r = width_ratio(runs, which)
        checks = verdict(runs, which)
        tier, tier_se = rates(runs, which)["mean tier size"]
        lines.append(f"  {which:7s} coverage {coverage:.3f} ({s:.3f}) [{COVERAGE_FLOOR - 3 * s:.3f}, "
                     f"{COVERAGE_UPPER + 3 * s:.3f}] {'pass' if checks['coverage'] else 'FAIL'}; width / oracle "
                     f"{ratio:.2f} ({r:.2f}) {'pass' if checks['width'] else 'FAIL'}; mean tier {tier:.2f} ({tier_se:.2f})")
    if planted is not None:
        p = rates(planted, "after")
        lines.append(f"refit spread doubled: coverage {p['coverage'][0]:.3f} ({p['coverage'][1]:.3f}), mean width "
                     f"{p['mean interval width'][0]:.2f} against {after['mean interval width'][0]:.2f}")
    lines.append("stated P(CRS e > CRS f) against how often the expected CRS orders the pair so (after):")
    lines.append(reliability(runs, "after").to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return "\n".join(lines)


def pooled_reliability(all_runs: list[Runs], which: str) -> pd.DataFrame:
    tables = [reliability(r, which) for r in all_runs]
    out = tables[0][["stated"]].copy()
    pairs = sum(t["pairs"] for t in tables)
    out["pairs"] = pairs
    for column in ("mean stated", "came true"):
        out[column] = sum(t[column].fillna(0) * t["pairs"] for t in tables) / pairs.where(pairs > 0)
    return out


def published_refit_sd(exponent: float = 0.5) -> float:
    """The published-like cohort's refit spread derived from the pool design's measured CRS spread
    (simulation/published_spread.py) under sd ~ n ** -exponent, printed with its derivation."""
    full = published_like(1.0)  # the training sizes are the full-size cohort's, whatever --scale shrinks
    sizes = published_spread.training_sizes(full)
    target = published_spread.task_target(full, exponent=exponent)
    refit_sd = published_spread.matching_refit_sd(full, "e00", target, CONFIG)
    print(f"published-like refit sd {refit_sd:.4f}: the pool's CRS sd {published_spread.POOL_CRS_SD:.2f} at "
          f"n = {published_spread.POOL_SIZE} times ({published_spread.POOL_SIZE} / n) ** {exponent:g} at training sizes "
          f"{', '.join(map(str, sizes))}, "
          + ", ".join(f"{published_spread.extrapolated_sd(published_spread.POOL_CRS_SD, published_spread.POOL_SIZE, n, exponent):.2f}"
                      for n in sizes)
          + f", RMS {target:.2f} per task (the hand-chosen {HAND_CHOSEN_REFIT_SD} gives "
          f"{published_spread.crs_spread(full, 'e00', HAND_CHOSEN_REFIT_SD, CONFIG):.2f})", flush=True)
    return refit_sd


def real_designs(names: list[str]) -> dict[str, tuple[Design, str]]:
    """The real-calibrated designs (embeds the images once; a cohort whose data is absent is left out)."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "simulation"))
    import test_real_profile_simulation as real

    out = {}
    cache = Path(tempfile.mkdtemp(prefix="real-embeddings-"))
    for name in names:
        try:
            out[name] = (real.real_cohort(name, cache).design, real.REFERENCE)
        except BaseException as exc:  # pytest.skip when the shared data is absent
            if type(exc).__name__ != "Skipped":
                raise
            print(f"{name}: left out ({exc})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2 runs of the small-split cohort (with the oracle, the planted estimators and its doubled spread)")
    parser.add_argument("--repetitions", type=int, default=250)
    parser.add_argument("--refits", type=int, default=4)
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the published-like test sets")
    parser.add_argument("--real", action="store_true", help="also the four real-calibrated cohorts")
    parser.add_argument("--planted", action="store_true", help="also the doubled refit spread")
    parser.add_argument("--only", choices=("real", "small", "published"), default=None, help="one group of cohorts")
    parser.add_argument("--workers", type=int, default=1, help="processes the runs are spread over (same results)")
    parser.add_argument("--refit-sd", type=float, default=None,
                        help="the published-like cohort's refit spread (default: derived from the pool design's "
                             f"measurement; {HAND_CHOSEN_REFIT_SD} is the hand-chosen one it replaced)")
    parser.add_argument("--exponent", type=float, default=0.5,
                        help="b in the rule sd ~ n ** -b that carries the pool's spread to published sizes (0.5: "
                             "1 / sqrt(n); a smaller b, as the pool's two sizes measured for one encoder, extrapolates a larger spread)")
    args = parser.parse_args()
    repetitions, scale = (2, 0.02) if args.smoke else (args.repetitions, args.scale)
    cohorts = {}
    if args.only in (None, "small"):
        cohorts["small split (3 encoders, 300 cases)"] = (small_split(), "a")
    if args.only in (None, "published") and not args.smoke:  # the same code path as the small split's, 15x the cost
        refit_sd = published_refit_sd(args.exponent) if args.refit_sd is None else args.refit_sd
        cohorts[f"published-like (15 encoders x 3 tasks, scale {scale}, refit sd {refit_sd:.4f})"] = (
            published_like(scale, refit_sd), "e00")
    if (args.real or args.only == "real") and not args.smoke:
        cohorts = {**real_designs(["retinamnist", "pneumoniamnist", "ph2", "demo-derm"]), **cohorts}
    all_runs = []
    for position, (name, (design, reference)) in enumerate(cohorts.items()):
        # the smoke scores the oracle and the planted estimators on its first cohort only
        checked = not args.smoke or position == 0
        runs = simulate_runs(design, reference, repetitions, args.refits, workers=args.workers, oracle=checked,
                             planted=checked)
        # the smoke plants the doubled spread on its first cohort only: the same code path at a tenth of the cost
        planted = (simulate_runs(doubled(design), reference, repetitions, args.refits, seed=7, workers=args.workers,
                                 oracle=False)
                   if args.planted or (args.smoke and position == 0) else None)
        all_runs.append(runs)
        print(table(name, runs, planted), flush=True)
    for which in ("before", "after"):
        print(f"\npooled over the {len(all_runs)} cohorts, {which}: stated P(CRS e > CRS f) against how often it came true")
        print(pooled_reliability(all_runs, which).to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
