"""What a cohort must hold for the protocol, checked before anything is embedded (pure functions).

- Every class needs images from at least three groups (patients), one for each of train, val and
  test: a class seen in one patient only cannot be both trained and tested on without leakage.
- At a label fraction f a class keeps ceil(f * n) of its n training images; the probe needs at
  least MIN_PER_CLASS of them, or the smallest fractions measure nothing but noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

MIN_GROUPS_PER_CLASS = 3  # train, val and test
MIN_PER_CLASS = 2  # training images of every class at the smallest label fraction


@dataclass(frozen=True)
class ThinClass:
    name: str
    groups: tuple[str, ...]  # the groups (patients) holding the class
    rows: tuple[int, ...]  # data rows (from 0) labelled with the class


def thin_classes(labels: np.ndarray, groups: np.ndarray, class_names: Sequence[str]) -> list[ThinClass]:
    """Single-label classes held by fewer than MIN_GROUPS_PER_CLASS groups."""
    labels, groups = np.asarray(labels), np.asarray(groups).astype(str)
    out = []
    for c, name in enumerate(class_names):
        rows = np.flatnonzero(labels == c)
        held = tuple(sorted(set(groups[rows].tolist())))
        if 0 < len(held) < MIN_GROUPS_PER_CLASS:
            out.append(ThinClass(str(name), held, tuple(int(r) for r in rows)))
    return out


def images_at_fraction(n: int, fraction: float) -> int:
    """What `subsets` keeps of a class with n training images at this fraction."""
    return max(1, math.ceil(fraction * n - 1e-9)) if n else 0


def usable_fractions(train_counts: Sequence[int], candidates: Sequence[float]) -> tuple[float, ...]:
    """The candidate fractions at which every class keeps MIN_PER_CLASS training images (1.0 always)."""
    keep = [f for f in candidates
            if f == 1.0 or all(images_at_fraction(int(n), f) >= MIN_PER_CLASS for n in train_counts)]
    return tuple(sorted(set(keep) | {1.0}))


@dataclass(frozen=True)
class FractionShortfall:
    name: str
    fraction: float
    train_images: int
    kept: int


def fraction_shortfalls(train_counts: Sequence[int], class_names: Sequence[str],
                        fractions: Sequence[float]) -> list[FractionShortfall]:
    """Classes with too few training images for a requested fraction, smallest fraction first."""
    out = []
    for f in sorted(fractions):
        for name, n in zip(class_names, train_counts):
            kept = images_at_fraction(int(n), f)
            if f < 1.0 and kept < MIN_PER_CLASS:
                out.append(FractionShortfall(str(name), f, int(n), kept))
    return out
