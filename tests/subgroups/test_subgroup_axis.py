"""The optional subgroup axis on scored records: its value is scikit-learn's smallest subgroup AUROC, the rule for
tasks without an assessable subgroup, the score's properties with it on, and the default score unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.crs.definition import SUBGROUP_AXIS, CRSConfig
from crsbench.scoring.score import score_records
from crsbench.scoring.subgroups import MIN_CASES
from crsbench.simulation.cohort import Design, EncoderTruth, simulate

ENCODERS = (EncoderTruth("a", 1.2), EncoderTruth("b", 1.6, 0.8), EncoderTruth("c", 0.9, 1.1, 0.1, 0.1),
            EncoderTruth("chance", 0.0))
DESIGN = Design(ENCODERS, n_cases=300, seeds=(0, 1), tasks=("t1", "t2"), task_classes=(2, 3),
                perturbations=("noise",), severities=(3,))
ON = CRSConfig(n_boot=0, n_weight_draws=0, subgroup_axis=["sex", "site"])


@pytest.fixture(scope="module")
def cohort():
    records, stored = simulate(DESIGN, np.random.default_rng(5))
    rng = np.random.default_rng(1)
    for test_set in list(stored.test_sets["test_set"]):
        cases = stored.case_set(test_set)
        n = len(cases.case_id)
        site = rng.choice(["north", "south"], size=n)
        site[: MIN_CASES - 5] = "rare"  # not assessable: not read by the axis
        table = {"case_id": cases.case_id, "sex": rng.choice(["F", "M"], size=n), "site": site}
        if cases.task == "t2":
            table = {"case_id": cases.case_id, "view": rng.choice(["AP", "PA"], size=n)}  # none of the attributes
        stored.subgroups[test_set] = pd.DataFrame(table)
    return records, stored


def test_the_axis_is_scikit_learns_smallest_assessable_subgroup_auroc_and_a_task_without_one_does_not_count(cohort):
    records, stored = cohort
    report = score_records(records, "a", ON, predictions=stored)
    assert report.axes_used[-1] == SUBGROUP_AXIS and report.axes_partial == {SUBGROUP_AXIS: 1}
    assert any("t2: no assessable subgroup of sex, site" in note for note in report.notes)
    per_task = report.point.axes_by_task.set_index(["encoder", "task"])
    assert per_task.xs("t2", level="task")[SUBGROUP_AXIS].isna().all()
    for encoder in ("a", "b", "c"):
        row = records.query("encoder == @encoder and task == 't1' and condition_kind == 'clean' and fraction == 1.0")
        key = stored.index.set_index("record_key").loc[row["record_key"].iloc[0]]
        y, probs = stored.case_set(key["test_set"]).labels, stored.probabilities(key["probs"]).astype(np.float64)
        probs /= probs.sum(axis=1, keepdims=True)
        attributes = stored.attributes(key["test_set"])
        expected = min(roc_auc_score(y[attributes[a] == g], probs[attributes[a] == g, 1])
                       for a, groups in (("sex", ("F", "M")), ("site", ("north", "south"))) for g in groups)
        assert per_task.loc[(encoder, "t1"), SUBGROUP_AXIS] == pytest.approx(expected, abs=1e-12)
        assert report.point.scores.loc[encoder, SUBGROUP_AXIS] == pytest.approx(expected, abs=1e-12)  # one task counts


@pytest.mark.slow
@pytest.mark.xdist_group("subgroup-axis")
def test_with_the_axis_on_the_order_is_the_same_under_every_reference_and_no_score_moves_with_the_cohort(cohort):
    records, stored = cohort
    by_reference = {ref: score_records(records, ref, ON, predictions=stored).point.scores["crs"]
                    for ref in ("a", "b", "c", "chance")}
    orders = {tuple(s.sort_values(ascending=False, kind="stable").index) for s in by_reference.values()}
    assert len(orders) == 1
    assert by_reference["a"]["chance"] < by_reference["a"].drop("chance").min()  # no reward for no information
    fewer = records[records["encoder"] != "c"]
    without = score_records(fewer, "a", ON, predictions=stored).point.scores["crs"]
    pd.testing.assert_series_equal(without.sort_index(), by_reference["a"].drop("c").sort_index(), check_exact=True)


def test_without_stored_predictions_the_axis_is_missing_with_its_reason(cohort):
    records, _ = cohort
    report = score_records(records, "a", ON)
    assert report.axes_missing[SUBGROUP_AXIS] == "no stored per-case predictions to read subgroups from"
    assert SUBGROUP_AXIS not in report.axes_used


@pytest.fixture(scope="module")
def defaults(cohort):
    records, stored = cohort
    absent = score_records(records, "a", CRSConfig(n_boot=0, n_weight_draws=0), predictions=stored)
    off = score_records(records, "a", CRSConfig(n_boot=0, n_weight_draws=0, subgroup_axis=None), predictions=stored)
    return absent, off


@pytest.mark.parametrize("tables", ["scores", "scores_by_task", "axes", "axes_by_task", "axes_by_seed", "profile"])
def test_the_default_score_has_four_axes_whether_the_key_is_absent_or_off(defaults, tables):
    absent, off = defaults
    pd.testing.assert_frame_equal(absent.tables()[tables], off.tables()[tables], check_exact=True)
    assert SUBGROUP_AXIS not in absent.tables()[tables].columns


@pytest.mark.slow
@pytest.mark.xdist_group("subgroup-axis")
def test_the_axis_has_bootstrap_intervals_from_the_same_draws_and_its_refits_term_where_refits_carry_metrics():
    from _subgroup_refits import DESIGN as REFIT_DESIGN, refit_metrics, with_attributes

    records, stored = simulate(REFIT_DESIGN, np.random.default_rng(3), refits=4)
    stored = with_attributes(stored)
    config = CRSConfig(n_boot=200, n_weight_draws=0, subgroup_axis=["sex"])
    lacking = score_records(records, "a", config, predictions=stored)
    carried = score_records(refit_metrics(records, stored), "a", config, predictions=stored)
    assert any("refits carry no subgroup metrics for the subgroup axis" in n for n in lacking.notes)
    assert not any("refits carry no subgroup metrics for the subgroup axis" in n for n in carried.notes)

    def width(report, axis):
        rows = report.intervals.axis_intervals.query("scope == 'overall' and axis == @axis").set_index("encoder")
        assert ((rows["ci_low"] <= rows["value"]) & (rows["value"] <= rows["ci_high"])).all()
        return (rows["ci_high"] - rows["ci_low"]).mean()

    # the published axes' intervals are the same either way; the subgroup axis's widen by the refits' spread
    assert width(carried, "discrimination") == width(lacking, "discrimination")
    assert width(carried, SUBGROUP_AXIS) > width(lacking, SUBGROUP_AXIS)


@pytest.mark.slow
@pytest.mark.xdist_group("quick-demo")  # with the other readers of the session's quick demo: built once
def test_the_quick_demos_score_tables_are_the_same_with_the_key_absent_and_explicitly_off(quick_demo_results):
    from crsbench import api

    absent = api.score(quick_demo_results, n_boot=50, n_weight_draws=20)
    off = api.score(quick_demo_results, n_boot=50, n_weight_draws=20, subgroup_axis=None)
    on = api.score(quick_demo_results, n_boot=50, n_weight_draws=20, subgroup_axis=["sex"])
    for name, table in absent.tables().items():
        pd.testing.assert_frame_equal(table, off.tables()[name], check_exact=True)
    assert absent.axes_used == ("discrimination", "calibration", "label_efficiency", "robustness")
    assert SUBGROUP_AXIS in on.axes_used or SUBGROUP_AXIS in on.axes_missing  # asked for: used, or missing with why
