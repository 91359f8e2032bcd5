"""Metrics checked against scikit-learn and against naive loop-based ECE references."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import (
    balanced_accuracy_score,
    brier_score_loss,
    cohen_kappa_score,
    log_loss,
    roc_auc_score,
)

from crsbench.metrics import calibration
from crsbench.metrics import classification as M

SEEDS = [0, 1, 2, 3, 4]
SINGLE_TYPES = ["single_label", "ordinal"]


# --------------------------------------------------------------------------- data


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


def make_single(seed: int, n: int = 300, k: int = 4, signal: float = 1.0):
    """Labels plus softmax probabilities that carry some (imperfect) signal."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), y] += signal
    return y, softmax(logits)


def make_multi(seed: int, n: int = 300, k: int = 5, mask_fraction: float = 0.2):
    """0/1 labels with a fraction masked as NaN, plus informative sigmoid probabilities."""
    rng = np.random.default_rng(seed)
    y = (rng.random((n, k)) < rng.uniform(0.1, 0.6, size=k)).astype(float)
    logits = rng.normal(size=(n, k)) + 1.5 * (y - 0.5)
    proba = 1.0 / (1.0 + np.exp(-logits))
    y[rng.random((n, k)) < mask_fraction] = np.nan
    return y, proba


# --------------------------------------------------------------------------- sklearn references


def sk_auroc_per_class(task_type, y, proba):
    out = []
    for c in range(proba.shape[1]):
        if task_type == "multi_label":
            keep = ~np.isnan(y[:, c])
            target, score = y[keep, c], proba[keep, c]
        else:
            target, score = (y == c).astype(int), proba[:, c]
        out.append(roc_auc_score(target, score) if len(np.unique(target)) == 2 else np.nan)
    return np.array(out)


def sk_balanced_accuracy(task_type, y, proba):
    if task_type != "multi_label":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "y_pred contains classes not in y_true"
            return balanced_accuracy_score(y, proba.argmax(axis=1))
    values = []
    for c in range(proba.shape[1]):
        keep = ~np.isnan(y[:, c])
        target = y[keep, c].astype(int)
        if len(np.unique(target)) == 2:
            values.append(balanced_accuracy_score(target, (proba[keep, c] >= 0.5).astype(int)))
    return float(np.mean(values)) if values else math.nan


def sk_brier(task_type, y, proba):
    k = proba.shape[1]
    if task_type != "multi_label" and k == 2:
        return brier_score_loss(y, proba[:, 1])  # the standard binary value, of the positive column
    if task_type != "multi_label":
        return brier_score_loss(y, proba, labels=list(range(k)), scale_by_half=False)
    values = []
    for c in range(k):
        keep = ~np.isnan(y[:, c])
        if keep.any():
            values.append(brier_score_loss(y[keep, c], proba[keep, c], pos_label=1))
    return float(np.mean(values))


def sk_nll(task_type, y, proba):
    k = proba.shape[1]
    if task_type != "multi_label":
        return log_loss(y, proba, labels=list(range(k)))
    values = []
    for c in range(k):
        keep = ~np.isnan(y[:, c])
        if keep.any():
            values.append(log_loss(y[keep, c], proba[keep, c], labels=[0, 1]))
    return float(np.mean(values))


# --------------------------------------------------------------------------- naive ECE references


def naive_binary_ece(confidence, outcome, n_bins):
    """Equal-width ECE with explicit loops: bins (b/B, (b+1)/B], 0 in the first bin."""
    confidence, outcome = list(map(float, confidence)), list(map(float, outcome))
    n = len(confidence)
    total = 0.0
    for b in range(n_bins):
        lower, upper = b / n_bins, (b + 1) / n_bins
        members = [
            i
            for i in range(n)
            if (lower < confidence[i] <= upper) or (b == 0 and confidence[i] == 0.0)
        ]
        if not members:
            continue
        mean_confidence = sum(confidence[i] for i in members) / len(members)
        mean_outcome = sum(outcome[i] for i in members) / len(members)
        total += len(members) / n * abs(mean_outcome - mean_confidence)
    return total


def naive_binary_ece_adaptive(confidence, outcome, n_bins):
    """Equal-mass ECE with explicit loops: stable sort, first n % B groups one larger."""
    confidence, outcome = list(map(float, confidence)), list(map(float, outcome))
    n = len(confidence)
    order = sorted(range(n), key=lambda i: confidence[i])  # Python's sort is stable
    base, extra = divmod(n, n_bins)
    total, start = 0.0, 0
    for b in range(n_bins):
        size = base + (1 if b < extra else 0)
        members = order[start : start + size]
        start += size
        if not members:
            continue
        mean_confidence = sum(confidence[i] for i in members) / len(members)
        mean_outcome = sum(outcome[i] for i in members) / len(members)
        total += len(members) / n * abs(mean_outcome - mean_confidence)
    return total


def naive_top_label(y, proba):
    confidence, correct = [], []
    for row, label in zip(proba.tolist(), y.tolist()):
        top = max(row)
        confidence.append(top)
        correct.append(1.0 if row.index(top) == label else 0.0)
    return confidence, correct


def naive_per_column(task_type, y, proba, n_bins, binary_ece):
    values = []
    for c in range(proba.shape[1]):
        confidence, outcome = [], []
        for i in range(proba.shape[0]):
            if task_type == "multi_label":
                if math.isnan(y[i, c]):
                    continue
                outcome.append(y[i, c])
            else:
                outcome.append(1.0 if y[i] == c else 0.0)
            confidence.append(proba[i, c])
        if confidence:
            values.append(binary_ece(confidence, outcome, n_bins))
    return sum(values) / len(values)


def naive_ece(task_type, y, proba, n_bins, adaptive=False):
    binary_ece = naive_binary_ece_adaptive if adaptive else naive_binary_ece
    if task_type == "multi_label":
        return naive_per_column(task_type, y, proba, n_bins, binary_ece)
    return binary_ece(*naive_top_label(y, proba), n_bins)


def naive_ece_classwise(task_type, y, proba, n_bins):
    return naive_per_column(task_type, y, proba, n_bins, naive_binary_ece)


def make_data(task_type, seed, **kwargs):
    if task_type == "multi_label":
        return make_multi(seed, **kwargs)
    return make_single(seed, **kwargs)


ALL_TYPES = ["single_label", "ordinal", "multi_label"]


# --------------------------------------------------------------------------- against sklearn, random data


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task_type", ALL_TYPES)
def test_auroc_matches_sklearn(task_type, seed):
    y, proba = make_data(task_type, seed)
    expected = sk_auroc_per_class(task_type, y, proba)
    got = M.auroc_per_class(task_type, y, proba)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    summary = expected[1] if task_type != "multi_label" and proba.shape[1] == 2 else np.nanmean(expected)
    assert M.auroc_macro(task_type, y, proba) == pytest.approx(summary, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task_type", ALL_TYPES)
def test_balanced_accuracy_matches_sklearn(task_type, seed):
    y, proba = make_data(task_type, seed)
    expected = sk_balanced_accuracy(task_type, y, proba)
    assert M.balanced_accuracy(task_type, y, proba) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [2, 3, 5])
def test_quadratic_kappa_matches_sklearn(seed, k):
    y, proba = make_single(seed, k=k)
    expected = cohen_kappa_score(
        y, proba.argmax(axis=1), weights="quadratic", labels=list(range(k))
    )
    assert M.quadratic_kappa(y, proba) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task_type", ALL_TYPES)
def test_brier_matches_sklearn(task_type, seed):
    y, proba = make_data(task_type, seed)
    assert M.brier(task_type, y, proba) == pytest.approx(sk_brier(task_type, y, proba), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task_type", ALL_TYPES)
def test_nll_matches_sklearn(task_type, seed):
    y, proba = make_data(task_type, seed)
    assert M.nll(task_type, y, proba) == pytest.approx(sk_nll(task_type, y, proba), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task_type", ALL_TYPES)
@pytest.mark.parametrize("n_bins", [15, 7])
def test_ece_variants_match_naive_reference(task_type, seed, n_bins):
    y, proba = make_data(task_type, seed, n=120)
    assert calibration.ece(task_type, y, proba, n_bins) == pytest.approx(
        naive_ece(task_type, y, proba, n_bins), abs=1e-12
    )
    assert calibration.ece_adaptive(task_type, y, proba, n_bins) == pytest.approx(
        naive_ece(task_type, y, proba, n_bins, adaptive=True), abs=1e-12
    )
    assert calibration.ece_classwise(task_type, y, proba, n_bins) == pytest.approx(
        naive_ece_classwise(task_type, y, proba, n_bins), abs=1e-12
    )


# --------------------------------------------------------------------------- property-based, heavy ties


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    k=st.integers(1, 4),
    levels=st.integers(1, 5),
    mask_fraction=st.sampled_from([0.0, 0.3, 0.7]),
)
def test_multi_label_against_sklearn_with_ties_and_masks(seed, n, k, levels, mask_fraction):
    # Probabilities on a coarse grid force many ties, including exact 0 and 1.
    rng = np.random.default_rng(seed)
    proba = rng.integers(0, levels + 1, size=(n, k)) / levels
    y = (rng.random((n, k)) < 0.5).astype(float)
    y[rng.random((n, k)) < mask_fraction] = np.nan

    np.testing.assert_allclose(
        M.auroc_per_class("multi_label", y, proba),
        sk_auroc_per_class("multi_label", y, proba),
        atol=1e-12,
    )
    ba = M.balanced_accuracy("multi_label", y, proba)
    expected_ba = sk_balanced_accuracy("multi_label", y, proba)
    assert (math.isnan(ba) and math.isnan(expected_ba)) or ba == pytest.approx(expected_ba)
    if (~np.isnan(y)).any():
        assert M.brier("multi_label", y, proba) == pytest.approx(sk_brier("multi_label", y, proba))
        assert M.nll("multi_label", y, proba) == pytest.approx(sk_nll("multi_label", y, proba))
        assert calibration.ece("multi_label", y, proba, 4) == pytest.approx(
            naive_ece("multi_label", y, proba, 4), abs=1e-12
        )
        assert calibration.ece_adaptive("multi_label", y, proba, 4) == pytest.approx(
            naive_ece("multi_label", y, proba, 4, adaptive=True), abs=1e-12
        )
    else:
        assert math.isnan(M.brier("multi_label", y, proba))


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    k=st.integers(2, 5),
    levels=st.integers(1, 3),
)
def test_single_label_against_sklearn_with_ties(seed, n, k, levels):
    # Integer logits give tied probabilities across examples and tied argmaxes.
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    proba = softmax(rng.integers(0, levels + 1, size=(n, k)).astype(float))

    np.testing.assert_allclose(
        M.auroc_per_class("ordinal", y, proba), sk_auroc_per_class("ordinal", y, proba), atol=1e-12
    )
    assert M.balanced_accuracy("ordinal", y, proba) == pytest.approx(
        sk_balanced_accuracy("ordinal", y, proba)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected_kappa = cohen_kappa_score(
            y, proba.argmax(axis=1), weights="quadratic", labels=list(range(k))
        )
    kappa = M.quadratic_kappa(y, proba)
    assert (math.isnan(kappa) and math.isnan(expected_kappa)) or kappa == pytest.approx(
        expected_kappa
    )
    assert M.brier("ordinal", y, proba) == pytest.approx(sk_brier("ordinal", y, proba))
    assert M.nll("ordinal", y, proba) == pytest.approx(sk_nll("ordinal", y, proba))
    for adaptive in (False, True):
        fn = calibration.ece_adaptive if adaptive else calibration.ece
        assert fn("ordinal", y, proba, 5) == pytest.approx(
            naive_ece("ordinal", y, proba, 5, adaptive=adaptive), abs=1e-12
        )


# --------------------------------------------------------------------------- edge cases


def test_class_absent_from_test_set():
    y, proba = make_single(7, n=200, k=4)
    y = np.where(y == 2, 3, y)  # class 2 never occurs
    per_class = M.auroc_per_class("single_label", y, proba)
    assert math.isnan(per_class[2])
    assert not np.isnan(per_class[[0, 1, 3]]).any()
    present = [roc_auc_score((y == c).astype(int), proba[:, c]) for c in (0, 1, 3)]
    assert M.auroc_macro("single_label", y, proba) == pytest.approx(np.mean(present), abs=1e-12)
    # NLL still defined for the absent class (sklearn needs labels=range(k) for this).
    assert M.nll("single_label", y, proba) == pytest.approx(
        log_loss(y, proba, labels=[0, 1, 2, 3]), abs=1e-12
    )
    assert M.positives_per_class("single_label", y, 4)[2] == 0


def test_class_with_all_examples_positive_is_undefined():
    proba = softmax(np.random.default_rng(0).normal(size=(10, 3)))
    per_class = M.auroc_per_class("single_label", np.zeros(10, dtype=int), proba)
    assert np.isnan(per_class).all()
    assert math.isnan(M.auroc_macro("single_label", np.zeros(10, dtype=int), proba))


@pytest.mark.parametrize("task_type", SINGLE_TYPES)
def test_perfect_separation_single(task_type):
    y = np.array([0, 1, 2, 0, 1, 2, 2])
    proba = np.full((7, 3), 0.05)
    proba[np.arange(7), y] = 0.9
    np.testing.assert_array_equal(M.auroc_per_class(task_type, y, proba), [1.0, 1.0, 1.0])
    assert M.balanced_accuracy(task_type, y, proba) == 1.0
    assert M.quadratic_kappa(y, proba) == pytest.approx(1.0)


def test_perfect_separation_multi():
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=float)
    proba = np.where(y == 1, 0.8, 0.2)
    np.testing.assert_array_equal(M.auroc_per_class("multi_label", y, proba), [1.0, 1.0])
    assert M.balanced_accuracy("multi_label", y, proba) == 1.0
    # Fully inverted scores give 0, not 1: the direction matters.
    np.testing.assert_array_equal(M.auroc_per_class("multi_label", y, 1 - proba), [0.0, 0.0])
    assert M.balanced_accuracy("multi_label", y, 1 - proba) == 0.0


@pytest.mark.parametrize("task_type", ALL_TYPES)
def test_constant_scores_give_half(task_type):
    y, proba = make_data(task_type, 3, n=50)
    constant = np.full_like(proba, 1.0 / proba.shape[1] if task_type != "multi_label" else 0.3)
    np.testing.assert_array_equal(M.auroc_per_class(task_type, y, constant), 0.5)


def test_ties_hand_computed():
    # Pairs (neg, pos): (.1,.5)=1, (.1,.9)=1, (.5,.5)=1/2, (.5,.9)=1  ->  3.5 / 4
    y = np.array([[0], [0], [1], [1]], dtype=float)
    proba = np.array([[0.1], [0.5], [0.5], [0.9]])
    assert M.auroc_per_class("multi_label", y, proba)[0] == 0.875


def test_multi_label_column_without_positives_is_excluded():
    y, proba = make_multi(11, n=100, k=4, mask_fraction=0.1)
    y[:, 1] = np.where(np.isnan(y[:, 1]), np.nan, 0.0)  # no positives
    y[:, 3] = np.nan  # nothing observed at all
    per_class = M.auroc_per_class("multi_label", y, proba)
    assert math.isnan(per_class[1]) and math.isnan(per_class[3])
    expected = [roc_auc_score(y[~np.isnan(y[:, c]), c], proba[~np.isnan(y[:, c]), c]) for c in (0, 2)]
    assert M.auroc_macro("multi_label", y, proba) == pytest.approx(np.mean(expected), abs=1e-12)
    # Balanced accuracy skips the one-class label; Brier/NLL/ECE still use it (they are
    # defined with one class) but skip the fully masked one.
    assert M.balanced_accuracy("multi_label", y, proba) == pytest.approx(
        sk_balanced_accuracy("multi_label", y, proba)
    )
    assert M.brier("multi_label", y, proba) == pytest.approx(sk_brier("multi_label", y, proba))
    assert M.nll("multi_label", y, proba) == pytest.approx(sk_nll("multi_label", y, proba))
    assert calibration.ece("multi_label", y, proba) == pytest.approx(naive_ece("multi_label", y, proba, 15))
    result = M.evaluate("multi_label", y, proba)
    assert result["auroc_per_class"][1] is None and result["auroc_per_class"][3] is None
    assert result["positives_eval"][1] == 0 and result["positives_eval"][3] == 0


def test_masked_entries_equal_sklearn_on_unmasked_subset_and_are_ignored():
    y, proba = make_multi(5, n=150, k=3, mask_fraction=0.4)
    masked = np.isnan(y)
    # Rewriting probabilities under the mask must change nothing.
    scrambled = np.where(masked, np.random.default_rng(1).random(proba.shape), proba)
    for name in ("auroc_macro", "balanced_accuracy", "ece", "ece_adaptive", "ece_classwise", "brier", "nll"):
        fn = getattr(M, name)
        assert fn("multi_label", y, proba) == pytest.approx(fn("multi_label", y, scrambled), abs=1e-12), name
    for c in range(3):
        keep = ~masked[:, c]
        assert M.auroc_per_class("multi_label", y, proba)[c] == pytest.approx(
            roc_auc_score(y[keep, c], proba[keep, c]), abs=1e-12
        )
    # Sanity: the mask really hides entries that would matter if treated as negatives.
    filled = np.where(masked, 0.0, y)
    assert M.auroc_macro("multi_label", filled, proba) != pytest.approx(
        M.auroc_macro("multi_label", y, proba), abs=1e-6
    )


def test_perfectly_calibrated_ece_near_zero_and_miscalibrated_not():
    rng = np.random.default_rng(0)
    n = 40_000
    # Multi-label: outcome ~ Bernoulli(p).
    p = rng.random((n, 2))
    y = (rng.random((n, 2)) < p).astype(float)
    assert calibration.ece("multi_label", y, p) < 0.015
    assert calibration.ece_adaptive("multi_label", y, p) < 0.015
    overconfident = np.clip((p - 0.5) * 1.8 + 0.5, 0, 1)
    assert calibration.ece("multi_label", y, overconfident) > 0.05
    # Single-label: label drawn from the predicted distribution.
    proba = softmax(rng.normal(size=(n, 3)) * 2.0)
    labels = (rng.random((n, 1)) > proba.cumsum(axis=1)).sum(axis=1)
    assert calibration.ece("single_label", labels, proba) < 0.015
    assert calibration.ece_adaptive("single_label", labels, proba) < 0.015
    assert calibration.ece_classwise("single_label", labels, proba) < 0.015
    sharpened = softmax(np.log(proba) * 3.0)
    assert calibration.ece("single_label", labels, sharpened) > 0.05
    assert calibration.ece_classwise("single_label", labels, sharpened) > 0.05


def test_ece_bin_edges_are_right_closed_and_zero_goes_first():
    # n_bins=4: edges 0.25, 0.5, 0.75 are exact in binary floating point.
    y = np.array([[1.0], [0.0]])
    # Right-closed: 0.25 alone in (0, .25], 0.3 alone in (.25, .5] -> .5*.75 + .5*.3
    assert calibration.ece("multi_label", y, np.array([[0.25], [0.3]]), n_bins=4) == pytest.approx(0.525)
    # Left-closed binning would have pooled them: .5 - .275 = .225.
    # Zero shares the first bin with 0.1: mean conf .05, mean outcome .5.
    assert calibration.ece("multi_label", y, np.array([[0.0], [0.1]]), n_bins=4) == pytest.approx(0.45)
    # Separate bins would give .5 * 1 + .5 * .1 = .55.
    # p = 1 lands alone in the last bin (error 0), 0.7 alone in (.5, .75]: .5 * .7
    assert calibration.ece("multi_label", y, np.array([[1.0], [0.7]]), n_bins=4) == pytest.approx(0.35)


def test_ece_adaptive_with_fewer_examples_than_bins():
    y = np.array([0, 1, 1])
    proba = np.array([[0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    assert calibration.ece_adaptive("single_label", y, proba, n_bins=15) == pytest.approx(
        naive_ece("single_label", y, proba, 15, adaptive=True)
    )
    # Each example in its own bin: mean |correct - confidence| = (.4 + .3 + .2) / 3
    assert calibration.ece_adaptive("single_label", y, proba, n_bins=15) == pytest.approx(0.3)


def test_ece_classwise_is_ece_for_multi_label():
    y, proba = make_multi(2)
    assert calibration.ece_classwise("multi_label", y, proba) == calibration.ece("multi_label", y, proba)


def test_kappa_degenerate_is_nan():
    y = np.zeros(6, dtype=int)
    proba = np.tile([0.7, 0.2, 0.1], (6, 1))
    assert math.isnan(M.quadratic_kappa(y, proba))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns on this degenerate input
        assert math.isnan(cohen_kappa_score(y, proba.argmax(1), weights="quadratic"))


def test_kappa_uses_grade_distance_even_when_a_grade_is_absent():
    # Grade 2 of 0..3 never occurs. sklearn without labels= re-indexes {0, 1, 3} as
    # {0, 1, 2}, so a 0<->3 confusion weighs 4 instead of 9; we keep grade distances.
    y = np.array([0, 0, 1, 1, 3, 3, 3, 0])
    pred = np.array([0, 3, 1, 0, 3, 1, 3, 0])
    proba = np.full((8, 4), 0.1)
    proba[np.arange(8), pred] = 0.7
    ours = M.quadratic_kappa(y, proba)
    assert ours == pytest.approx(
        cohen_kappa_score(y, pred, weights="quadratic", labels=[0, 1, 2, 3]), abs=1e-12
    )
    assert ours != pytest.approx(cohen_kappa_score(y, pred, weights="quadratic"), abs=1e-3)


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("task_type", ["single_label", "ordinal"])
def test_brier_is_sklearns_default_value(task_type, k):
    """Binary: sklearn's brier_score_loss of the positive column; more classes: its multi-class sum."""
    y, proba = make_single(0, k=k)
    ours = M.brier(task_type, y, proba)
    assert ours == pytest.approx(brier_score_loss(y, proba, labels=list(range(k))), abs=1e-12)
    if k == 2:
        assert ours == pytest.approx(brier_score_loss(y, proba[:, 1]), abs=1e-12)
        assert 0.0 <= ours <= 1.0
    assert 0.0 <= ours <= 2.0


def test_brier_range_extremes():
    y = np.array([0, 1])
    assert M.brier("single_label", y, np.array([[1.0, 0.0], [0.0, 1.0]])) == 0.0
    assert M.brier("single_label", y, np.array([[0.0, 1.0], [1.0, 0.0]])) == 1.0  # binary: range [0, 1]
    y3 = np.array([0, 1])
    assert M.brier("single_label", y3, np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])) == 2.0


def test_binary_auroc_is_the_positive_columns_even_with_ties_from_one_minus_p():
    """1 - p in float can tie where p does not: the mean of both columns then differs from the standard."""
    from sklearn.metrics import roc_auc_score

    p = np.array([1e-17, 2e-17, 0.3, 0.6, 0.7, 0.9])  # 1 - p: 1.0 twice
    y = np.array([0, 1, 1, 0, 1, 0])
    proba = np.stack([1 - p, p], axis=1)
    assert np.unique(proba[:, 0]).size < np.unique(p).size  # 1 - p created a tie
    expected = roc_auc_score(y, p)
    assert M.auroc_macro("single_label", y, proba) == pytest.approx(expected, abs=1e-12)
    assert M.evaluate("single_label", y, proba)["auroc"] == pytest.approx(expected, abs=1e-12)
    per_class = M.auroc_per_class("single_label", y, proba)
    assert per_class.mean() != pytest.approx(expected, abs=1e-6)  # the old convention was off here


@pytest.mark.parametrize("task_type", ALL_TYPES)
def test_nll_with_exact_zero_and_one_probabilities_matches_sklearn_clipping(task_type):
    if task_type == "multi_label":
        y = np.array([[1.0, 0.0], [0.0, np.nan], [1.0, 1.0]])
        proba = np.array([[0.0, 1.0], [1.0, 0.5], [1.0, 0.2]])
    else:
        y = np.array([0, 1, 2])
        proba = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])
    got = M.nll(task_type, y, proba)
    assert math.isfinite(got) and got > 20  # a confidently wrong 0 is heavily penalised
    assert got == pytest.approx(sk_nll(task_type, y, proba), rel=1e-12)
    # A larger eps penalises less.
    assert M.nll(task_type, y, proba, eps=1e-6) < got


def test_evaluate_returns_exact_keys_and_types():
    y, proba = make_single(1, k=3)
    result = M.evaluate("ordinal", y, proba)
    assert set(result) == {
        "auroc", "auroc_per_class", "balanced_accuracy", "kappa_quadratic", "ece",
        "ece_adaptive", "ece_classwise", "brier", "nll", "n_eval", "positives_eval",
    }
    assert result["n_eval"] == 300 and isinstance(result["n_eval"], int)
    assert result["positives_eval"] == np.bincount(y, minlength=3).tolist()
    assert all(type(v) is float for v in result["auroc_per_class"])
    assert result["auroc"] == pytest.approx(M.auroc_macro("ordinal", y, proba))
    assert result["kappa_quadratic"] == pytest.approx(M.quadratic_kappa(y, proba))
    assert result["nll"] == pytest.approx(log_loss(y, proba))
    for key in ("auroc", "balanced_accuracy", "ece", "ece_adaptive", "ece_classwise", "brier", "nll"):
        assert type(result[key]) is float, key
    assert M.evaluate("single_label", y, proba)["kappa_quadratic"] is None
    multi = M.evaluate("multi_label", *make_multi(1))
    assert multi["kappa_quadratic"] is None and len(multi["auroc_per_class"]) == 5


def test_positives_per_class():
    assert M.positives_per_class("single_label", np.array([0, 2, 2]), 4) == [1, 0, 2, 0]
    y = np.array([[1, np.nan], [1, 0], [np.nan, 1]])
    assert M.positives_per_class("multi_label", y, 2) == [2, 1]


# --------------------------------------------------------------------------- validation


GOOD_PROBA = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])


@pytest.mark.parametrize(
    "task_type, y, proba, message",
    [
        ("binary", np.array([0, 1, 0]), GOOD_PROBA, "unknown task_type"),
        ("single_label", np.array([0, 1]), GOOD_PROBA, "shape mismatch"),
        ("single_label", np.array([[0], [1], [0]]), GOOD_PROBA, "shape mismatch"),
        ("multi_label", np.array([[0, 1]] * 3, dtype=float)[:, :1], GOOD_PROBA, "shape mismatch"),
        ("single_label", np.array([0, 2, 1]), GOOD_PROBA, "label out of range"),
        ("ordinal", np.array([0, -1, 1]), GOOD_PROBA, "label out of range"),
        ("single_label", np.array([0, 1, 0]), np.array([[0.2, 0.8], [np.nan, 0.4], [0.5, 0.5]]), "NaN"),
        ("multi_label", np.zeros((3, 2)), np.array([[0.2, 1.2], [0.6, 0.4], [0.5, 0.5]]), r"\[0, 1\]"),
        ("multi_label", np.zeros((3, 2)), np.array([[0.2, -0.1], [0.6, 0.4], [0.5, 0.5]]), r"\[0, 1\]"),
        ("multi_label", np.zeros((3, 2)), np.array([[0.2, np.inf], [0.6, 0.4], [0.5, 0.5]]), r"\[0, 1\]"),
        ("single_label", np.array([0, 1, 0]), np.array([[0.2, 0.2], [0.6, 0.4], [0.5, 0.5]]), "sum to 1"),
        ("multi_label", np.array([[0, 2], [1, 0], [0, 0]], dtype=float), GOOD_PROBA, "0, 1 or NaN"),
        ("single_label", np.array([0.0, np.nan, 1.0]), GOOD_PROBA, "NaN"),
        ("single_label", np.array([0.0, 0.5, 1.0]), GOOD_PROBA, "integer"),
        ("single_label", np.array([0, 1, 0]), np.array([0.2, 0.6, 0.5]), "2-D"),
        ("single_label", np.array([], dtype=int), np.zeros((0, 2)), "no examples"),
    ],
)
def test_invalid_inputs_raise_clear_value_errors(task_type, y, proba, message):
    with pytest.raises(ValueError, match=message):
        M.evaluate(task_type, y, proba)


@pytest.mark.parametrize(
    "fn", [M.auroc_per_class, M.balanced_accuracy, calibration.ece, calibration.ece_adaptive, calibration.ece_classwise, M.brier, M.nll]
)
def test_every_metric_validates(fn):
    with pytest.raises(ValueError, match="label out of range"):
        fn("single_label", np.array([0, 5, 1]), GOOD_PROBA)
    with pytest.raises(ValueError, match="label out of range"):
        M.quadratic_kappa(np.array([0, 5, 1]), GOOD_PROBA)


@pytest.mark.parametrize("n_bins", [0, -3, 2.5, True])
def test_invalid_n_bins(n_bins):
    with pytest.raises(ValueError, match="n_bins"):
        calibration.ece("single_label", np.array([0, 1, 0]), GOOD_PROBA, n_bins=n_bins)
