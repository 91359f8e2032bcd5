"""How to put training-sample variability into the intervals: candidate designs compared on the same
simulated runs (docs/bootstrap.md, "Training samples").

Each repetition realises every encoder's probe on a fresh training sample (`realise_refits`), draws a test
set and the seeds' subsets, and K refit records on resamples of that training sample (`simulate(...,
refits=K)`). The case-and-seed bootstrap's CRS draws are then combined with the refits' CRS deviations in
several ways (the CRS is affine in the axes, so a deviation of the axes is one of the CRS):

- none: today's intervals (these fitted probes);
- like seeds: the refits resampled with replacement and averaged, as seeds are (variance / K);
- one refit: one refit's deviation per draw, the same for every encoder (full variance, K values);
- normal: a normal deviation with the refits' sample covariance (full variance);
- t (chosen): the same with the chi-square of its K - 1 degrees of freedom (multivariate t).

The target is each encoder's CRS expected over training samples (`population_crs(..., over_refits=True)`).
Printed per design: coverage, the tier holding the refit-expected best, the mean tier size, a fresh run's
point top inside the tier, each with its Monte Carlo s.e.

    python benchmarks/refit_designs.py [--smoke] [--repetitions 150] [--refits 4 8]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from crsbench.crs.definition import CRSConfig, crs_batch
from crsbench.results.record_set import Records
from crsbench.scoring.axes import AXES, compute_axes
from crsbench.scoring.bootstrap_summary import leading_tier
from crsbench.scoring.case_bootstrap import case_bootstrap, training_spread
from crsbench.simulation.cohort import Design, EncoderTruth, population_crs, realise_refits, simulate

CONFIG = CRSConfig(n_boot=200, n_weight_draws=0)
HEADER = "design "
SMOKE_REPETITIONS = 4  # seconds: a check that it runs, its rates only a few runs deep
REFERENCE = "a"
DESIGNS = {
    # a small training split: the refit spread rivals the test-set noise (the demo, PH2)
    "small training split (300 cases)": Design(
        (EncoderTruth("a", 1.5, refit_sd=0.12), EncoderTruth("b", 1.35, slope=1.3, refit_sd=0.12),
         EncoderTruth("c", 1.05, refit_sd=0.10)), n_cases=300, fractions=(0.1, 1.0)),
    # a larger one: the refit spread is a small part (the MedMNIST cohorts)
    "large training split (600 cases)": Design(
        (EncoderTruth("a", 1.5, refit_sd=0.03), EncoderTruth("b", 1.45, slope=1.2, refit_sd=0.03),
         EncoderTruth("c", 1.2, refit_sd=0.03)), n_cases=600, fractions=(0.1, 1.0)),
}
VARIANTS = ("none", "like seeds", "one refit", "normal", "t")


def refit_crs(spread, config: CRSConfig, ref: int) -> np.ndarray:
    """(K, E) CRS deviations of the refits from their mean (one task)."""
    (deviations,) = spread.deviations.values()
    return crs_batch(deviations, ref, config, list(AXES)).crs - crs_batch(np.zeros_like(deviations[:1]), ref, config, list(AXES)).crs


def variant_terms(name: str, dev: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    k = len(dev)
    if name == "none":
        return np.zeros((n, dev.shape[1]))
    if name == "like seeds":
        return rng.multinomial(k, np.full(k, 1 / k), n) @ dev / k
    if name == "one refit":
        return dev[rng.integers(0, k, n)] * np.sqrt(k / (k - 1))
    g = rng.standard_normal((n, k))
    if name == "t":
        g /= np.sqrt(rng.chisquare(k - 1, n))[:, None]
    else:
        g /= np.sqrt(k - 1)
    return g @ dev


def run(design: Design, repetitions: int, refits: int, seed: int = 2026) -> dict:
    names = [t.name for t in design.encoders]
    ref = names.index(REFERENCE)
    others = [i for i in range(len(names)) if i != ref]
    expected = population_crs(design, REFERENCE, CONFIG, over_refits=True)[names].to_numpy()
    best = int(np.argmax(expected))
    rng = np.random.default_rng(seed)
    spread_sd = {t.name: t.refit_sd for t in design.encoders}
    out = {v: {"covered": [], "holds": [], "size": [], "tier": []} for v in VARIANTS}
    tops, points = [], []
    axis_scores = None
    for r in range(repetitions):
        realised = realise_refits(design, rng)
        records, stored = simulate(realised, rng, refits=refits, refit_sd=spread_sd)
        axis_scores = axis_scores or compute_axes(records, delta=CONFIG.delta)
        held = Records.of(records)
        boot = case_bootstrap(Records(held.frame), stored, axis_scores, REFERENCE, CONFIG.model_copy(update={"seed": r}))
        dev = refit_crs(training_spread(held, axis_scores), CONFIG, ref)
        draws = boot.overall.draws
        point = boot.overall.intervals.loc[names, "crs"].to_numpy()
        tops.append(int(np.argmax(point)))
        points.append(point)
        term_rng = np.random.default_rng([r, 11])
        for v in VARIANTS:
            d = draws + variant_terms(v, dev, len(draws), term_rng)
            low, high = np.quantile(d, [0.025, 0.975], axis=0)
            out[v]["covered"].append(((low <= expected) & (expected <= high))[others])
            tier = leading_tier(point, d, 0.95)["in_leading_tier"].to_numpy()
            out[v]["holds"].append(bool(tier[best]))
            out[v]["size"].append(int(tier.sum()))
            out[v]["tier"].append(tier)
    table = {}
    for v in VARIANTS:
        covered = np.array(out[v]["covered"])
        fresh = np.mean([out[v]["tier"][i][tops[i + 1]] for i in range(repetitions - 1)])
        table[v] = {
            "coverage": covered.mean(), "coverage_se": np.sqrt(0.95 * 0.05 / covered.size),
            "holds": np.mean(out[v]["holds"]), "holds_se": np.sqrt(0.9 * 0.1 / repetitions),
            "size": np.mean(out[v]["size"]), "fresh": fresh, "fresh_se": np.sqrt(0.95 * 0.05 / (repetitions - 1)),
        }
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_REPETITIONS} repetitions, K = 4")
    parser.add_argument("--design", choices=list(DESIGNS), nargs="+", default=list(DESIGNS))
    parser.add_argument("--repetitions", type=int, default=150)
    parser.add_argument("--refits", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args(argv)
    repetitions, ks = (SMOKE_REPETITIONS, [4]) if args.smoke else (args.repetitions, args.refits)
    for name in args.design:
        design = DESIGNS[name]
        for k in ks:
            started = time.perf_counter()
            table = run(design, repetitions, k)
            print(f"\n{name}, K = {k}, {repetitions} repetitions ({time.perf_counter() - started:.0f} s)")
            print(f"{HEADER:12s} {'coverage':>16s} {'tier holds best':>16s} {'size':>5s} {'fresh top in tier':>18s}")
            for v, row in table.items():
                print(f"{v:12s} {row['coverage']:9.3f} ({row['coverage_se']:.3f}) {row['holds']:9.3f} ({row['holds_se']:.3f})"
                      f" {row['size']:5.2f} {row['fresh']:11.3f} ({row['fresh_se']:.3f})")


if __name__ == "__main__":
    main()
