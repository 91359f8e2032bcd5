"""The chance-corrected axis formulas (PROTOCOL section 6), checked against hand values."""

import numpy as np
import pytest

from crsbench.axis_math import (
    brier_skill,
    label_efficiency,
    not_assessable,
    prior_brier_multi_label,
    prior_brier_single_label,
    robustness,
    smallest_sufficient_fraction,
)

FRACTIONS = [0.01, 0.1, 1.0]


def test_label_efficiency_by_hand():
    # lifts 0.1, 0.2, 0.2 over log10 f = -2, -1, 0: area 0.15 + 0.2 = 0.35, width 2, / 0.2 -> 0.875
    assert label_efficiency([0.6, 0.7, 0.7], FRACTIONS, 0.05) == pytest.approx(0.875)


def test_a_flat_curve_at_chance_scores_zero_not_one():
    assert label_efficiency([0.5, 0.5, 0.5], FRACTIONS, 0.05) == 0.0
    assert robustness([0.5, 0.5], 0.5, 0.05) == 0.0
    assert not_assessable(0.5, 0.05) and not not_assessable(0.56, 0.05)


def test_label_efficiency_is_clipped_to_one_and_not_assessable_is_zero():
    assert label_efficiency([0.9, 0.9, 0.8], FRACTIONS, 0.05) == 1.0
    # below delta the ratio would be large; it is zeroed instead
    assert label_efficiency([0.54, 0.54, 0.53], FRACTIONS, 0.05) == 0.0


def test_robustness_by_hand_with_shift_half_and_half():
    # retention 0.5 and 1.0 -> 0.75 on perturbations; shift 0.65 -> 0.75; mean 0.75
    assert robustness([0.6, 0.7], 0.7, 0.05, auroc_shift=0.65) == pytest.approx(0.75)
    assert robustness([0.6, 0.7], 0.7, 0.05, auroc_shift=0.5) == pytest.approx(0.375)
    # better than clean is clipped at 1; below chance at 0
    assert robustness([0.9, 0.3], 0.7, 0.05) == pytest.approx(0.5)
    # no perturbations: the shift alone
    assert robustness(np.empty(0), 0.7, 0.05, auroc_shift=0.6) == pytest.approx(0.5)


def test_broadcasting_over_leading_dims_matches_one_by_one():
    rng = np.random.default_rng(0)
    curves = rng.uniform(0.4, 0.95, size=(7, 5, 3))
    clean = rng.uniform(0.45, 0.95, size=(7, 5))
    pert = rng.uniform(0.4, 0.95, size=(7, 5, 4))
    shift = rng.uniform(0.4, 0.95, size=(7, 5))
    le = label_efficiency(curves, FRACTIONS, 0.05)
    rb = robustness(pert, clean, 0.05, shift)
    for i in range(7):
        for j in range(5):
            assert le[i, j] == label_efficiency(curves[i, j], FRACTIONS, 0.05)
            assert rb[i, j] == robustness(pert[i, j], clean[i, j], 0.05, shift[i, j])
    assert ((le >= 0) & (le <= 1)).all() and ((rb >= 0) & (rb <= 1)).all()


def test_smallest_sufficient_fraction():
    curves = np.array([[0.60, 0.69, 0.70], [0.69, 0.60, 0.70], [0.5, 0.6, 0.9]])
    assert smallest_sufficient_fraction(curves, FRACTIONS, 0.02).tolist() == [0.1, 0.01, 1.0]


def test_brier_skill_against_the_prior_predictor():
    from sklearn.metrics import brier_score_loss

    # binary, training prior 0.3, test prevalence 0.3: the standard binary Brier of predicting 0.3
    y = np.array([1] * 30 + [0] * 70)
    prior = prior_brier_single_label([0.7, 0.3], [70, 30])
    assert prior == pytest.approx(brier_score_loss(y, np.full(100, 0.3)))
    assert brier_skill(0.105, prior) == pytest.approx(0.5)
    assert brier_skill(prior, prior) == pytest.approx(0.0)
    # three classes: the multi-class sum, computed case by case
    p, y3 = np.array([0.5, 0.3, 0.2]), np.repeat([0, 1, 2], [40, 40, 20])
    by_case = np.mean([((p - np.eye(3)[c]) ** 2).sum() for c in y3])
    assert prior_brier_single_label(p, [40, 40, 20]) == pytest.approx(by_case)
    assert prior_brier_multi_label([0.3, 0.5], [30, 50], [100, 100]) == pytest.approx((0.21 + 0.25) / 2)


@pytest.mark.parametrize("bad", [[0.1, 0.5], [0.5, 0.1, 1.0], [1.0]])
def test_bad_fraction_grids_are_refused(bad):
    with pytest.raises(ValueError, match="fractions"):
        label_efficiency(np.full(len(bad), 0.7), bad, 0.05)
