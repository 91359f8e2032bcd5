"""Evaluation metrics for linear probes: discrimination and proper scores here, calibration in
``metrics/calibration.py``, the input checks in ``metrics/validation.py``; ``evaluate`` gathers them all.

Pure functions: numpy arrays in, Python numbers (or one numpy array) out, no I/O.

Conventions shared by every function
------------------------------------
``task_type`` is one of ``"single_label"``, ``"multi_label"``, ``"ordinal"``.

* single_label / ordinal: ``y_true`` is an int array ``[n]`` with values in
  ``0..k-1``; ``proba`` is a float array ``[n, k]`` whose rows sum to 1 (softmax).
* multi_label: ``y_true`` is a float array ``[n, k]`` with values in ``{0, 1, NaN}``;
  NaN marks a masked entry, which every metric ignores for that (example, label)
  pair. ``proba`` is ``[n, k]`` of independent sigmoid probabilities.

Multi-label metrics are computed per label on the unmasked entries and then
averaged over labels (macro), so that a rare label counts as much as a common one.

Undefined values are NaN (e.g. AUROC of a class absent from ``y_true``);
``evaluate`` turns per-class NaNs into ``None`` for JSON-friendly output.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import rankdata

from crsbench.core.vocabulary import TASK_TYPES
from crsbench.metrics.calibration import (
    ece,
    ece_adaptive,
    ece_classwise,
)
from crsbench.metrics.validation import (
    binary_targets,
    is_multi_label,
    nanmean_or_nan,
    one_hot,
    validate_inputs,
    validate_n_bins,
)

# Same clipping as sklearn>=1.5 log_loss on float64 input (it clips to the machine
# epsilon of the probability dtype). A fixed float64 value keeps NLL independent of
# whether a probe happened to emit float32 or float64 probabilities.
NLL_CLIP_EPS = float(np.finfo(np.float64).eps)

# Threshold for turning a sigmoid probability into a multi-label prediction.
MULTI_LABEL_THRESHOLD = 0.5


# --------------------------------------------------------------------------- AUROC


def auroc_per_class(task_type: str, y_true, proba) -> np.ndarray:
    """One-vs-rest AUROC per class (single_label/ordinal) or per label (multi_label).

    Computed as the Mann-Whitney U statistic from average ranks, so tied scores
    count 1/2 (identical to sklearn's roc_auc_score; constant scores give 0.5).
    NaN where undefined: no positives or no negatives among the observed entries.
    """
    y, proba = validate_inputs(task_type, y_true, proba)
    targets, observed = binary_targets(task_type, y, proba.shape[1])

    # Masked entries are pushed above every real score: ranks of the observed
    # entries then equal their ranks among observed entries only, which lets all
    # columns be ranked in one vectorised call.
    scores = np.where(observed, proba, np.inf)
    ranks = rankdata(scores, axis=0, method="average")

    positives = (targets == 1.0) & observed
    n_pos = positives.sum(axis=0).astype(np.float64)
    n_neg = observed.sum(axis=0) - n_pos
    positive_rank_sum = np.where(positives, ranks, 0.0).sum(axis=0)
    u_statistic = positive_rank_sum - n_pos * (n_pos + 1.0) / 2.0

    defined = (n_pos > 0) & (n_neg > 0)
    auroc = np.full(proba.shape[1], np.nan)
    auroc[defined] = u_statistic[defined] / (n_pos[defined] * n_neg[defined])
    return auroc


def _is_binary(task_type: str, proba: np.ndarray) -> bool:
    return not is_multi_label(task_type) and proba.shape[1] == 2


def _summary_auroc(task_type: str, per_class: np.ndarray) -> float:
    """Binary: the positive column's AUROC (the standard value; averaging in 1 - p can differ through ties).
    Otherwise the mean over the classes / labels where it is defined."""
    if not is_multi_label(task_type) and len(per_class) == 2:
        return float(per_class[1])
    return nanmean_or_nan(per_class)


def auroc_macro(task_type: str, y_true, proba) -> float:
    """Binary single-label: AUROC of the positive column (sklearn's ``roc_auc_score(y, proba[:, 1])``).
    Otherwise the mean of ``auroc_per_class`` over the classes where it is defined; NaN if none."""
    return _summary_auroc(task_type, auroc_per_class(task_type, y_true, proba))


# --------------------------------------------------------------------------- accuracy-type


def balanced_accuracy(task_type: str, y_true, proba) -> float:
    """Balanced accuracy of hard predictions.

    single_label/ordinal: mean recall of argmax predictions over the classes present
    in ``y_true`` (= sklearn.metrics.balanced_accuracy_score).
    multi_label: per label, (TPR + TNR) / 2 of ``p >= 0.5`` on observed entries,
    averaged over labels that have both a positive and a negative; NaN if none.
    """
    y, proba = validate_inputs(task_type, y_true, proba)
    k = proba.shape[1]

    if not is_multi_label(task_type):
        predicted = proba.argmax(axis=1)
        confusion = np.bincount(y * k + predicted, minlength=k * k).reshape(k, k)
        support = confusion.sum(axis=1)
        present = support > 0
        return float((np.diag(confusion)[present] / support[present]).mean())

    observed = ~np.isnan(y)
    predicted_positive = proba >= MULTI_LABEL_THRESHOLD
    positives = observed & (y == 1.0)
    negatives = observed & (y == 0.0)
    n_pos = positives.sum(axis=0)
    n_neg = negatives.sum(axis=0)
    both_classes = (n_pos > 0) & (n_neg > 0)
    if not both_classes.any():
        return math.nan
    true_positive_rate = (predicted_positive & positives).sum(axis=0) / np.maximum(n_pos, 1)
    true_negative_rate = (~predicted_positive & negatives).sum(axis=0) / np.maximum(n_neg, 1)
    per_label = (true_positive_rate + true_negative_rate) / 2.0
    return float(per_label[both_classes].mean())


def quadratic_kappa(y_true, proba) -> float:
    """Quadratic weighted Cohen kappa between ``y_true`` and argmax predictions.

    Weights are ``(i - j)**2`` over all k classes (the class index is the ordinal
    grade). This equals sklearn's ``cohen_kappa_score(y, pred, weights="quadratic",
    labels=range(k))``; without ``labels`` sklearn re-indexes only the classes that
    occur, which shrinks distances when an intermediate grade is absent.
    Returns NaN when the chance-expected disagreement is zero (all labels and all
    predictions are the same single class), where kappa is 0/0.
    """
    y, proba = validate_inputs("ordinal", y_true, proba)
    n, k = proba.shape
    predicted = proba.argmax(axis=1)
    confusion = np.bincount(y * k + predicted, minlength=k * k).reshape(k, k).astype(np.float64)
    grades = np.arange(k, dtype=np.float64)
    weights = (grades[:, None] - grades[None, :]) ** 2
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / n
    expected_disagreement = float((weights * expected).sum())
    if expected_disagreement == 0.0:  # exact: it is a sum of non-negative terms
        return math.nan
    return float(1.0 - (weights * confusion).sum() / expected_disagreement)


# --------------------------------------------------------------------------- proper scores


def brier(task_type: str, y_true, proba) -> float:
    """Brier score, in the convention a reader will compare with the literature.

    Two classes: the standard binary Brier score ``mean_i (p_i1 - y_i)**2`` of the
    positive column, range [0, 1]; equal to sklearn's ``brier_score_loss(y, proba[:, 1])``.
    More than two classes (single_label/ordinal): ``mean_i sum_c (p_ic - onehot_ic)**2``,
    the original multi-class Brier score, range [0, 2]; equal to sklearn>=1.7
    ``brier_score_loss(y, proba, labels=range(k))``.
    multi_label: per label, the binary Brier score on unmasked entries, averaged over
    labels with any unmasked entry.
    """
    y, proba = validate_inputs(task_type, y_true, proba)
    if _is_binary(task_type, proba):
        return float(((proba[:, 1] - (y == 1)) ** 2).mean())
    if not is_multi_label(task_type):
        return float(((proba - one_hot(y, proba.shape[1])) ** 2).sum(axis=1).mean())
    observed = ~np.isnan(y)
    squared_error = np.where(observed, (proba - np.where(observed, y, 0.0)) ** 2, 0.0)
    return _per_label_mean(squared_error, observed)


def nll(task_type: str, y_true, proba, eps: float = NLL_CLIP_EPS) -> float:
    """Mean negative log-likelihood (log loss, natural log).

    Probabilities are clipped to ``[eps, 1 - eps]`` before the log, as
    sklearn.metrics.log_loss does (it uses the float64 machine epsilon, the default
    here), so a confidently wrong 0 costs about 36 nats rather than infinity.
    single_label/ordinal: ``-mean log p_{i, y_i}``.
    multi_label: per label, binary log loss on unmasked entries, averaged over labels
    with any unmasked entry.
    """
    y, proba = validate_inputs(task_type, y_true, proba)
    if not (0.0 <= eps < 0.5):
        raise ValueError(f"eps must be in [0, 0.5); got {eps!r}")
    if not is_multi_label(task_type):
        p_true_class = np.clip(proba[np.arange(y.shape[0]), y], eps, 1.0 - eps)
        return float(-np.log(p_true_class).mean())
    observed = ~np.isnan(y)
    target = np.where(observed, y, 0.0)
    # 1 - p is formed before clipping, as sklearn does for a 1-D positive-class input.
    log_likelihood = target * np.log(np.clip(proba, eps, 1.0 - eps)) + (1.0 - target) * np.log(
        np.clip(1.0 - proba, eps, 1.0 - eps)
    )
    return _per_label_mean(np.where(observed, -log_likelihood, 0.0), observed)


def _per_label_mean(values: np.ndarray, observed: np.ndarray) -> float:
    """Mean of ``values`` over observed rows per column, then mean over columns with any."""
    counts = observed.sum(axis=0)
    has_entries = counts > 0
    if not has_entries.any():
        return math.nan
    return float((values.sum(axis=0)[has_entries] / counts[has_entries]).mean())


# --------------------------------------------------------------------------- summary


def positives_per_class(task_type: str, y_true, k: int) -> list[int]:
    """Number of positive examples per class (single/ordinal) or per label (multi, unmasked)."""
    if task_type not in TASK_TYPES:
        raise ValueError(f"unknown task_type {task_type!r}; expected one of {TASK_TYPES}")
    y = np.asarray(y_true)
    if is_multi_label(task_type):
        y = y.astype(np.float64, copy=False)
        if y.ndim != 2 or y.shape[1] != k:
            raise ValueError(f"shape mismatch: multi_label y_true must be [n, {k}]; got {y.shape}")
        return [int(count) for count in (y == 1.0).sum(axis=0)]
    if y.ndim != 1:
        raise ValueError(f"shape mismatch: {task_type} y_true must be 1-D; got {y.shape}")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= k):
        raise ValueError(f"label out of range: labels must be in 0..{k - 1}")
    return [int(count) for count in np.bincount(y, minlength=k)]


def _float_or_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def evaluate(task_type: str, y_true, proba, n_bins: int = 15) -> dict:
    """All metrics for one (task, predictions) pair.

    Keys: auroc, auroc_per_class (None where undefined), balanced_accuracy,
    kappa_quadratic (None unless ordinal), ece, ece_adaptive, ece_classwise, brier,
    nll, n_eval, positives_eval. Scalar metrics that are undefined stay float NaN.
    """
    y, proba = validate_inputs(task_type, y_true, proba)
    n_bins = validate_n_bins(n_bins)
    per_class = auroc_per_class(task_type, y, proba)
    return {
        "auroc": _summary_auroc(task_type, per_class),
        "auroc_per_class": [_float_or_none(value) for value in per_class],
        "balanced_accuracy": balanced_accuracy(task_type, y, proba),
        "kappa_quadratic": quadratic_kappa(y, proba) if task_type == "ordinal" else None,
        "ece": ece(task_type, y, proba, n_bins),
        "ece_adaptive": ece_adaptive(task_type, y, proba, n_bins),
        "ece_classwise": ece_classwise(task_type, y, proba, n_bins),
        "brier": brier(task_type, y, proba),
        "nll": nll(task_type, y, proba),
        "n_eval": int(proba.shape[0]),
        "positives_eval": positives_per_class(task_type, y, proba.shape[1]),
    }
