"""The subgroup stage: every number against scikit-learn, the bootstrap's own draws, the thresholds, the part."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, roc_auc_score

from crsbench.crs.definition import CRSConfig
from crsbench.metrics.weighted import WeightedMetrics
from crsbench.scoring.axes import compute_axes
from crsbench.scoring.case_bootstrap import case_bootstrap
from crsbench.scoring.score import score_records
from crsbench.scoring.subgroups import MIN_CASES, simultaneous
from crsbench.scoring.task_draws import replayed_counts
from crsbench.simulation.cohort import Design, EncoderTruth, simulate
from _subgroup_refits import with_attributes

ENCODERS = (EncoderTruth("a", 1.2), EncoderTruth("b", 1.6, 0.8), EncoderTruth("c", 0.9, 1.1, 0.1, 0.1))
DESIGN = Design(ENCODERS, n_cases=300, seeds=(0, 1, 2), tasks=("t1", "t2"), task_classes=(2, 3),
                perturbations=("noise",), severities=(3,))


def _with_attributes(stored, seed: int = 0):
    """Sex (F/M), a three-way site and a rare subgroup (fewer than MIN_CASES cases) on every test set."""
    return with_attributes(stored, seed, sites=("north", "south", "east"))


@pytest.fixture(scope="module")
def cohort():
    records, stored = simulate(DESIGN, np.random.default_rng(0))
    return records, _with_attributes(stored)


def _clean_full(records, stored, encoder, task):
    row = records.query("encoder == @encoder and task == @task and condition_kind == 'clean' and fraction == 1.0")
    key = stored.index.set_index("record_key").loc[row["record_key"].iloc[0]]
    cases = stored.case_set(key["test_set"])
    probs = stored.probabilities(key["probs"]).astype(np.float64)
    return cases, probs / probs.sum(axis=1, keepdims=True), stored.attributes(key["test_set"])


def _sklearn_auroc(y, probs):
    return roc_auc_score(y, probs[:, 1]) if probs.shape[1] == 2 else roc_auc_score(y, probs, multi_class="ovr")


def _brier_skill(y, probs, prior):
    if probs.shape[1] == 2:
        return 1 - brier_score_loss(y, probs[:, 1]) / brier_score_loss(y, np.full(len(y), prior[1]))
    onehot = np.eye(probs.shape[1])[y]
    return 1 - ((probs - onehot) ** 2).sum(1).mean() / ((prior - onehot) ** 2).sum(1).mean()


@pytest.mark.parametrize("task", ["t1", "t2"])
def test_each_subgroup_number_is_scikit_learns_on_its_cases(cohort, task):
    records, stored = cohort
    report = score_records(records, "a", CRSConfig(n_boot=0, n_weight_draws=0), predictions=stored)
    table = report.subgroups.table.query("task == @task and assessable")
    assert len(table) >= 3 * 4  # every encoder, F, M and at least two sites (the check can fail)
    for row in table.itertuples():
        cases, probs, attributes = _clean_full(records, stored, row.encoder, task)
        inside = attributes[row.attribute] == row.subgroup
        y = cases.labels.astype(int)
        expected = _sklearn_auroc(y[inside], probs[inside])
        rest = _sklearn_auroc(y[~inside], probs[~inside])
        assert row.auroc == pytest.approx(expected, abs=1e-9)
        assert row.rest_auroc == pytest.approx(rest, abs=1e-9)
        assert row.diff == pytest.approx(expected - rest, abs=1e-9)
        prior = DESIGN.priors(probs.shape[1])
        assert row.brier_skill == pytest.approx(_brier_skill(y[inside], probs[inside], prior), abs=1e-6)
        reference = table.query("encoder == 'a' and attribute == @row.attribute and subgroup == @row.subgroup")
        assert row.ref_diff == pytest.approx(row.auroc - reference["auroc"].iloc[0], abs=1e-12)


def test_a_small_subgroup_is_not_assessable_with_its_reason_and_no_number(cohort):
    records, stored = cohort
    report = score_records(records, "a", CRSConfig(n_boot=0, n_weight_draws=0), predictions=stored)
    rare = report.subgroups.table.query("subgroup == 'rare'")
    assert len(rare) == 2 * 3 and not rare["assessable"].any()
    assert (rare["reason"] == f"{MIN_CASES - 5} cases (< {MIN_CASES})").all()
    assert rare[["auroc", "diff", "brier_skill"]].isna().all().all()
    assert any("not assessable" in note for note in report.notes)


def test_the_worst_subgroup_and_the_gap_follow_from_the_table(cohort):
    records, stored = cohort
    report = score_records(records, "a", CRSConfig(n_boot=200, n_weight_draws=0), predictions=stored)
    table, worst = report.subgroups.table, report.subgroups.worst
    for row in worst.itertuples():
        values = table.query("task == @row.task and attribute == @row.attribute and encoder == @row.encoder "
                             "and assessable").set_index("subgroup")["auroc"]
        assert row.worst_subgroup == values.idxmin() and row.worst_auroc == pytest.approx(values.min())
        assert row.gap == pytest.approx(values.max() - values.min())
        assert row.worst_low < row.worst_high and row.gap_low < row.gap_high
        assert np.isfinite(row.worst_bias) and np.isfinite(row.gap_bias)
    assert table.query("assessable")[["auroc_low", "diff_low", "ref_diff_low"]].notna().all().all()
    assert report.subgroups.target.startswith("subgroup intervals: the paired case-and-seed bootstrap's own draws")


def test_the_subgroup_stage_reads_the_bootstraps_own_draws():
    """One task, one seed: the cross-task discrimination draws are the task's AUROC under its cluster counts,
    and the counts replayed from the recorded state give them back exactly."""
    design = Design(ENCODERS[:2], n_cases=120, seeds=(0,), perturbations=("noise",), severities=(3,))
    records, stored = simulate(design, np.random.default_rng(3))
    axis_scores = compute_axes(records)
    boot = case_bootstrap(records, stored, axis_scores, "a", CRSConfig(n_boot=40))
    (plan,) = boot.plans
    counts = replayed_counts(plan, stored, boot.draw_states[plan.task], 41)
    cases = stored.case_set(plan.test_set)
    for e, encoder in enumerate(axis_scores.encoders):
        probs = stored.probabilities(plan.full[(e, 0)]).astype(np.float64)
        drawn = WeightedMetrics("single_label", cases.labels, probs / probs.sum(1, keepdims=True)).auroc(
            counts.weights("test"))
        np.testing.assert_allclose(drawn[1:], boot.axis_draws[:, e, axis_scores.axes.index("discrimination")],
                                   atol=1e-12)


def test_simultaneous_intervals_are_wider_than_pointwise_and_hold_the_point():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2001, 4, 1))
    draws[0] = 0.0
    low, high = simultaneous(draws, 0.95)
    assert np.all(low < 0) and np.all(high > 0)
    pointwise = np.quantile(draws[1:], 0.975, axis=0)
    assert np.all(high > pointwise)  # four subgroups at once need more than each alone
    assert np.all(high < 3.5)


def test_a_run_without_attributes_has_the_part_empty_not_absent():
    records, stored = simulate(Design(ENCODERS[:2], n_cases=100, seeds=(0,)), np.random.default_rng(1))
    report = score_records(records, "a", CRSConfig(n_boot=0, n_weight_draws=0), predictions=stored)
    assert report.subgroups.table.empty and report.subgroups.worst.empty and report.subgroups.target == ""
    assert "subgroups" in report.tables() and report.summary()["subgroups"] == {}


def test_multi_label_subgroups_are_the_macro_over_labels_with_each_label_beside():
    design = Design(ENCODERS[:2], n_cases=400, n_classes=3, seeds=(0,), multi_label_tasks=("sim",),
                    perturbations=("noise",), severities=(3,))
    records, stored = simulate(design, np.random.default_rng(5))
    stored = _with_attributes(stored, seed=2)
    report = score_records(records, "a", CRSConfig(n_boot=0, n_weight_draws=0), predictions=stored,
                           class_names={"sim": ("x", "y", "z")})
    labels = report.subgroups.labels
    rows = report.subgroups.table.query("assessable")
    assert len(rows) >= 4 and len(labels) == 3 * len(rows)
    for row in rows.itertuples():
        cases, _, attributes = _clean_full(records, stored, row.encoder, "sim")
        key = records.query("encoder == @row.encoder and condition_kind == 'clean' and fraction == 1.0")["record_key"]
        probs = stored.probabilities(stored.index.set_index("record_key").loc[key.iloc[0], "probs"]).astype(float)
        inside = attributes[row.attribute] == row.subgroup
        per_label = [roc_auc_score(cases.labels[inside, j], probs[inside, j]) for j in range(3)]
        assert row.auroc == pytest.approx(np.mean(per_label), abs=1e-9)
        shown = labels.query("encoder == @row.encoder and attribute == @row.attribute and subgroup == @row.subgroup")
        np.testing.assert_allclose(shown.set_index("label").loc[["x", "y", "z"], "auroc"], per_label, atol=1e-9)
