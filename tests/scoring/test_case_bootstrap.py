"""The paired case-and-seed bootstrap: its point is the records' axes, its tier is simultaneous,
it is the default when predictions exist, and the seed-only option stays labelled."""

import numpy as np
import pandas as pd
import pytest

from crsbench.scoring.axes import AXES, CALIBRATION_NOTE, compute_axes
from crsbench.scoring.bootstrap_summary import leading_tier
from crsbench.scoring.case_bootstrap import CASE_LABEL, case_bootstrap
from crsbench.crs.definition import CRSConfig
from crsbench.scoring.score import score_records
from crsbench.simulation.cohort import Design, EncoderTruth, simulate
from crsbench.scoring.statistics import SEED_ONLY_LABEL

ENCODERS = (EncoderTruth("a", 1.2), EncoderTruth("b", 1.6, 0.8), EncoderTruth("c", 0.9, 1.1, 0.1, 0.1))
DESIGN = Design(ENCODERS, n_cases=200, seeds=(0, 1, 2), tasks=("t1", "t2"), task_classes=(2, 3),
                multi_label_tasks=(), perturbations=("noise",), severities=(1, 5))


@pytest.fixture(scope="module")
def cohort():
    records, stored = simulate(DESIGN, np.random.default_rng(0))
    return records, stored, compute_axes(records)


def test_draw_zero_is_the_point_estimate_of_the_records(cohort):
    records, stored, axis_scores = cohort
    boot = case_bootstrap(records, stored, axis_scores, "a", CRSConfig(n_boot=50))
    overall = boot.axis_intervals[boot.axis_intervals["scope"] == "overall"].pivot(index="encoder", columns="axis", values="value")
    expected = axis_scores.table[list(axis_scores.axes)]
    pd.testing.assert_frame_equal(overall[expected.columns].loc[expected.index], expected, check_names=False, atol=1e-6)
    assert boot.overall.draws.shape == (50, 3)
    assert np.all(boot.overall.draws[:, 0] == 0)  # the reference
    assert np.isnan(boot.overall.intervals.loc["a", "ci_low"])


def test_the_calibration_axis_is_one_estimator_with_or_without_predictions(cohort):
    """The Brier skill reads the records' Brier alone: stored predictions change no axis value (they
    add the debiased calibration error beside it), and every draw at unit weights gives it back."""
    records, stored, plain = cohort
    axis_scores = compute_axes(records, predictions=stored)
    pd.testing.assert_frame_equal(axis_scores.table[list(AXES)], plain.table[list(AXES)])
    assert CALIBRATION_NOTE in axis_scores.notes and CALIBRATION_NOTE in plain.notes
    assert axis_scores.per_task["calibration_error"].notna().all() and plain.per_task["calibration_error"].isna().all()
    boot = case_bootstrap(records, stored, axis_scores, "a", CRSConfig(n_boot=20))
    overall = boot.axis_intervals.query("scope == 'overall' and axis == 'calibration'").set_index("encoder")["value"]
    pd.testing.assert_series_equal(overall.loc[list(axis_scores.encoders)], axis_scores.table["calibration"],
                                   check_names=False, atol=1e-9)


def test_scoring_names_the_calibration_axis(cohort):
    records, stored, _ = cohort
    config = CRSConfig(n_boot=0, n_weight_draws=0)
    for report in (score_records(records, "a", config, predictions=stored), score_records(records, "a", config)):
        assert report.settings["calibration_axis"] == "brier_skill"
        assert CALIBRATION_NOTE in report.notes


def test_draws_are_reproducible_and_move_with_the_cases(cohort):
    records, stored, axis_scores = cohort
    one = case_bootstrap(records, stored, axis_scores, "a", CRSConfig(n_boot=40, seed=3))
    two = case_bootstrap(records, stored, axis_scores, "a", CRSConfig(n_boot=40, seed=3))
    np.testing.assert_array_equal(one.overall.draws, two.overall.draws)
    # at 100% labels every seed fits on the same rows: a seed-only bootstrap has no spread there,
    # the case bootstrap does
    discrimination = one.axis_intervals.query("scope == 'overall' and axis == 'discrimination'")
    assert (discrimination["ci_high"] - discrimination["ci_low"] > 0.01).all()


def test_scoring_defaults_to_the_case_bootstrap_and_labels_the_seed_only_option(cohort):
    records, stored, _ = cohort
    config = CRSConfig(n_boot=30, n_weight_draws=0)
    cases = score_records(records, "a", config, predictions=stored)
    assert cases.intervals.label == CASE_LABEL and not cases.intervals.axis_intervals.empty
    assert cases.agreement.table["interval"].iloc[0] == CASE_LABEL
    seeds = score_records(records, "a", config.model_copy(update={"resample": "seeds"}), predictions=stored)
    assert seeds.intervals.label == SEED_ONLY_LABEL
    assert any(SEED_ONLY_LABEL in note for note in seeds.notes)
    fallback = score_records(records, "a", config)  # no predictions given
    assert fallback.intervals.label == SEED_ONLY_LABEL
    assert any("no per-case predictions" in note for note in fallback.notes)


def test_a_record_without_predictions_is_a_clear_error(cohort):
    records, stored, axis_scores = cohort
    from crsbench.errors import DataError
    from crsbench.results.predictions import Predictions

    partial = Predictions.in_memory(stored.index.iloc[1:], stored._case_cache, stored._memory)
    with pytest.raises(DataError, match="has no stored predictions"):
        case_bootstrap(records, partial, axis_scores, "a", CRSConfig(n_boot=5))


def test_leading_tier_is_simultaneous_over_the_differences_to_the_top():
    rng = np.random.default_rng(0)
    n = 20000
    rival = 1.0 - 1.85 * np.sqrt(0.02)  # 1.85 standard errors of the difference below the top
    point = np.array([1.0, rival, rival, rival])
    draws = point + rng.normal(0, 0.1, (n, 4))
    tier = leading_tier(point, draws, 0.95)
    separate_lower_bound = tier["diff"] - 1.645 * tier["se"]  # one 95% one-sided test per rival
    assert (separate_lower_bound.iloc[1:] > 0).all()  # separate tests would drop every rival
    assert tier["in_leading_tier"].all()  # the max statistic over three differences keeps them
    far = leading_tier(np.array([1.0, 0.3]), np.array([1.0, 0.3]) + rng.normal(0, 0.05, (n, 2)), 0.95)
    assert far["in_leading_tier"].tolist() == [True, False]
