"""Weighted metrics: unit weights reproduce metrics/classification.py, integer weights equal repeating cases."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.metrics import calibration
from crsbench.metrics import classification as metrics
from crsbench.metrics.weighted import WeightedMetrics, weighted_auroc


def _single(rng, n=300, k=4, ties=False):
    logits = rng.normal(size=(n, k))
    y = rng.integers(0, k, size=n)
    logits[np.arange(n), y] += 1.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if ties:
        proba = np.round(proba, 2)
        proba /= proba.sum(axis=1, keepdims=True)
    return y, proba


def _multi(rng, n=300, k=5):
    y = (rng.random((n, k)) < 0.3).astype(float)
    y[rng.random((n, k)) < 0.1] = np.nan
    proba = np.clip(0.3 + 0.3 * np.nan_to_num(y) + rng.normal(0, 0.2, (n, k)), 0, 1)
    return y, np.round(proba, 3)


CASES = {
    "single": lambda rng: ("single_label", *_single(rng)),
    "single_ties": lambda rng: ("single_label", *_single(rng, ties=True)),
    "binary": lambda rng: ("single_label", *_single(rng, k=2)),
    "ordinal": lambda rng: ("ordinal", *_single(rng, k=5, ties=True)),
    "multi": lambda rng: ("multi_label", *_multi(rng)),
    "float32": lambda rng: ("single_label", _single(rng)[0], _single(np.random.default_rng(1))[1].astype(np.float32)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unit_weights_equal_the_unweighted_metrics(case):
    task_type, y, proba = CASES[case](np.random.default_rng(7))
    w = WeightedMetrics(task_type, y, proba)
    ones = np.ones((1, len(proba)))
    assert w.auroc(ones)[0] == metrics.auroc_macro(task_type, y, proba)  # exact: integer arithmetic
    np.testing.assert_array_equal(w.auroc_per_class(ones)[0], metrics.auroc_per_class(task_type, y, proba))
    assert w.ece(ones)[0] == pytest.approx(calibration.ece(task_type, y, proba), rel=1e-12, abs=1e-15)
    square = calibration.calibration_error_debiased_squared(task_type, y, proba)
    assert w.calibration_error_debiased_squared(ones)[0] == pytest.approx(square, rel=1e-12, abs=1e-15)
    assert w.calibration_error_debiased(ones)[0] == pytest.approx(
        calibration.calibration_error_debiased(task_type, y, proba), rel=1e-12, abs=1e-15)
    assert w.brier(ones)[0] == pytest.approx(metrics.brier(task_type, y, proba), rel=1e-12)
    assert w.nll(ones)[0] == pytest.approx(metrics.nll(task_type, y, proba), rel=1e-12)


def test_auroc_agrees_with_sklearn_under_sample_weights():
    rng = np.random.default_rng(3)
    y, proba = _single(rng, k=2, ties=True)
    weights = rng.integers(0, 4, size=(6, len(y)))
    ours = weighted_auroc("single_label", y, proba, weights)
    for row, value in zip(weights, ours):
        assert value == pytest.approx(roc_auc_score(y, proba[:, 1], sample_weight=row), abs=1e-12)
    assert ours[0] == pytest.approx(roc_auc_score(y, proba[:, 1], sample_weight=weights[0]), abs=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_integer_weights_equal_repeating_each_case(case):
    task_type, y, proba = CASES[case](np.random.default_rng(11))
    rng = np.random.default_rng(5)
    weights = rng.multinomial(len(y), np.full(len(y), 1 / len(y)), size=4)
    w = WeightedMetrics(task_type, y, proba)
    for row, auroc, ece, brier, nll in zip(weights, w.auroc(weights), w.ece(weights), w.brier(weights), w.nll(weights)):
        rows = np.repeat(np.arange(len(y)), row)
        assert auroc == pytest.approx(metrics.auroc_macro(task_type, y[rows], proba[rows]), abs=1e-12)
        assert ece == pytest.approx(calibration.ece(task_type, y[rows], proba[rows]), abs=1e-12)
        assert brier == pytest.approx(metrics.brier(task_type, y[rows], proba[rows]), abs=1e-12)
        assert nll == pytest.approx(metrics.nll(task_type, y[rows], proba[rows]), abs=1e-12)
    squares = w.calibration_error_debiased_squared(weights)
    for row, square in zip(weights, squares):
        rows = np.repeat(np.arange(len(y)), row)
        assert square == pytest.approx(calibration.calibration_error_debiased_squared(task_type, y[rows], proba[rows]), abs=1e-12)


def test_a_class_without_positives_in_a_draw_is_left_out_of_the_macro_mean():
    y = np.array([0, 0, 1, 1, 2, 2])
    proba = np.full((6, 3), 1 / 3)
    proba[[0, 2, 4], [0, 1, 2]] = 0.5
    proba[[0, 2, 4], [1, 2, 0]] = 0.25
    proba[[0, 2, 4], [2, 0, 1]] = 0.25
    weights = np.array([[1, 1, 1, 1, 0, 0]])  # class 2 absent
    rows = np.array([0, 1, 2, 3])
    expected = metrics.auroc_macro("single_label", y[rows], proba[rows])
    assert weighted_auroc("single_label", y, proba, weights)[0] == pytest.approx(expected)
