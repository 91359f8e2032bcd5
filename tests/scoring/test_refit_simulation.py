"""The refit acceptance's bookkeeping (scoring/refit_simulation.py): runs are independent of how they are
spread over processes, and the reliability table of the stated pairwise probabilities bins what it says."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.scoring.refit_simulation import Runs, reliability, simulate_runs, small_split


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
