"""The debiased calibration error (Kumar, Liang & Ma 2019) that the calibration axis reads."""

import numpy as np
import pytest

from crsbench.metrics import calibration


def _binary(rng, n, slope=1.0):
    """Two-class predictions whose true positive rate is expit(slope * logit(p1)): slope 1 is
    calibrated, slope < 1 an overconfident predictor."""
    p1 = rng.beta(2, 2, n)
    rate = 1.0 / (1.0 + np.exp(-slope * np.log(p1 / (1 - p1))))
    y = (rng.random(n) < rate).astype(int)
    return y, np.column_stack([1 - p1, p1])


def test_the_formula_on_two_bins_by_hand():
    # bin (0.6, 0.6667]: 4 cases at 0.65, 3 correct; bin (0.9333, 1]: 2 cases at 0.95, both correct.
    proba = np.array([[0.35, 0.65]] * 4 + [[0.05, 0.95]] * 2)
    y = np.array([1, 1, 1, 0, 1, 1])
    first = (0.75 - 0.65) ** 2 - 0.75 * 0.25 / 3
    second = (1.0 - 0.95) ** 2 - 0.0
    expected = (4 * first + 2 * second) / 6
    assert calibration.calibration_error_debiased_squared("single_label", y, proba) == pytest.approx(expected)
    assert calibration.calibration_error_debiased("single_label", y, proba) == pytest.approx(np.sqrt(max(expected, 0)))


def test_a_bin_with_one_case_adds_nothing():
    proba = np.array([[0.35, 0.65], [0.35, 0.65], [0.05, 0.95]])
    y = np.array([1, 0, 0])  # the single 0.95 case is wrong
    two = (0.5 - 0.65) ** 2 - 0.25 / 1
    assert calibration.calibration_error_debiased_squared("single_label", y, proba) == pytest.approx(2 * two / 3)


def test_the_square_is_unbiased_where_binned_ece_is_not():
    """A perfectly calibrated predictor on 300 cases: raw ECE about 0.04, the debiased square 0 on
    average (within 4 Monte Carlo standard errors), and its root well below the raw ECE."""
    rng = np.random.default_rng(0)
    runs = [_binary(rng, 300) for _ in range(300)]
    squares = np.array([calibration.calibration_error_debiased_squared("single_label", y, p) for y, p in runs])
    raw = np.array([calibration.ece("single_label", y, p) for y, p in runs])
    roots = np.array([calibration.calibration_error_debiased("single_label", y, p) for y, p in runs])
    assert abs(squares.mean()) < 4 * squares.std(ddof=1) / np.sqrt(len(squares))
    assert raw.mean() > 0.03
    assert roots.mean() < raw.mean() / 2


def test_a_known_miscalibration_is_recovered():
    """An overconfident predictor (true rate expit(0.6 logit p)): the population RMS binned error,
    from 400,000 cases, is about 0.07. On 400 cases (200 test sets) the debiased square is unbiased
    for its square (within 4 Monte Carlo s.e.); the root is low by Jensen's inequality, but by less
    than raw ECE is high against the population ECE."""
    rng = np.random.default_rng(1)
    y, p = _binary(rng, 400_000, slope=0.6)
    target = calibration.calibration_error_debiased("single_label", y, p)  # the noise term is ~1e-6 here
    target_ece = calibration.ece("single_label", y, p)
    runs = [_binary(rng, 400, slope=0.6) for _ in range(200)]
    squares = np.array([calibration.calibration_error_debiased_squared("single_label", y, p) for y, p in runs])
    roots = np.sqrt(np.maximum(squares, 0))
    raw = np.array([calibration.ece("single_label", y, p) for y, p in runs])
    assert target > 0.05
    assert abs(squares.mean() - target**2) < 4 * squares.std(ddof=1) / np.sqrt(len(squares))
    assert abs(roots.mean() - target) < raw.mean() - target_ece


def test_multi_label_averages_the_squares_of_the_labels_then_roots_once():
    rng = np.random.default_rng(2)
    y = (rng.random((200, 3)) < 0.4).astype(float)
    y[rng.random((200, 3)) < 0.1] = np.nan
    proba = np.clip(0.25 + 0.4 * np.nan_to_num(y) + rng.normal(0, 0.15, (200, 3)), 0, 1)
    squares = [calibration.calibration_error_debiased_squared("multi_label", y[:, [c]], proba[:, [c]]) for c in range(3)]
    expected = np.mean(squares)
    assert min(squares) != max(squares)
    assert calibration.calibration_error_debiased_squared("multi_label", y, proba) == pytest.approx(expected)
    assert calibration.calibration_error_debiased("multi_label", y, proba) == pytest.approx(np.sqrt(max(expected, 0)))
