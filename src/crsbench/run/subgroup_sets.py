"""The subgroup attributes of every test set a run scores, stored beside the predictions
(results.subgroup_files): written on every run, whether or not a record is missing, so attributes added to a
dataset reach a store that was complete before they existed, and no record is re-keyed or refitted."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from crsbench.datasets.subgroups import train_only_note
from crsbench.results.predictions import PREDICTIONS_DIR
from crsbench.results.subgroup_files import write_subgroup_table
from crsbench.run.resolve import Resolved
from crsbench.run.task_data import task_case_set


def write_subgroup_sets(output: str | Path, resolved: Resolved, log: Callable[[str], None]) -> int:
    """Each task's test set and shift set with attributes, written where they changed; returns how many were
    written. A subgroup seen in training but absent from the test set is logged (it cannot be scored)."""
    root = Path(output) / PREDICTIONS_DIR
    written = 0
    for task, dataset in resolved.datasets.items():
        roles = ("test", "shift") if task in resolved.shifts else ("test",)
        for role in roles:
            cases = task_case_set(resolved, task, role)
            if not cases.subgroups:
                continue
            written += write_subgroup_table(root, cases.identity(), cases)
            if role == "test":
                train = dataset.split("train").subgroups
                for attribute, values in cases.subgroups.items():
                    note = train_only_note(f"task {task}", attribute, train.get(attribute, values), values)
                    if note:
                        log(f"note: {note}")
    return written
