"""Training samples in the subgroup intervals: a refit's record carries its per-subgroup metrics (checked against
scikit-learn), and the subgroup stage adds the refits' term on the axes' own refit draws, or says in one line
which attributes' intervals cover the fitted probes only."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss, roc_auc_score

from crsbench.crs.definition import CRSConfig
from crsbench.plan.conditions import CLEAN, Condition
from crsbench.plan.fit_units import FitUnit
from crsbench.probe.linear import ProbeConfig
from crsbench.results.records import RecordsError, RunRecord, to_record
from crsbench.run.evaluate import EvalSet, TrainingData, evaluate, fit_unit
from crsbench.scoring.score import score_records
from crsbench.scoring.subgroups import subgroup_metrics
from crsbench.simulation.cohort import simulate
from _subgroup_refits import DESIGN, refit_metrics as _refit_metrics, with_attributes as _with_attributes

CONFIG = CRSConfig(n_boot=300, n_weight_draws=0)


def _sklearn_auroc(y, probs):
    """The positive column's for two classes; for more, the one-vs-rest mean over the classes the cases define
    (sklearn's macro "ovr" where every class is present)."""
    if probs.shape[1] == 2:
        return roc_auc_score(y, probs[:, 1])
    if len(np.unique(y)) == probs.shape[1]:
        return roc_auc_score(y, probs, multi_class="ovr")
    return np.mean([roc_auc_score(y == c, probs[:, c]) for c in np.unique(y)])


def _sklearn_skill(y, probs, prior):
    if probs.shape[1] == 2:
        return 1 - brier_score_loss(y, probs[:, 1]) / brier_score_loss(y, np.full(len(y), prior[1]))
    onehot = np.eye(probs.shape[1])[y]
    return 1 - ((probs - onehot) ** 2).sum(1).mean() / ((np.asarray(prior) - onehot) ** 2).sum(1).mean()


def _probabilities(rng, n, k, y):
    logits = rng.normal(size=(n, k)) + 1.5 * np.eye(k)[y]
    p = np.exp(logits)
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("k", [2, 3])
def test_a_refits_subgroup_metrics_are_scikit_learns_on_the_subgroups_cases(k):
    rng = np.random.default_rng(k)
    n = 240
    y = rng.integers(0, k, n)
    probs = _probabilities(rng, n, k, y)
    sex = rng.choice(["F", "M", "unknown"], n)
    site = np.where(y == 0, "one-class", rng.choice(["a", "b"], n))  # a subgroup with a single class
    prior = np.full(k, 1 / k)
    rows = subgroup_metrics("single_label", y, probs, {"sex": sex, "site": site}, prior)
    assert [(r["attribute"], r["subgroup"]) for r in rows] == [
        ("sex", "F"), ("sex", "M"), ("sex", "unknown"), ("site", "a"), ("site", "b"), ("site", "one-class")]
    scored = probs.astype(np.float64) / probs.astype(np.float64).sum(axis=1, keepdims=True)  # as the axes read it
    checked = 0
    for row in rows:
        values = {"sex": sex, "site": site}[row["attribute"]]
        inside = values == row["subgroup"]
        assert row["n_cases"] == int(inside.sum())
        if len(np.unique(y[inside])) < 2:
            assert row["auroc"] is None  # not defined: never a number
            continue
        assert row["auroc"] == pytest.approx(_sklearn_auroc(y[inside], scored[inside]), abs=1e-12)
        assert row["rest_auroc"] == pytest.approx(_sklearn_auroc(y[~inside], scored[~inside]), abs=1e-12)
        assert row["brier_skill"] == pytest.approx(_sklearn_skill(y[inside], scored[inside], prior), abs=1e-9)
        checked += 1
    assert checked >= 3
    assert subgroup_metrics("single_label", y, probs, {"sex": sex}, None)[0]["brier_skill"] is None  # a shift set


def test_the_evaluation_of_a_refit_carries_them_and_the_runs_own_probes_and_perturbed_sets_do_not():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(300, 6)), rng.integers(0, 2, 300)
    x[:, 0] += 1.5 * y
    data = TrainingData("single_label", 2, x[:200], y[:200], x[200:250], y[200:250], "train")
    sex = rng.choice(["F", "M"], 50)
    eval_set = EvalSet(x[250:], y[250:], "eval", {"sex": sex})
    config = ProbeConfig(c_grid=(1.0,))
    refit = fit_unit(FitUnit("enc", "task", 0, 1.0, (CLEAN,), refit=1), data, config)
    first = evaluate(refit, CLEAN, eval_set)
    again = evaluate(fit_unit(FitUnit("enc", "task", 0, 1.0, (CLEAN,), refit=1), data, config), CLEAN, eval_set)
    assert first.numbers["subgroup_metrics"] == again.numbers["subgroup_metrics"]  # deterministic
    prior = np.asarray(refit.positives_train, dtype=float) / refit.n_train
    expected = subgroup_metrics("single_label", y[250:], first.probabilities, {"sex": sex}, prior)
    assert first.numbers["subgroup_metrics"] == expected
    female = sex == "F"
    probs = first.probabilities.astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    assert expected[0]["auroc"] == pytest.approx(roc_auc_score(y[250:][female], probs[female, 1]), abs=1e-12)
    record = to_record({**_nulls(), **first.numbers, "record_key": "k", "encoder": "enc", "task": "task", "seed": 0,
                        "fraction": 1.0, "refit": 1})
    assert json.loads(record.as_row()["subgroup_metrics"]) == expected  # stored as the record's JSON text
    shifted = evaluate(refit, Condition.shift("other"), eval_set).numbers["subgroup_metrics"]
    assert all(r["brier_skill"] is None for r in shifted)  # no training prior on a shift set
    assert "subgroup_metrics" not in evaluate(refit, Condition.perturbation("jpeg", 3), eval_set).numbers
    own = fit_unit(FitUnit("enc", "task", 0, 1.0, (CLEAN,)), data, config)
    assert "subgroup_metrics" not in evaluate(own, CLEAN, eval_set).numbers  # its predictions are stored


def _nulls() -> dict:
    return {name: None for name in RunRecord.model_fields}


@pytest.mark.parametrize("bad, message", [
    ({"auroc": 1.5}, "less than or equal to 1"),
    ({"brier_skill": float("inf")}, "finite"),
    ({"extra": 1}, "Extra inputs"),
    ({"values": ""}, "at least 1 character"),
])
def test_a_record_with_malformed_subgroup_metrics_is_refused_naming_the_field(bad, message):
    entry = {"attribute": "sex", "subgroup": "F", "values": "abc", "n_cases": 40, "auroc": 0.8, "rest_auroc": 0.7,
             "brier_skill": 0.1, **bad}
    with pytest.raises(RecordsError, match=message) as error:
        to_record({**_nulls(), "record_key": "k", "encoder": "e", "task": "t", "seed": 0, "fraction": 1.0,
                   "condition_kind": "clean", "condition": "clean", "severity": 0, "subgroup_metrics": json.dumps([entry])})
    assert "subgroup_metrics" in str(error.value)


# --------------------------------------------------------------------------- the subgroup stage


@pytest.fixture(scope="module")
def cohort():
    records, stored = simulate(DESIGN, np.random.default_rng(3), refits=4)
    return records, _with_attributes(stored)


@pytest.fixture(scope="module")
def scored(cohort):
    records, stored = cohort
    plain = score_records(records, "a", CONFIG, predictions=stored)
    carried = score_records(_refit_metrics(records, stored), "a", CONFIG, predictions=stored)
    return plain, carried


def _widths(report, column="diff"):
    table = report.subgroups.table.query("assessable").set_index(["task", "set", "attribute", "subgroup", "encoder"])
    return table[f"{column}_high"] - table[f"{column}_low"], table


@pytest.mark.slow
@pytest.mark.xdist_group("subgroup-refits")
def test_with_the_refits_metrics_the_intervals_include_training_samples_and_say_so(scored):
    plain, carried = scored
    assert "training samples are not included" in plain.subgroups.target  # a store whose refits lack them
    assert "include training samples as the axes do" in carried.subgroups.target
    assert "fitted probes only" not in carried.subgroups.target
    before, before_table = _widths(plain)
    after, after_table = _widths(carried)
    # the points are the fitted probes' (the term adds nothing at draw 0); the intervals widen by the refit spread
    for column in ("auroc", "rest_auroc", "diff", "brier_skill", "ref_diff"):
        np.testing.assert_allclose(after_table[column], before_table[column], rtol=0, atol=1e-12)
    # a variance term added cannot narrow an interval; the family's simultaneous quantile is re-read on the new
    # draws, so a subgroup whose term is near 0 may move by that quantile's Monte Carlo error (under 1 % here).
    # On average they widen by 9 % (up to 55 %); a term left out would leave the ratio at 1 within that 1 %.
    assert (after >= 0.98 * before).all() and after.mean() > 1.05 * before.mean()
    for column in ("auroc", "brier_skill"):
        wider, _ = _widths(carried, column)
        assert wider.mean() > _widths(plain, column)[0].mean()


@pytest.mark.slow
@pytest.mark.xdist_group("subgroup-refits")
def test_refits_with_no_spread_leave_the_fitted_probes_intervals_unchanged(cohort, scored):
    """Every refit's subgroup values equal to the fitted probes': deviations 0, so the term is 0 on every draw and
    the subgroup tables are the fitted probes' exactly (the term is centred on the refits' mean and scaled by it)."""
    records, stored = cohort
    plain, _ = scored
    still = score_records(_refit_metrics(records, stored, from_own=True), "a", CONFIG, predictions=stored)
    assert "include training samples" in still.subgroups.target
    pd.testing.assert_frame_equal(still.subgroups.table, plain.subgroups.table, check_exact=True)
    pd.testing.assert_frame_equal(still.subgroups.worst, plain.subgroups.worst, check_exact=True)


@pytest.mark.slow
@pytest.mark.xdist_group("subgroup-refits")
def test_an_attribute_its_refits_lack_is_named_and_keeps_the_fitted_probes_intervals(cohort, scored):
    records, stored = cohort
    plain, carried = scored
    partly = score_records(_refit_metrics(records, stored, attributes={"sex"}), "a", CONFIG, predictions=stored)
    target = partly.subgroups.target
    assert "except for t1 (test set): site, t2 (test set): site" in target and "fitted probes only" in target
    part, _ = _widths(partly)
    pd.testing.assert_series_equal(part.xs("site", level="attribute"), _widths(plain)[0].xs("site", level="attribute"))
    pd.testing.assert_series_equal(part.xs("sex", level="attribute"), _widths(carried)[0].xs("sex", level="attribute"))
    # attributes re-banded after the run: the stored digest no longer matches, so the refits' values are not read
    changed = _refit_metrics(records, stored)
    for i in changed.index[changed["subgroup_metrics"].notna()]:
        entries = json.loads(changed.at[i, "subgroup_metrics"])
        changed.at[i, "subgroup_metrics"] = json.dumps([{**e, "values": "0" * 16} for e in entries])
    stale = score_records(changed, "a", CONFIG, predictions=stored)
    assert stale.subgroups.target == plain.subgroups.target


@pytest.mark.slow
def test_the_same_suite_and_seed_give_identical_refit_subgroup_metrics(tmp_path):
    """Two runs of one suite with refits, each into its own folder and cache: identical records, the refits'
    subgroup metrics included; the run's own probes and the perturbed sets carry none."""
    from crsbench import api
    from _tiny_results import tiny_suite

    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        api.run(tiny_suite(tmp_path / name, refits=4))
    second = tmp_path / "second"
    volatile = ["run_id", "suite_hash", "created_at", "fit_seconds", "eval_seconds"]  # the hash holds the output path
    first_records = api.records(tmp_path / "first" / "out").drop(columns=volatile).set_index("record_key").sort_index()
    second_records = api.records(second / "out").drop(columns=volatile).set_index("record_key").sort_index()
    pd.testing.assert_frame_equal(first_records, second_records)
    carried = first_records["subgroup_metrics"].notna()
    refits = first_records["refit"] > 0
    kinds = first_records["condition_kind"]
    assert (carried == (refits & kinds.isin(["clean", "shift"]))).all() and carried.sum() >= 8
    entries = json.loads(first_records.loc[carried, "subgroup_metrics"].iloc[0])
    assert {e["attribute"] for e in entries} == {"sex", "age_band"}  # the demo's attributes
