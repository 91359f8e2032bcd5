"""The refit acceptance's bookkeeping (simulation/training_samples.py): runs are independent of how they are
spread over processes, the reliability table of the stated pairwise probabilities bins what it says, and the
two-sided checks fail planted too-narrow and too-wide intervals, counting coverage by runs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from crsbench.scoring.axes import compute_axes
from crsbench.simulation.training_samples import (Runs, by_runs, oracle_spread, rates, reliability, simulate_runs,
                                             small_split, verdict, width_ratio)
from crsbench.simulation.cohort import simulate


@pytest.mark.slow  # three small cohorts' runs, one of them in two processes
def test_runs_spread_over_processes_equal_the_runs_in_one():
    design = small_split()
    one = simulate_runs(design, "a", 2, 3, seed=3)
    two = simulate_runs(design, "a", 2, 3, seed=3, workers=2)
    assert np.array_equal(one.points, two.points)
    for which in ("before", "after"):
        assert np.array_equal(one.intervals[which][0], two.intervals[which][0], equal_nan=True)
        assert np.array_equal(one.pairwise[which], two.pairwise[which], equal_nan=True)
        assert all(np.array_equal(a, b) for a, b in zip(one.tiers[which], two.tiers[which]))
    # a different seed gives different runs: the generator is the run's own, not a constant
    assert not np.array_equal(one.points, simulate_runs(design, "a", 2, 3, seed=4).points)


def _runs(expected: list[float], stated: np.ndarray) -> Runs:
    names = [f"e{i}" for i in range(len(expected))]
    return Runs(names, names[0], np.array(expected), np.zeros((len(stated), len(names))), {}, {}, 0.0,
                {"after": stated})


def test_reliability_counts_each_ordered_pair_once_in_its_bin_and_scores_it_against_the_expected_order():
    # e0 truly above e1; e2 ties e1 (left out of every bin with e1)
    stated = np.array([[[np.nan, 0.95, 0.6], [0.05, np.nan, 0.5], [0.4, 0.5, np.nan]],
                       [[np.nan, 0.25, 0.8], [0.75, np.nan, 0.5], [0.2, 0.5, np.nan]]])
    table = reliability(_runs([2.0, 1.0, 1.0], stated), "after").set_index("stated")
    assert table["pairs"].sum() == 8  # 2 runs x the 4 ordered pairs that do not tie
    assert table.loc["0.9-1.0", "pairs"] == 1 and table.loc["0.9-1.0", "came true"] == 1.0
    assert table.loc["0.0-0.1", "pairs"] == 1 and table.loc["0.0-0.1", "came true"] == 0.0
    assert table.loc["0.1-0.3", "pairs"] == 2  # 0.25 (e0 > e1: true) and 0.2 (e2 > e0: false)
    assert table.loc["0.1-0.3", "came true"] == 0.5
    assert np.isclose(table.loc["0.1-0.3", "mean stated"], 0.225)
    assert table.loc["0.5-0.7", "pairs"] == 1  # 0.6: e0 > e2, true
    assert table.loc["0.7-0.9", "pairs"] == 2 and table.loc["0.7-0.9", "came true"] == 0.5
    assert table.loc["0.3-0.5", "pairs"] == 1 and table.loc["0.3-0.5", "came true"] == 0.0


def test_a_stated_one_falls_in_the_top_bin():
    stated = np.array([[[np.nan, 1.0], [0.0, np.nan]]])
    table = reliability(_runs([1.0, 0.0], stated), "after").set_index("stated")
    assert table.loc["0.9-1.0", "pairs"] == 1 and table.loc["0.0-0.1", "pairs"] == 1


def _interval_runs(half_widths: dict[str, float], offset: dict[str, float], runs: int = 40) -> Runs:
    """Runs whose intervals are centred on the expected CRS (moved by `offset`) with these half-widths."""
    names, expected = ["a", "b", "c"], np.array([0.0, 5.0, 10.0])
    centre = np.tile(expected, (runs, 1))
    intervals = {w: (centre + offset.get(w, 0.0) - h, centre + offset.get(w, 0.0) + h) for w, h in half_widths.items()}
    tiers = {w: [np.ones(3, dtype=bool)] * runs for w in half_widths}
    return Runs(names, "a", expected, centre, intervals, tiers, 0.0)


def test_the_two_sided_checks_fail_a_too_narrow_and_a_too_wide_interval_and_pass_the_oracles_width():
    runs = _interval_runs({"oracle": 2.0, "after": 2.2, "before": 0.5, "wide": 4.0}, {"before": 1.0})
    assert verdict(runs, "after") == {"coverage": True, "width": True}
    assert verdict(runs, "before") == {"coverage": False, "width": False}  # misses the target in every run
    assert verdict(runs, "wide") == {"coverage": True, "width": False}  # covers, but twice the oracle's width
    assert width_ratio(runs, "after")[0] == pytest.approx(1.1)
    assert rates(runs, "after")["oracle tier size"][0] == 3.0


def test_coverage_is_counted_by_runs():
    runs = _interval_runs({"oracle": 1.0, "after": 1.0}, {})
    low, high = runs.intervals["after"]
    high[:10] = -1.0  # 10 of 40 runs miss every encoder: one miss per run, not two independent ones
    coverage, s = rates(runs, "after")["coverage by runs"]
    assert coverage == pytest.approx(0.75)
    assert s == pytest.approx(np.std([0.0] * 10 + [1.0] * 30, ddof=1) / np.sqrt(40))
    assert by_runs(np.ones(40), 0.95)[1] == pytest.approx(np.sqrt(0.95 * 0.05 / 40))  # every run agrees: at the target


def test_the_oracle_spread_has_the_true_covariance_per_encoder_and_the_t_of_k_refits():
    design = replace(small_split(), n_cases=60)
    records, _ = simulate(design, np.random.default_rng(0))
    axis_scores = compute_axes(records)
    rng = np.random.default_rng(1)
    covariances = {}
    for name in axis_scores.encoders:
        root = rng.normal(size=(4, 4))
        covariances[name] = root @ root.T
    spread = oracle_spread(covariances, axis_scores, refits=4)
    (task,) = axis_scores.tasks
    d = spread.deviations[task]
    assert spread.df(task) == 3
    drawn = np.einsum("kea,kfb->eafb", d, d) / (len(d) - 1)
    for e, name in enumerate(axis_scores.encoders):
        np.testing.assert_allclose(drawn[e, :, e, :], covariances[name], atol=1e-12)
        for f in range(len(axis_scores.encoders)):
            if f != e:
                assert np.all(drawn[e, :, f, :] == 0)  # each probe fitted on its own: independent
