"""Resolve a suite: build its encoders and datasets (the first step that reads files), and check what
the plan assumed from the suite alone against the data, before any embedding is computed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from crsbench.datasets.base import Dataset
from crsbench.datasets.registry import get_dataset
from crsbench.encoders.base import Encoder
from crsbench.errors import CRSBenchError, DataError
from crsbench.run.shift import shift_label_indices
from crsbench.plan.suite import DatasetSpec, Suite


@dataclass(frozen=True)
class Resolved:
    encoders: dict[str, Encoder]  # by the encoder's label in the suite
    datasets: dict[str, Dataset]  # by task
    shifts: dict[str, Dataset]  # by task, for tasks with a shift dataset
    shift_maps: dict[str, Optional[dict[str, str]]]  # by task: shift class -> task class


def resolve(suite: Suite) -> Resolved:
    encoders = build_encoders(suite)
    datasets = {t.name: _dataset(f"tasks.{i}.dataset", t.dataset) for i, t in enumerate(suite.tasks)}
    shifts = {t.name: _dataset(f"tasks.{i}.shift", t.shift) for i, t in enumerate(suite.tasks) if t.shift}
    shift_maps = {t.name: t.shift_label_map for t in suite.tasks if t.shift}
    for task, shift in shifts.items():  # fail before any work when a shift's labels cannot be aligned
        shift_label_indices(datasets[task].meta, shift.meta, shift_maps[task])
    return Resolved(encoders, datasets, shifts, shift_maps)


def _dataset(field: str, spec: DatasetSpec) -> Dataset:
    dataset = _named(field, get_dataset, spec.kind, **spec.options())
    _check_declared(field, spec, dataset)
    return dataset


def _check_declared(field: str, spec: DatasetSpec, dataset: Dataset) -> None:
    """Records were named from the kind's declared info; the built dataset must agree with it."""
    info, meta = spec.info(), dataset.meta
    declared = {"name": info.name, "task_type": info.task_type, "class_names": info.class_names,
                "modality": info.modality}
    for what, value in declared.items():
        if value is not None and value != getattr(meta, what):
            raise DataError(f"{field}: dataset kind {spec.kind!r} declares {what} {value!r}, "
                            f"but the data says {getattr(meta, what)!r}")


def build_encoders(suite: Suite) -> dict:
    """Every encoder of the suite, by label, built as the run builds them (models load lazily, on first
    use, so this checks names and options without reading weights)."""
    return {choice.label: _named(f"encoders.{i}", choice.build) for i, choice in enumerate(suite.encoders)}


def _named(field: str, build, *args, **options):
    """Build an encoder or dataset; a failure names the suite field it came from."""
    try:
        return build(*args, **options)
    except CRSBenchError as error:
        raise type(error)(f"{field}: {error}") from None
