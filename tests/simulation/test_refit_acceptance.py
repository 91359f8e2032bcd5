"""The training-sample intervals' acceptance, reduced (benchmarks/refit_acceptance.py has the full table;
docs/bootstrap.md, "Training samples"), and checks that fail in both directions:

- coverage at least 0.92 less 3 s.e. counted by runs (the encoders of a run share its draws), which the
  planted too-narrow estimator (no refit term: these fitted probes' intervals) must fail;
- the mean interval width within 0.8-1.25 of the oracle's (the same construction, the same K, with the true
  training-sample covariance in place of the refits' estimate), which the planted too-wide estimator (the
  refits' deviations doubled) must fail.

Two cohorts: the small split with its refit spread doubled (20 runs), where the training sample is most of
the uncertainty, so that a wrong refit term shows; and the published-like cohort at 1/50 of its test sets
(6 runs), 15 encoders, where it is not. The other rates (fresh top, tier holds the best, losers left out)
are asserted at their targets less 3 Monte Carlo s.e.

Sizes, for the suite's time (the benchmark runs 250 per cohort). At 20 runs of the small split, measured: the
planted narrow estimator covers 0.43 against a floor of 0.70 (its s.e. by runs 0.075), the planted wide one's
width is 2.06 (s.e. 0.25) of the oracle's against the band's 1.25, 3.2 s.e. out; the product's covers 0.85 (s.e.
0.064, floor 0.73) at 1.05 (0.12) of the oracle's width. At 6 runs of the published-like cohort the s.e. are
about 0.025 (coverage) and 0.1-0.12 (the tier's rates): its checks catch an interval or a tier that misses far
more often than its target, not by a few points."""

from __future__ import annotations

import pytest

from crsbench.simulation.training_samples import (COVERAGE_FLOOR, COVERAGE_UPPER, WIDTH_BAND, doubled, published_like,
                                               rates, simulate_runs, small_split, verdict, width_ratio)

from _worker_groups import one_worker_each

pytestmark = pytest.mark.slow

REFITS = 4
# name -> (design, reference, runs, loser target, planted estimators scored)
COHORTS = {
    "small split, refit spread doubled": (lambda: doubled(small_split()), "a", 20, None, True),
    "published-like, 1/50 of the test sets": (lambda: published_like(0.02), "e00", 6, 0.8, False),
}


# one worker runs every test of a cohort, so that its simulated runs are built once
@pytest.fixture(scope="module", params=one_worker_each("refit-acceptance", COHORTS))
def cohort(request):
    make, reference, runs, loser_target, planted = COHORTS[request.param]
    return request.param, loser_target, simulate_runs(make(), reference, runs, REFITS, planted=planted)


def _line(runs, which: str) -> str:
    coverage, s = rates(runs, which)["coverage by runs"]
    ratio, r = width_ratio(runs, which)
    tier = rates(runs, which)["mean tier size"][0]
    return (f"{which}: coverage {coverage:.3f} (s.e. by runs {s:.3f}; floor {COVERAGE_FLOOR - 3 * s:.3f}, upper end "
            f"{COVERAGE_UPPER + 3 * s:.3f}), width / oracle {ratio:.2f} ({r:.2f}), tier {tier:.2f}")


def test_the_intervals_cover_at_the_oracles_width_and_the_tier_meets_its_targets(cohort):
    name, loser_target, runs = cohort
    after = rates(runs, "after")
    print(f"\n{name} ({len(runs.points)} runs): " + "; ".join(_line(runs, w) for w in runs.intervals)
          + f"; oracle tier {after['oracle tier size'][0]:.2f}")
    assert verdict(runs, "after") == {"coverage": True, "width": True}
    fresh, s = after["fresh top in tier"]
    assert fresh >= 0.95 - 3 * s
    holds, s = after["tier holds best"]
    assert holds >= 0.90 - 3 * s
    if loser_target is not None:  # the 15-encoder cohort is built to hold two clear losers
        assert after["losers"][0] >= 2
        excluded, s = after["excludes losers"]
        assert excluded >= loser_target - 3 * s
        assert after["mean tier size"][0] < len(runs.names)


def test_the_planted_too_narrow_and_too_wide_estimators_fail(cohort):
    name, _, runs = cohort
    if "wide" not in runs.intervals:
        pytest.skip("planted on the small split, where the training sample dominates the uncertainty")
    narrow, wide = verdict(runs, "before"), verdict(runs, "wide")
    assert not narrow["coverage"], _line(runs, "before")  # no refit term: under-covers
    assert not wide["width"] and width_ratio(runs, "wide")[0] > WIDTH_BAND[1], _line(runs, "wide")
    assert wide["coverage"]  # too wide still covers: only the width check catches it
