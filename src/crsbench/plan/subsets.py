"""Label-fraction training subsets: nested, stratified, decided by (task, seed, fraction) alone.

One seeded permutation per (task, seed) orders the training examples; a fraction takes a prefix of
that order (per class for single-label tasks), so the 1% subset is inside the 5% subset and every
encoder trains on the very same images.
"""

from __future__ import annotations

import math

import numpy as np

from crsbench.core.hashing import sha256_of


def subset_rng(task: str, seed: int) -> np.random.Generator:
    return np.random.default_rng(int(sha256_of("label-fraction", task, str(seed))[:16], 16))


def fraction_subset(task_type: str, labels: np.ndarray, task: str, seed: int, fraction: float) -> np.ndarray:
    """Sorted indices into the training split."""
    if not 0 < fraction <= 1:
        raise ValueError(f"label fraction must be in (0, 1], got {fraction}")
    order = subset_rng(task, seed).permutation(len(labels))
    if task_type == "multi_label":
        return _multi_label_subset(labels, order, fraction)
    return _stratified_subset(labels, order, fraction)


def _stratified_subset(labels: np.ndarray, order: np.ndarray, fraction: float) -> np.ndarray:
    chosen = []
    ordered_labels = labels[order]
    for cls in np.unique(labels):
        members = order[ordered_labels == cls]
        # ceil keeps at least one example of every class, even at 1% of a rare class
        chosen.append(members[: max(1, math.ceil(fraction * len(members) - 1e-9))])
    return np.sort(np.concatenate(chosen))


def _multi_label_subset(labels: np.ndarray, order: np.ndarray, fraction: float) -> np.ndarray:
    take = max(1, math.ceil(fraction * len(order) - 1e-9))
    chosen = set(order[:take].tolist())
    ordered = labels[order]
    for j in range(labels.shape[1]):
        # the earliest positive and negative in the fixed order: still nested across fractions
        for value in (1.0, 0.0):
            hits = np.flatnonzero(ordered[:, j] == value)
            if len(hits) and not np.any(labels[list(chosen), j] == value):
                chosen.add(int(order[hits[0]]))
    return np.array(sorted(chosen), dtype=np.int64)


def refit_resample(task: str, refit: int, n: int) -> np.ndarray:
    """Sorted indices (with repeats) of the refit-th bootstrap resample of a training split of n examples:
    decided by (task, refit) alone, so every encoder of the task refits on the very same resample."""
    rng = np.random.default_rng(int(sha256_of("refit-resample", task, str(refit))[:16], 16))
    return np.sort(rng.integers(0, n, n))
