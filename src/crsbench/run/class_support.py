"""Class support: the examples of each class in each split, shown before a run and checked against what
the protocol needs.

A label value missing from `class_names` when none are declared becomes a class of its own (a typo,
`melanomma`, makes a one-image class; two spellings that read alike, `Nevus` and `nevus`, are refused
outright, naming both). The protocol needs every class in every split: training (each label
fraction keeps at least one example of every class, so the full training split must have one), validation
(the probe's regularisation is chosen on it) and test (its AUROC). A class with fewer is refused, naming the
class and the rows that carry it, before anything is embedded.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.base import Dataset
from crsbench.datasets.labels import find_clash
from crsbench.errors import DataError

MIN_PER_SPLIT = 1  # examples of each class in each of train, val and test
SHOWN = 5  # rows named in an error


def split_class_counts(dataset: Dataset) -> dict[str, np.ndarray]:
    """Examples per class (single-label, ordinal) or positives per label (multi-label), by split."""
    counts = {}
    for name in SPLITS:
        labels = dataset.split(name).labels
        if labels.ndim == 2:
            counts[name] = np.nansum(labels == 1, axis=0).astype(np.int64)
        else:
            counts[name] = np.bincount(labels, minlength=dataset.meta.n_classes)
    return counts


def counts_line(task: str, dataset: Dataset, counts: dict[str, np.ndarray]) -> str:
    per_class = ", ".join(
        f"{cls} " + "/".join(str(int(counts[s][c])) for s in SPLITS) for c, cls in enumerate(dataset.meta.class_names)
    )
    return f"{task} ({dataset.meta.name}), examples per class, train/val/test: {per_class}"


def check_distinct_names(task: str, dataset: Dataset) -> None:
    """No two class names read alike (case, invisible characters, look-alike letters): they would be one
    class counted twice, whichever kind of dataset named them."""
    clash = find_clash(dataset.meta.class_names)
    if clash is None:
        return
    rows = ""
    if dataset.meta.task_type != "multi_label":
        first, second = (_shown(_rows_of(dataset, dataset.meta.class_names.index(name)))
                         for name in (clash.first, clash.second))
        rows = f"; rows: {first} and {second}"
    raise DataError(f"task {task!r} ({dataset.meta.name}): class names {clash.first!r} and {clash.second!r} "
                    f"{clash.how}{rows} (use one spelling: they would count as two classes)")


def check_class_support(task: str, dataset: Dataset, counts: dict[str, np.ndarray]) -> None:
    """Class names distinct; single-label and ordinal tasks: every class has MIN_PER_SPLIT examples in every split."""
    check_distinct_names(task, dataset)
    if dataset.meta.task_type == "multi_label":
        return  # a label's positives may be masked or rare; its metrics are undefined, not wrong
    for c, cls in enumerate(dataset.meta.class_names):
        short = [s for s in SPLITS if counts[s][c] < MIN_PER_SPLIT]
        if short:
            rows = _rows_of(dataset, c)
            where = "/".join(str(int(counts[s][c])) for s in SPLITS)
            raise DataError(
                f"task {task!r} ({dataset.meta.name}): class {cls!r} has {len(rows)} example(s) (train/val/test"
                f" {where}), too few for the {', '.join(short)} split(s), which need at least {MIN_PER_SPLIT}"
                f" each; rows: {_shown(rows)} (a misspelt label? declare class_names to catch it)"
            )


def report_and_check(datasets: dict[str, Dataset], log: Callable[[str], None]) -> None:
    """Show each task's class counts per split, then refuse a class the protocol cannot use."""
    for task, dataset in datasets.items():
        counts = split_class_counts(dataset)
        log(counts_line(task, dataset, counts))
        check_class_support(task, dataset, counts)


def _shown(rows: list[str]) -> str:
    return ", ".join(rows[:SHOWN]) + (", ..." if len(rows) > SHOWN else "") or "none"


def _rows_of(dataset: Dataset, cls: int) -> list[str]:
    rows = []
    for name in SPLITS:
        split = dataset.split(name)
        rows += [str(i) for i in split.ids[split.labels == cls]]
    return rows
