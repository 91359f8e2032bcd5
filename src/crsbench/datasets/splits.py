"""Grouped, stratified train/val/test splits for datasets that ship without official splits.

Algorithm, in three steps:

1. Every group (patient, lesion; or the example itself when groups are all distinct) gets one
   stratum key: the most common key among its examples. An example's key is its class for
   single-label and ordinal labels, and its rarest positive label for multi-label rows (so rare
   findings are spread over the splits rather than drowned by common ones).
2. Within each stratum, groups are shuffled with the seeded generator, then ordered largest
   first so the big groups are placed while there is still room for them.
3. Each group goes to the split whose share of the stratum is furthest below its target
   (relative deficit); ties go to the split furthest below its target over all examples placed
   so far, which keeps the global proportions right when strata are tiny. A stratum with at
   least as many groups as there are splits sends at least one group to each split.

Groups never cross splits because whole groups are assigned. The result depends only on the
(labels, groups) pairs, the fractions and the seed, not on the order of the rows.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from crsbench.core.vocabulary import SPLITS


def grouped_stratified_split(
    labels: Sequence | np.ndarray,
    groups: Sequence | np.ndarray,
    fractions: Sequence[float] = (0.7, 0.1, 0.2),
    seed: int = 0,
) -> np.ndarray:
    """One of "train" / "val" / "test" per example; see the module docstring for the algorithm."""
    keys = stratum_keys(labels)
    groups = np.asarray(groups).astype(str)
    if groups.ndim != 1 or len(groups) != len(keys):
        raise ValueError(f"need one group per example: {len(keys)} labels, {len(groups)} groups")
    targets = _normalised_fractions(fractions)
    if len(keys) == 0:
        return np.array([], dtype="<U5")

    group_names, example_group = np.unique(groups, return_inverse=True)
    group_sizes = np.bincount(example_group, minlength=len(group_names))
    group_key = _majority_key_per_group(keys, example_group, len(group_names))

    rng = np.random.default_rng(seed)
    assignment = np.full(len(group_names), -1)
    placed_globally = np.zeros(len(SPLITS))
    for key in sorted(set(group_key)):
        members = np.flatnonzero(group_key == key)
        members = _shuffled_largest_first(members, group_sizes, rng)
        _assign_stratum(members, group_sizes, targets, placed_globally, assignment)

    return np.asarray(SPLITS)[assignment[example_group]]


def stratum_keys(labels: Sequence | np.ndarray) -> np.ndarray:
    """A string key per example: its class, or for multi-label rows the rarest positive label."""
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 1:
        return labels.astype(str)
    if labels.ndim != 2:
        raise ValueError(f"labels must be [n] or [n, k], got shape {labels.shape}")
    positive = np.nan_to_num(labels.astype(np.float64), nan=0.0) > 0.5
    # Rarest first: rank each label by its positive count over the whole dataset.
    rarity_order = np.argsort(positive.sum(axis=0), kind="stable")
    keys = np.full(len(labels), "none", dtype=object)
    for label in rarity_order[::-1]:  # rarest written last, so it wins
        keys[positive[:, label]] = f"label{label}"
    return keys.astype(str)


def _normalised_fractions(fractions: Sequence[float]) -> np.ndarray:
    targets = np.asarray(fractions, dtype=np.float64)
    if targets.shape != (len(SPLITS),) or np.any(targets < 0) or targets.sum() <= 0:
        raise ValueError(f"fractions must be {len(SPLITS)} non-negative numbers with a positive sum, got {fractions}")
    return targets / targets.sum()


def _majority_key_per_group(keys: np.ndarray, example_group: np.ndarray, n_groups: int) -> np.ndarray:
    counts: list[Counter] = [Counter() for _ in range(n_groups)]
    for key, group in zip(keys, example_group):
        counts[group][key] += 1
    # Ties go to the smallest key so the result does not depend on row order.
    return np.array([min(c.items(), key=lambda item: (-item[1], item[0]))[0] for c in counts])


def _shuffled_largest_first(members: np.ndarray, group_sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    shuffled = members[rng.permutation(len(members))]
    return shuffled[np.argsort(-group_sizes[shuffled], kind="stable")]


def _assign_stratum(
    members: np.ndarray,
    group_sizes: np.ndarray,
    targets: np.ndarray,
    placed_globally: np.ndarray,
    assignment: np.ndarray,
) -> None:
    active = np.flatnonzero(targets > 0)
    stratum_target = targets * group_sizes[members].sum()
    placed = np.zeros(len(SPLITS))
    must_fill = len(members) >= len(active)
    for position, group in enumerate(members):
        candidates = active
        empty = active[placed[active] == 0]
        remaining = len(members) - position
        if must_fill and 0 < len(empty) and remaining <= len(empty):
            candidates = empty  # the last groups go to the splits still missing this stratum
        split = _most_underfilled(candidates, placed, stratum_target, placed_globally, targets)
        assignment[group] = split
        placed[split] += group_sizes[group]
        placed_globally[split] += group_sizes[group]


def _most_underfilled(
    candidates: np.ndarray,
    placed: np.ndarray,
    stratum_target: np.ndarray,
    placed_globally: np.ndarray,
    targets: np.ndarray,
) -> int:
    def shortfall(split: int) -> tuple[float, float, float]:
        local = 1.0 - placed[split] / stratum_target[split]
        overall = targets[split] * max(placed_globally.sum(), 1.0) - placed_globally[split]
        return (round(local, 9), overall, targets[split])

    return int(max(candidates, key=shortfall))
