"""Input checks shared by every metric, and the label views they build on the checked labels.

Each metric validates its ``(y_true, proba)`` once here, so a malformed input fails with a message naming
the problem rather than broadcasting silently or turning a metric into NaN. The conventions (task types,
shapes, the NaN mask of multi-label targets) are those of ``metrics/classification.py``.
"""

from __future__ import annotations

import math

import numpy as np

from crsbench.core.vocabulary import TASK_TYPES

# Softmax rows computed in float32/float16 do not sum to exactly 1.
_ROW_SUM_ATOL = 1e-3


def is_multi_label(task_type: str) -> bool:
    return task_type == "multi_label"


def validate_inputs(task_type: str, y_true, proba) -> tuple[np.ndarray, np.ndarray]:
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
    if is_multi_label(task_type):
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


def validate_n_bins(n_bins) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer; got {n_bins!r}")
    return int(n_bins)


def one_hot(y: np.ndarray, k: int) -> np.ndarray:
    encoded = np.zeros((y.shape[0], k), dtype=np.float64)
    encoded[np.arange(y.shape[0]), y] = 1.0
    return encoded


def binary_targets(task_type: str, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(targets [n, k] in {0,1}, observed mask [n, k])`` for one-vs-rest views.

    Single-label/ordinal become one-hot with nothing masked; multi-label keeps its
    NaN mask (masked targets are set to 0 but must be ignored via the mask).
    """
    if is_multi_label(task_type):
        observed = ~np.isnan(y)
        return np.where(observed, y, 0.0), observed
    return one_hot(y, k), np.ones((y.shape[0], k), dtype=bool)


def nanmean_or_nan(values: np.ndarray) -> float:
    # np.nanmean warns on an all-NaN slice; "nothing defined" is a normal outcome here.
    values = np.asarray(values, dtype=np.float64)
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else math.nan
