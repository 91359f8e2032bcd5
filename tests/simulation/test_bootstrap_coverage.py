"""Does the seed-only paired bootstrap's 95% interval cover the true CRS about 95% of the time?

Only when seeds are the sole noise: this bootstrap ignores test-set uncertainty (stats.SEED_ONLY_LABEL). And does
its leading tier, the simultaneous one both bootstraps share, hold the true best on a near tie?

Synthetic cohorts with known true per-task axis means; per-seed values are the truth plus a seed
effect shared by every encoder (the seed picks the same label subset for all of them, which is why
the bootstrap is paired) plus an encoder-specific effect. The truth is the CRS computed from the
true axis means on the fixed scale: the quantity the plug-in estimate targets. The reference encoder is left out of the coverage count: its CRS is its
dominance share alone, which rarely moves, so it would inflate coverage.

Measured (400 repetitions x 1,000 draws each, 6 encoders, 2 tasks, 4 axes; docs/crs.md), with the
Monte Carlo standard error of each figure (from the spread of the per-repetition coverage, so the
correlation between encoders of one cohort is counted) 0.006-0.007 (0.011 for the percentile interval):
    all axes noisy:           5 seeds: percentile 0.83, expanded 0.92; 10 seeds: expanded 0.95
    label efficiency noisy:   5 seeds: expanded 0.94 (the protocol's case: at fraction 1.0 every
                              seed trains on the same data)
The claim under test is the documented one: with the protocol's 5 seeds the expanded 95%
interval covers between 0.90 and 0.99 (approximate, somewhat narrow), and the plain percentile interval
covers clearly less: below 0.90 and below the expanded interval, each by more than 3 standard errors.
Each band test asserts its own standard error is below 0.01; the nearest band edge is then 2.4 (5 seeds,
all axes noisy) to 6 standard errors from the measured value, so the band is not a pin on it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
import pytest

from crsbench.scoring.axes import AxisScores
from crsbench.crs.definition import CRSConfig, crs_batch
from crsbench.scoring.statistics import paired_seed_bootstrap

AXES = ("discrimination", "calibration", "label_efficiency", "robustness")
N_ENCODERS, N_TASKS = 6, 2
SHARED_SD, OWN_SD = 0.01, 0.01
REPETITIONS, DRAWS = 400, 1000
MAX_MC_SE = 0.01  # the standard error a coverage figure may have for its band to mean something


def true_means(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.8, 0.03, size=(N_ENCODERS, N_TASKS, len(AXES)))


def true_crs(means: np.ndarray, n_seeds: int, noisy: np.ndarray) -> np.ndarray:
    return crs_batch(means.mean(axis=1), 0, CRSConfig(), AXES).crs


def sampled_axes(means: np.ndarray, n_seeds: int, noisy: np.ndarray, rng: np.random.Generator) -> AxisScores:
    shared = rng.normal(0, SHARED_SD, size=(1, N_TASKS, n_seeds, len(AXES)))
    own = rng.normal(0, OWN_SD, size=(N_ENCODERS, N_TASKS, n_seeds, len(AXES)))
    cube = means[:, :, None, :] + noisy * (shared + own)
    empty = pd.DataFrame()
    return AxisScores(
        per_seed=empty,
        per_task=empty,
        table=empty,
        cube=cube,
        task_mask=np.ones((N_TASKS, len(AXES))),
        encoders=tuple(f"enc{i}" for i in range(N_ENCODERS)),
        tasks=tuple(f"task{t}" for t in range(N_TASKS)),
        seeds=tuple(range(n_seeds)),
        axes=AXES,
    )


@lru_cache(maxsize=None)
def coverage(n_seeds: int, interval: str, noisy_axes: tuple[int, ...]) -> tuple[float, float]:
    """(coverage over repetitions and non-reference encoders, its Monte Carlo standard error)."""
    noisy = np.isin(np.arange(len(AXES)), noisy_axes).astype(float)
    means = true_means()
    truth = true_crs(means, n_seeds, noisy)
    rng = np.random.default_rng(1000 + n_seeds)
    hits = []
    for repetition in range(REPETITIONS):
        axes = sampled_axes(means, n_seeds, noisy, rng)
        result = paired_seed_bootstrap(axes, "enc0", CRSConfig(n_boot=DRAWS, seed=repetition, interval=interval))
        intervals = result.overall.intervals
        low, high = intervals["ci_low"].to_numpy(), intervals["ci_high"].to_numpy()
        # 1e-9: an encoder whose CRS is the same in every draw has a zero-width interval that must
        # still count as covering a truth equal to it up to rounding
        hits.append((low - 1e-9 <= truth) & (truth <= high + 1e-9))
    per_repetition = np.array(hits)[:, 1:].mean(axis=1)  # without the reference
    return float(per_repetition.mean()), float(per_repetition.std(ddof=1) / np.sqrt(REPETITIONS))


ALL_AXES = (0, 1, 2, 3)
LABEL_EFFICIENCY_ONLY = (2,)


@pytest.mark.slow
@pytest.mark.parametrize(
    "n_seeds, interval, noisy_axes",
    [
        (5, "expanded", ALL_AXES),
        (5, "expanded", LABEL_EFFICIENCY_ONLY),
        (10, "expanded", ALL_AXES),
    ],
)
def test_interval_covers_the_true_crs_about_95_percent(n_seeds, interval, noisy_axes):
    measured, se = coverage(n_seeds, interval, noisy_axes)
    print(f"coverage n_seeds={n_seeds} {interval} noisy={noisy_axes}: {measured:.3f} (MC s.e. {se:.4f})")
    assert se < MAX_MC_SE
    assert 0.90 <= measured <= 0.99


@pytest.mark.slow
def test_plain_percentile_from_five_seeds_undercovers_which_is_why_the_seed_only_path_recommends_expanded():
    (percentile, se_p), (expanded, se_e) = coverage(5, "percentile", ALL_AXES), coverage(5, "expanded", ALL_AXES)
    print(f"coverage with 5 seeds: percentile {percentile:.3f} (s.e. {se_p:.4f}), expanded {expanded:.3f} (s.e. {se_e:.4f})")
    # below 0.90 by more than three of its standard errors, and below the expanded interval by more
    # than three standard errors of the difference: a difference, not noise
    assert percentile + 3 * se_p < 0.90
    assert expanded - percentile > 3 * np.hypot(se_p, se_e)


# The seed-only tier is the case bootstrap's simultaneous one (scoring.bootstrap_summary.leading_tier). A near
# tie: encoder 4's true axis means TIER_GAP below encoder 5's on every axis, 0.35 CRS points behind the best.
# Measured (200 repetitions x 1,000 draws, 5 seeds, all axes noisy): the tier held the true best in 200 of 200
# (one-sided 95% upper bound on the miss rate 0.015) with mean size 1.74 of 6.
TIER_GAP, TIER_REPETITIONS = 0.002, 200


@lru_cache(maxsize=None)
def seed_only_tier() -> tuple[float, float]:
    """(share of repetitions whose tier holds the true best, mean tier size)."""
    noisy = np.ones(len(AXES))
    means = true_means()
    means[4] = means[5] - TIER_GAP
    truth = true_crs(means, 5, noisy)
    best = f"enc{int(np.argmax(truth))}"
    rng = np.random.default_rng(1005)
    held, sizes = [], []
    for repetition in range(TIER_REPETITIONS):
        result = paired_seed_bootstrap(sampled_axes(means, 5, noisy, rng), "enc0",
                                       CRSConfig(n_boot=DRAWS, seed=repetition, n_weight_draws=0))
        held.append(best in result.overall.leading_tier)
        sizes.append(len(result.overall.leading_tier))
    return float(np.mean(held)), float(np.mean(sizes))


@pytest.mark.slow
def test_the_seed_only_tier_holds_the_true_best_and_still_separates():
    held, size = seed_only_tier()
    print(f"seed-only tier: holds the true best {held:.3f}, mean size {size:.2f} of {N_ENCODERS}")
    # a tier that drops the true best more than a 95% set may fails: 3 binomial standard errors below 0.95
    assert held >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / TIER_REPETITIONS)
    # and one that keeps everyone (the cheap way to hold the best) fails too: the near tie keeps about 2
    assert size < 3
