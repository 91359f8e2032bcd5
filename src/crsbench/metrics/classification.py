"""Evaluation metrics for linear probes: discrimination, calibration and proper scores.

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

# Same clipping as sklearn>=1.5 log_loss on float64 input (it clips to the machine
# epsilon of the probability dtype). A fixed float64 value keeps NLL independent of
# whether a probe happened to emit float32 or float64 probabilities.
NLL_CLIP_EPS = float(np.finfo(np.float64).eps)

# Softmax rows computed in float32/float16 do not sum to exactly 1.
_ROW_SUM_ATOL = 1e-3

# Threshold for turning a sigmoid probability into a multi-label prediction.
MULTI_LABEL_THRESHOLD = 0.5


# --------------------------------------------------------------------------- validation


def _is_multi_label(task_type: str) -> bool:
    return task_type == "multi_label"


def _validate(task_type: str, y_true, proba) -> tuple[np.ndarray, np.ndarray]:
    """Check inputs and return ``(y_true, proba)`` as float64 / int64 arrays.

    Raises ValueError with a message naming the problem; callers never get a silent
    broadcast or a NaN metric caused by malformed input.
    """
    if task_type not in TASK_TYPES:
        raise ValueError(f"unknown task_type {task_type!r}; expected one of {TASK_TYPES}")

    proba = np.asarray(proba)
    if proba.ndim != 2:
        raise ValueError(f"proba must be 2-D [n, k]; got shape {proba.shape}")
    if not (np.issubdtype(proba.dtype, np.floating) or np.issubdtype(proba.dtype, np.integer)):
        raise ValueError(f"proba must be numeric; got dtype {proba.dtype}")
    proba = proba.astype(np.float64, copy=False)
    n, k = proba.shape
    if n == 0:
        raise ValueError("proba has no examples (n == 0)")
    if np.isnan(proba).any():
        raise ValueError(f"proba contains {int(np.isnan(proba).sum())} NaN value(s)")
    if proba.min() < 0.0 or proba.max() > 1.0:
        raise ValueError(
            f"proba values must lie in [0, 1]; got min {proba.min()!r}, max {proba.max()!r}"
        )

    y = np.asarray(y_true)
    if _is_multi_label(task_type):
        if y.shape != proba.shape:
            raise ValueError(
                f"shape mismatch: multi_label y_true must have the shape of proba "
                f"{proba.shape}; got {y.shape}"
            )
        if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            raise ValueError(f"multi_label y_true must be numeric; got dtype {y.dtype}")
        y = y.astype(np.float64, copy=False)
        observed = y[~np.isnan(y)]
        bad = observed[(observed != 0.0) & (observed != 1.0)]
        if bad.size:
            raise ValueError(
                f"multi_label y_true values must be 0, 1 or NaN (masked); found {bad[0]!r}"
            )
        return y, proba

    # single_label / ordinal
    if k < 2:
        raise ValueError(f"{task_type} needs proba with at least 2 columns; got k={k}")
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(
            f"shape mismatch: {task_type} y_true must have shape ({n},) to match proba "
            f"{proba.shape}; got {y.shape}"
        )
    if y.dtype == bool:
        y = y.astype(np.int64)
    elif np.issubdtype(y.dtype, np.floating):
        if np.isnan(y).any():
            raise ValueError(f"{task_type} y_true contains NaN; masking is multi_label only")
        if not np.all(y == np.round(y)):
            raise ValueError(f"{task_type} y_true must hold integer class indices")
        y = y.astype(np.int64)
    elif np.issubdtype(y.dtype, np.integer):
        y = y.astype(np.int64, copy=False)
    else:
        raise ValueError(f"{task_type} y_true must be integer class indices; got {y.dtype}")
    if y.min() < 0 or y.max() >= k:
        offending = int(y.min()) if y.min() < 0 else int(y.max())
        raise ValueError(
            f"label out of range: found class {offending} but proba has k={k} columns "
            f"(valid 0..{k - 1})"
        )
    worst_row_error = float(np.abs(proba.sum(axis=1) - 1.0).max())
    if worst_row_error > _ROW_SUM_ATOL:
        raise ValueError(
            f"{task_type} proba rows must sum to 1 (softmax output); "
            f"largest deviation is {worst_row_error:.3g}"
        )
    return y, proba


def _validate_n_bins(n_bins) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins!r}")
    return int(n_bins)


def _one_hot(y: np.ndarray, k: int) -> np.ndarray:
    encoded = np.zeros((y.shape[0], k), dtype=np.float64)
    encoded[np.arange(y.shape[0]), y] = 1.0
    return encoded


def _binary_targets(task_type: str, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(targets [n, k] in {0,1}, observed mask [n, k])`` for one-vs-rest views.

    Single-label/ordinal become one-hot with nothing masked; multi-label keeps its
    NaN mask (masked targets are set to 0 but must be ignored via the mask).
    """
    if _is_multi_label(task_type):
        observed = ~np.isnan(y)
        return np.where(observed, y, 0.0), observed
    return _one_hot(y, k), np.ones((y.shape[0], k), dtype=bool)


def _nanmean_or_nan(values: np.ndarray) -> float:
    # np.nanmean warns on an all-NaN slice; "nothing defined" is a normal outcome here.
    values = np.asarray(values, dtype=np.float64)
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else math.nan


# --------------------------------------------------------------------------- AUROC


def auroc_per_class(task_type: str, y_true, proba) -> np.ndarray:
    """One-vs-rest AUROC per class (single_label/ordinal) or per label (multi_label).

    Computed as the Mann-Whitney U statistic from average ranks, so tied scores
    count 1/2 (identical to sklearn's roc_auc_score; constant scores give 0.5).
    NaN where undefined: no positives or no negatives among the observed entries.
    """
    y, proba = _validate(task_type, y_true, proba)
    targets, observed = _binary_targets(task_type, y, proba.shape[1])

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
    return not _is_multi_label(task_type) and proba.shape[1] == 2


def _summary_auroc(task_type: str, per_class: np.ndarray) -> float:
    """Binary: the positive column's AUROC (the standard value; averaging in 1 - p can differ through ties).
    Otherwise the mean over the classes / labels where it is defined."""
    if not _is_multi_label(task_type) and len(per_class) == 2:
        return float(per_class[1])
    return _nanmean_or_nan(per_class)


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
    y, proba = _validate(task_type, y_true, proba)
    k = proba.shape[1]

    if not _is_multi_label(task_type):
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
    y, proba = _validate("ordinal", y_true, proba)
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


# --------------------------------------------------------------------------- calibration


def _equal_width_bin_index(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin of each confidence for equal-width bins ``(0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]``.

    Bins are closed on the right; ``p == 0`` goes to the first bin. Edges are
    ``b / B`` exactly (not linspace's accumulated step), so a value equal to an edge
    falls in the lower bin.
    """
    inner_edges = np.arange(1, n_bins) / n_bins
    return np.searchsorted(inner_edges, confidence, side="left")


def _equal_mass_bin_index(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin of each confidence for equal-mass bins: sort, then ``np.array_split`` into B groups.

    A stable sort keeps the assignment of tied confidences deterministic. With fewer
    examples than bins, the trailing groups are empty and contribute nothing.
    """
    order = np.argsort(confidence, kind="stable")
    bin_index = np.empty(confidence.shape[0], dtype=np.int64)
    for bin_number, members in enumerate(np.array_split(order, n_bins)):
        bin_index[members] = bin_number
    return bin_index


def _binned_calibration_error(
    confidence: np.ndarray, outcome: np.ndarray, bin_index: np.ndarray, n_bins: int
) -> float:
    """``sum_b (n_b / n) * |mean(outcome_b) - mean(confidence_b)|``.

    Written as ``sum_b |sum(outcome_b) - sum(confidence_b)| / n`` so empty bins need
    no special case.
    """
    outcome_sum = np.bincount(bin_index, weights=outcome, minlength=n_bins)
    confidence_sum = np.bincount(bin_index, weights=confidence, minlength=n_bins)
    return float(np.abs(outcome_sum - confidence_sum).sum() / confidence.shape[0])


_BINNINGS = {"equal_width": _equal_width_bin_index, "equal_mass": _equal_mass_bin_index}


def _calibration_error(
    confidence: np.ndarray, outcome: np.ndarray, n_bins: int, binning: str
) -> float:
    bin_index = _BINNINGS[binning](confidence, n_bins)
    return _binned_calibration_error(confidence, outcome, bin_index, n_bins)


def _mean_binary_calibration_error(
    task_type: str, y: np.ndarray, proba: np.ndarray, n_bins: int, binning: str
) -> float:
    """Binary calibration error of each column's p against its 0/1 outcome, macro-averaged.

    Masked multi-label entries are dropped per column; a column with no observed
    entry is skipped. A single-label class absent from ``y_true`` is kept: predicting
    mass for a class that never occurs is a calibration error too.
    """
    targets, observed = _binary_targets(task_type, y, proba.shape[1])
    per_column = np.full(proba.shape[1], np.nan)
    for column in range(proba.shape[1]):
        keep = observed[:, column]
        if keep.any():
            per_column[column] = _calibration_error(
                proba[keep, column], targets[keep, column], n_bins, binning
            )
    return _nanmean_or_nan(per_column)


def _ece(task_type: str, y_true, proba, n_bins: int, binning: str) -> float:
    y, proba = _validate(task_type, y_true, proba)
    n_bins = _validate_n_bins(n_bins)
    if _is_multi_label(task_type):
        return _mean_binary_calibration_error(task_type, y, proba, n_bins, binning)
    # Top-label: is the confidence of the predicted class its hit rate?
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == y).astype(np.float64)
    return _calibration_error(confidence, correct, n_bins, binning)


def ece(task_type: str, y_true, proba, n_bins: int = 15) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins on [0, 1].

    Bin convention: ``(0, 1/B], (1/B, 2/B], ..., ((B-1)/B, 1]`` (closed on the right),
    with confidence exactly 0 placed in the first bin. ECE is
    ``sum_b (n_b / n) * |observed_b - confidence_b|``.

    single_label/ordinal: top-label ECE (confidence = max probability, observed =
    argmax == y).
    multi_label: binary ECE per label (confidence = p of the positive, observed = y,
    i.e. reliability of p against the observed positive frequency) on the unmasked
    entries, averaged over labels that have any unmasked entry.
    """
    return _ece(task_type, y_true, proba, n_bins, "equal_width")


def ece_adaptive(task_type: str, y_true, proba, n_bins: int = 15) -> float:
    """As ``ece`` but with equal-mass bins.

    Confidences are sorted (stable sort) and split into ``n_bins`` nearly equal
    groups with ``np.array_split``; multi-label does this per label on its unmasked
    entries.
    """
    return _ece(task_type, y_true, proba, n_bins, "equal_mass")


def ece_classwise(task_type: str, y_true, proba, n_bins: int = 15) -> float:
    """Class-wise ECE with equal-width bins (same bin convention as ``ece``).

    single_label/ordinal: for each class c the binary ECE of ``proba[:, c]`` against
    ``y == c``, averaged over all k classes (including classes absent from y_true).
    multi_label: identical to ``ece``, which is already per-label binary ECE.
    """
    y, proba = _validate(task_type, y_true, proba)
    n_bins = _validate_n_bins(n_bins)
    return _mean_binary_calibration_error(task_type, y, proba, n_bins, "equal_width")


def debiased_squared_calibration_error(count, outcome_sum, confidence_sum) -> np.ndarray:
    """Kumar, Liang & Ma (2019) debiased squared binned calibration error, from per-bin sums.

    Arrays ``[..., B]`` (leading dims broadcast: bootstrap draws): the (weighted) number of cases,
    sum of outcomes and sum of confidences per bin. Per bin with at least two cases,
    ``(n_b / n) * ((ybar_b - pbar_b)^2 - ybar_b (1 - ybar_b) / (n_b - 1))``: the plug-in square
    minus the unbiased estimate of the variance of ``ybar_b``, so the sum is unbiased for the
    squared binned calibration error. A bin with fewer than two cases has no variance estimate
    and adds 0. The value can be negative (an error near 0 measured with noise). NaN when n == 0.
    """
    count = np.asarray(count, dtype=np.float64)
    total = count.sum(axis=-1)
    enough = count >= 2
    safe = np.where(enough, count, 2.0)
    outcome_mean = np.where(enough, np.asarray(outcome_sum) / safe, 0.0)
    confidence_mean = np.where(enough, np.asarray(confidence_sum) / safe, 0.0)
    variance = outcome_mean * (1.0 - outcome_mean) / (safe - 1.0)
    terms = np.where(enough, count * ((outcome_mean - confidence_mean) ** 2 - variance), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, terms.sum(axis=-1) / np.where(total > 0, total, 1.0), np.nan)


def root_of_debiased(squared) -> np.ndarray:
    """The calibration error from its debiased square: sqrt(max(square, 0)) (NaN stays NaN)."""
    squared = np.asarray(squared, dtype=np.float64)
    return np.sqrt(np.maximum(squared, 0.0), where=~np.isnan(squared), out=np.full(squared.shape, np.nan))


def calibration_error_debiased_squared(task_type: str, y_true, proba, n_bins: int = 15) -> float:
    """The debiased square behind ``calibration_error_debiased``, before the floor (may be < 0).

    single_label/ordinal: top-label (as ``ece``). multi_label: the debiased squares of the labels
    with any unmasked entry, averaged.
    """
    y, proba = _validate(task_type, y_true, proba)
    n_bins = _validate_n_bins(n_bins)
    if _is_multi_label(task_type):
        targets, observed = _binary_targets(task_type, y, proba.shape[1])
        columns = [(proba[observed[:, c], c], targets[observed[:, c], c]) for c in range(proba.shape[1]) if observed[:, c].any()]
    else:
        columns = [(proba.max(axis=1), (proba.argmax(axis=1) == y).astype(np.float64))]
    squares = []
    for confidence, outcome in columns:
        bins = _equal_width_bin_index(confidence, n_bins)
        squares.append(debiased_squared_calibration_error(
            np.bincount(bins, minlength=n_bins), np.bincount(bins, weights=outcome, minlength=n_bins),
            np.bincount(bins, weights=confidence, minlength=n_bins),
        ))
    return _nanmean_or_nan(np.array(squares, dtype=np.float64))


def calibration_error_debiased(task_type: str, y_true, proba, n_bins: int = 15) -> float:
    """Debiased binned RMS calibration error (Kumar, Liang & Ma 2019) with the bins of ``ece``.

    The estimate of ``sqrt(sum_b P_b (E[y | b] - E[p | b])^2)``, the population L2 calibration
    error over the same equal-width bins: ``calibration_error_debiased_squared`` floored at 0 and
    square-rooted. Binned ECE is biased upwards by the noise of each bin's hit rate (a perfectly
    calibrated predictor measures ECE ~0.03 on ~700 cases); the debiased square is unbiased, and
    the root is biased only near 0, by the floor.
    """
    return float(root_of_debiased(calibration_error_debiased_squared(task_type, y_true, proba, n_bins)))


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
    y, proba = _validate(task_type, y_true, proba)
    if _is_binary(task_type, proba):
        return float(((proba[:, 1] - (y == 1)) ** 2).mean())
    if not _is_multi_label(task_type):
        return float(((proba - _one_hot(y, proba.shape[1])) ** 2).sum(axis=1).mean())
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
    y, proba = _validate(task_type, y_true, proba)
    if not (0.0 <= eps < 0.5):
        raise ValueError(f"eps must be in [0, 0.5); got {eps!r}")
    if not _is_multi_label(task_type):
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
    if _is_multi_label(task_type):
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
    y, proba = _validate(task_type, y_true, proba)
    n_bins = _validate_n_bins(n_bins)
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
