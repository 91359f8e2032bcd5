"""The chance-corrected axis formulas (PROTOCOL section 6), checked against hand values."""

import numpy as np
import pytest

from crsbench.crs.axis_math import (
    brier_skill,
    label_efficiency,
    not_assessable,
    prior_brier_multi_label,
    prior_brier_single_label,
    retention,
    robustness,
    smallest_sufficient_fraction,
)

FRACTIONS = [0.01, 0.1, 1.0]


def test_label_efficiency_by_hand():
    # AUROC 0.6, 0.7, 0.7 over log10 f = -2, -1, 0: trapezoids 0.65 + 0.7 = 1.35, / width 2 -> 0.675
    assert label_efficiency([0.6, 0.7, 0.7], FRACTIONS) == pytest.approx(0.675)


def test_a_flat_curve_at_chance_sits_at_the_anchor_not_at_the_top():
    assert label_efficiency([0.5, 0.5, 0.5], FRACTIONS) == 0.5
    assert robustness([0.5, 0.5]) == 0.5
    assert not_assessable(0.5, 0.05) and not not_assessable(0.56, 0.05)


def test_label_efficiency_and_robustness_are_linear_in_the_aurocs_with_no_clipping():
    """No clip and no ratio: a curve above its full-label value counts as it is, one below chance too,
    and the axes are continuous everywhere (the previous ratio switched at AUROC 0.5 + delta)."""
    assert label_efficiency([0.9, 0.9, 0.8], FRACTIONS) == pytest.approx((0.9 + 0.85) / 2)
    assert label_efficiency([0.45, 0.5, 0.55], FRACTIONS) == pytest.approx(0.5)
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.4, 1.0, (2, 50, 3))
    np.testing.assert_allclose(label_efficiency(0.3 * a + 0.7 * b, FRACTIONS),
                               0.3 * label_efficiency(a, FRACTIONS) + 0.7 * label_efficiency(b, FRACTIONS))


def test_robustness_by_hand_with_shift_half_and_half():
    assert robustness([0.6, 0.7], auroc_shift=0.65) == pytest.approx(0.65)
    assert robustness([0.6, 0.7], auroc_shift=0.5) == pytest.approx(0.575)
    assert robustness(np.empty(0), auroc_shift=0.6) == pytest.approx(0.6)  # no perturbations: the shift alone
    with pytest.raises(ValueError, match="perturbed AUROCs"):
        robustness(np.empty(0))


def test_retention_is_the_share_above_chance_kept():
    assert retention(0.6, 0.7, 0.05) == pytest.approx(0.5)
    assert retention(0.9, 0.7, 0.05) == 1.0 and retention(0.3, 0.7, 0.05) == 0.0


def test_broadcasting_over_leading_dims_matches_one_by_one():
    rng = np.random.default_rng(0)
    curves = rng.uniform(0.4, 0.95, size=(7, 5, 3))
    pert = rng.uniform(0.4, 0.95, size=(7, 5, 4))
    shift = rng.uniform(0.4, 0.95, size=(7, 5))
    le = label_efficiency(curves, FRACTIONS)
    rb = robustness(pert, shift)
    for i in range(7):
        for j in range(5):
            assert le[i, j] == label_efficiency(curves[i, j], FRACTIONS)
            assert rb[i, j] == robustness(pert[i, j], shift[i, j])


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
        label_efficiency(np.full(len(bad), 0.7), bad)
