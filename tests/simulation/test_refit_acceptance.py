"""The training-sample intervals' acceptance rates, reduced (benchmarks/refit_acceptance.py has the full
table; docs/bootstrap.md, "Training samples"): two cohorts, 30 runs each, every rate against its target
less 3 Monte Carlo s.e. at this number of runs. The fitted probes' intervals ("before") are printed beside."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.scoring.refit_simulation import doubled, published_like, rates, simulate_runs, small_split

from _worker_groups import one_worker_each

pytestmark = pytest.mark.slow

RUNS = 30
REFITS = 4
COHORTS = {
    "small split": (small_split, "a", None),
    "published-like, 1/50 of the test sets": (lambda: published_like(0.02), "e00", 0.8),
}


# one worker runs both tests of a cohort, so that its simulated runs are built once
@pytest.fixture(scope="module", params=one_worker_each("refit-acceptance", COHORTS))
def cohort(request):
    make, reference, loser_target = COHORTS[request.param]
    design = make()
    return request.param, design, reference, loser_target, simulate_runs(design, reference, RUNS, REFITS)


def test_the_intervals_and_the_tier_meet_their_targets_over_training_samples(cohort):
    name, _, _, loser_target, runs = cohort
    before, after = rates(runs, "before"), rates(runs, "after")
    print(f"\n{name} ({RUNS} runs): " + "; ".join(f"{k} {before[k][0]:.3f} -> {after[k][0]:.3f} (s.e. {after[k][1]:.3f})"
                                                for k in after))
    coverage, s = after["coverage"]
    assert 0.92 - 3 * s <= coverage <= 0.98 + 3 * s
    fresh, s = after["fresh top in tier"]
    assert fresh >= 0.95 - 3 * s
    holds, s = after["tier holds best"]
    assert holds >= 0.90 - 3 * s
    if loser_target is not None:  # the 15-encoder cohort is built to hold two clear losers
        assert after["losers"][0] >= 2
        excluded, s = after["excludes losers"]
        assert excluded >= loser_target - 3 * s
        assert after["mean tier size"][0] < len(runs.names)


def test_a_doubled_refit_spread_widens_the_intervals_and_they_still_cover(cohort):
    name, design, reference, _, runs = cohort
    if name != "small split":  # the spread's share is small there: the small split is the telling cohort
        pytest.skip("checked on the small split, where the training sample dominates")
    planted = simulate_runs(doubled(design), reference, RUNS, REFITS, seed=7)
    wide, base = rates(planted, "after"), rates(runs, "after")
    print(f"\ndoubled refit spread: width {base['mean interval width'][0]:.2f} -> {wide['mean interval width'][0]:.2f}; "
          f"coverage {wide['coverage'][0]:.3f} (s.e. {wide['coverage'][1]:.3f})")
    assert wide["mean interval width"][0] > 1.3 * base["mean interval width"][0]
    coverage, s = wide["coverage"]
    assert 0.92 - 3 * s <= coverage <= 0.98 + 3 * s
    assert np.isfinite(coverage)
