"""Calibration metrics: binned expected calibration error (equal-width, equal-mass, class-wise) and the
debiased binned RMS calibration error.

Pure functions with the conventions of ``metrics/classification.py`` (task types, shapes, NaN masks,
undefined values as NaN).
"""

from __future__ import annotations

import numpy as np

from crsbench.metrics.validation import binary_targets, is_multi_label, nanmean_or_nan, validate_inputs, validate_n_bins


def equal_width_bin_index(confidence: np.ndarray, n_bins: int) -> np.ndarray:
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


_BINNINGS = {"equal_width": equal_width_bin_index, "equal_mass": _equal_mass_bin_index}


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
    targets, observed = binary_targets(task_type, y, proba.shape[1])
    per_column = np.full(proba.shape[1], np.nan)
    for column in range(proba.shape[1]):
        keep = observed[:, column]
        if keep.any():
            per_column[column] = _calibration_error(
                proba[keep, column], targets[keep, column], n_bins, binning
            )
    return nanmean_or_nan(per_column)


def _ece(task_type: str, y_true, proba, n_bins: int, binning: str) -> float:
    y, proba = validate_inputs(task_type, y_true, proba)
    n_bins = validate_n_bins(n_bins)
    if is_multi_label(task_type):
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
    y, proba = validate_inputs(task_type, y_true, proba)
    n_bins = validate_n_bins(n_bins)
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
    y, proba = validate_inputs(task_type, y_true, proba)
    n_bins = validate_n_bins(n_bins)
    if is_multi_label(task_type):
        targets, observed = binary_targets(task_type, y, proba.shape[1])
        columns = [(proba[observed[:, c], c], targets[observed[:, c], c]) for c in range(proba.shape[1]) if observed[:, c].any()]
    else:
        columns = [(proba.max(axis=1), (proba.argmax(axis=1) == y).astype(np.float64))]
    squares = []
    for confidence, outcome in columns:
        bins = equal_width_bin_index(confidence, n_bins)
        squares.append(debiased_squared_calibration_error(
            np.bincount(bins, minlength=n_bins), np.bincount(bins, weights=outcome, minlength=n_bins),
            np.bincount(bins, weights=confidence, minlength=n_bins),
        ))
    return nanmean_or_nan(np.array(squares, dtype=np.float64))


def calibration_error_debiased(task_type: str, y_true, proba, n_bins: int = 15) -> float:
    """Debiased binned RMS calibration error (Kumar, Liang & Ma 2019) with the bins of ``ece``.

    The estimate of ``sqrt(sum_b P_b (E[y | b] - E[p | b])^2)``, the population L2 calibration
    error over the same equal-width bins: ``calibration_error_debiased_squared`` floored at 0 and
    square-rooted. Binned ECE is biased upwards by the noise of each bin's hit rate (a perfectly
    calibrated predictor measures ECE ~0.03 on ~700 cases); the debiased square is unbiased, and
    the root is biased only near 0, by the floor.
    """
    return float(root_of_debiased(calibration_error_debiased_squared(task_type, y_true, proba, n_bins)))
