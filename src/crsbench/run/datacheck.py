"""`crsbench validate SUITE --data`: every dataset of a suite resolved, its files present and a sample
decoded, in seconds, so a typo in a path fails before a run has started.

It is a check, not a run: each split's files are stat-ed (all of them) and a few images per split, spread
over the split, are decoded; in-memory datasets decode the same sample from their arrays.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.base import Dataset, images_batch
from crsbench.errors import DataError
from crsbench.run.resolve import _dataset
from crsbench.run.shift import shift_label_indices
from crsbench.plan.suite import Suite

SAMPLE_PER_SPLIT = 4


@dataclass(frozen=True)
class DatasetCheck:
    field: str  # where the suite declares it, e.g. tasks.0.shift
    name: str
    sizes: dict[str, int]  # examples per split
    decoded: int  # images decoded as a sample


def check_suite_data(suite: Suite, sample_per_split: int = SAMPLE_PER_SPLIT) -> list[DatasetCheck]:
    checks = []
    for i, task in enumerate(suite.tasks):
        dataset = _dataset(f"tasks.{i}.dataset", task.dataset)
        checks.append(check_dataset(f"tasks.{i}.dataset", dataset, sample_per_split))
        if task.shift is not None:
            shift = _dataset(f"tasks.{i}.shift", task.shift)
            try:
                shift_label_indices(dataset.meta, shift.meta, task.shift_label_map)
            except DataError as error:
                raise DataError(f"tasks.{i}.shift: {error}") from None
            checks.append(check_dataset(f"tasks.{i}.shift", shift, sample_per_split))
    return checks


def check_dataset(field: str, dataset: Dataset, sample_per_split: int = SAMPLE_PER_SPLIT) -> DatasetCheck:
    sizes, decoded = {}, 0
    for name in SPLITS:
        split = dataset.split(name)
        sizes[name] = len(split)
        paths = getattr(split.images, "paths", None)
        if paths is not None:
            absent = next((p for p in paths if not os.path.isfile(p)), None)
            if absent is not None:
                raise DataError(f"{field}: {dataset.meta.name} {name} split: image not found: {absent}")
        sample = np.unique(np.linspace(0, len(split) - 1, min(sample_per_split, len(split))).astype(int))
        try:
            images_batch(split.images, sample)
        except DataError as error:
            raise DataError(f"{field}: {error}") from None
        decoded += len(sample)
    return DatasetCheck(field, dataset.meta.name, sizes, decoded)
