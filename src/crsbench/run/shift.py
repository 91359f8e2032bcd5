"""Institutional shift: labels of a second dataset expressed in the task's label space."""

from __future__ import annotations

import numpy as np

from crsbench.datasets.base import DatasetMeta
from crsbench.errors import DataError


def shift_label_indices(task: DatasetMeta, shift: DatasetMeta, mapping: dict[str, str] | None) -> np.ndarray:
    """For each shift class, the index of the task class it means (by name, after `mapping`)."""
    if task.task_type != shift.task_type:
        raise DataError(f"shift dataset {shift.name}: task type {shift.task_type} differs from {task.name}'s {task.task_type}")
    mapping = mapping or {}
    unknown = [m for m in mapping if m not in shift.class_names]
    if unknown:
        raise DataError(f"shift_label_map: {unknown} are not classes of {shift.name} {list(shift.class_names)}")
    names = [mapping.get(name, name) for name in shift.class_names]
    missing = [n for n in names if n not in task.class_names]
    if missing:
        raise DataError(
            f"shift dataset {shift.name}: classes {missing} are not in {task.name}'s {list(task.class_names)}; "
            "map them with shift_label_map"
        )
    return np.array([task.class_names.index(n) for n in names])


def align_shift_labels(labels: np.ndarray, task: DatasetMeta, shift: DatasetMeta, mapping: dict[str, str] | None) -> np.ndarray:
    index = shift_label_indices(task, shift, mapping)
    if task.task_type == "multi_label":
        aligned = np.full((len(labels), task.n_classes), np.nan, dtype=np.float32)
        aligned[:, index] = labels  # a task label the shift data lacks stays masked
        return aligned
    return index[labels.astype(int)]
