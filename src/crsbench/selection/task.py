"""The task a cohort's labels describe, decided before anything runs.

One label column (or a 1-D label array) is a single-label task; several 0/1 columns (or a 2-D 0/1
array) a multi-label one. Ordinal is never guessed: whole-number labels may be ordered grades or
arbitrary codes, so it is used only when declared (`--ordinal`, or a dataset whose metadata says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from crsbench.datasets.folder import class_order, is_integer  # one numbering of classes for select and the dataset
from crsbench.datasets.labels import Clash, alike_rows, is_missing, normal_label

MULTI_LABEL_VALUES = ("0", "1", "0.0", "1.0", "")


class LabelProblem(ValueError):
    """A label value the inferred task cannot hold; `row` counts data rows from 0."""

    def __init__(self, column: str, row: int, value: str, hint: str):
        super().__init__(f"column '{column}' row {row}: {value!r} ({hint})")
        self.column, self.row, self.value, self.hint = column, row, value, hint


class AlikeClasses(ValueError):
    """Two spellings of one class in a label column; `rows` (data rows from 0) first carry each."""

    def __init__(self, column: str, clash: Clash, rows: tuple[int, int]):
        super().__init__(f"column '{column}': class names {clash.first!r} and {clash.second!r} {clash.how}")
        self.column, self.clash, self.rows = column, clash, rows


@dataclass(frozen=True)
class TaskFacts:
    task_type: str  # single_label | multi_label | ordinal
    class_names: tuple[str, ...]
    counts: tuple[int, ...]  # examples per class; positives per label for multi-label tasks
    why: str  # how the type was decided, in words
    hint: str = ""

    @property
    def words(self) -> str:
        return self.task_type.replace("_", "-")

    def summary(self) -> str:
        what = "positives per label" if self.task_type == "multi_label" else "images per class"
        counts = ", ".join(f"{name} {n}" for name, n in zip(self.class_names, self.counts))
        return f"task: {self.words} ({self.why}), {len(self.class_names)} classes; {what}: {counts}"


def infer_from_columns(columns: dict[str, Sequence[str]], ordinal: bool = False) -> TaskFacts:
    """The task of a labels CSV: `columns` maps each label column to its values, one per data row."""
    if not columns:
        raise ValueError("no label column")
    if len(columns) > 1:
        if ordinal:
            raise ValueError(f"--ordinal takes one label column, got {len(columns)}: {', '.join(columns)}")
        return _multi_label(columns)
    (column, values), = columns.items()
    values = [normal_label(v) for v in values]
    for row, value in enumerate(values):
        if is_missing(value):  # an empty cell or NA is a missing label, not a class of its own
            raise LabelProblem(column, row, value, "a missing label: every image of a single-label task needs one")
    if ordinal:
        for row, value in enumerate(values):
            if not is_integer(value):
                raise LabelProblem(column, row, value, "--ordinal needs whole-number grades")
        grades = [int(v) for v in values]
        names = tuple(str(g) for g in range(min(grades), max(grades) + 1))  # no gaps in the scale
        counts = tuple(grades.count(int(g)) for g in names)
        return TaskFacts("ordinal", names, counts, "declared with --ordinal")
    alike = alike_rows(values)
    if alike is not None:
        raise AlikeClasses(column, alike[0], alike[1:])
    names = class_order(values)
    counts = tuple(values.count(name) for name in names)
    hint = ""
    if len(names) > 2 and all(is_integer(n) for n in names):
        hint = "the labels are whole numbers: if they are ordered grades, pass --ordinal"
    return TaskFacts("single_label", names, counts, f"one label column '{column}'", hint)


def _multi_label(columns: dict[str, Sequence[str]]) -> TaskFacts:
    counts = []
    for column, values in columns.items():
        for row, value in enumerate(values):
            if value.strip() not in MULTI_LABEL_VALUES:
                raise LabelProblem(column, row, value, "a multi-label column holds 0, 1 or blank")
        counts.append(sum(float(v) == 1.0 for v in values if v.strip()))
    return TaskFacts("multi_label", tuple(columns), tuple(counts), f"{len(columns)} label columns of 0/1")


def infer_from_array(labels: np.ndarray, ordinal: bool = False, declared: str | None = None,
                     class_names: Sequence[str] | None = None) -> TaskFacts:
    """The task of a label array: [n] class indices, or [n, k] 0/1/NaN for multi-label.

    `declared`: the task type a dataset's own metadata states (MedMNIST does), which wins over the
    shape of the array; `ordinal` is the user's declaration.
    """
    labels = np.asarray(labels)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 2:
        if ordinal:
            raise ValueError("--ordinal: the labels are [n, k] (multi-label), not grades")
        finite = labels[~np.isnan(labels.astype(float))]
        if not np.isin(finite, (0, 1)).all():
            raise ValueError("a 2-D label array must hold 0, 1 or NaN (multi-label)")
        names = tuple(class_names or (str(i) for i in range(labels.shape[1])))
        counts = tuple(int(c) for c in np.nansum(labels.astype(float) == 1, axis=0))
        return TaskFacts("multi_label", names, counts, "a 2-D 0/1 label array")
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.number) or (labels != np.round(labels)).any():
        raise ValueError(f"labels must be whole-number class indices [n] or 0/1 [n, k], "
                         f"got {labels.dtype} {labels.shape}")
    labels = labels.astype(np.int64)
    if labels.min() < 0:
        raise ValueError(f"label {labels.min()} at row {int(np.argmin(labels))} is negative: class indices start at 0")
    k = int(labels.max()) + 1
    names = tuple(class_names or (str(i) for i in range(k)))
    counts = tuple(int(c) for c in np.bincount(labels, minlength=len(names)))
    if ordinal:
        return TaskFacts("ordinal", names, counts, "declared with --ordinal")
    if declared in ("ordinal", "multi_label"):
        return TaskFacts(declared, names, counts, "declared by the dataset's metadata")
    hint = "class indices: if they are ordered grades, pass --ordinal" if k > 2 else ""
    return TaskFacts("single_label", names, counts, "a 1-D array of class indices", hint)
