"""Dataset kinds by name: each kind is a class (see `crsbench.datasets.kind`) with an options model
(its constructor's one parameter list), its declared `DatasetInfo`, and `from_options`.

`get_dataset("medmnist", name="retinamnist")` builds a dataset; `info_for("medmnist", {...})` says what it
is without reading it. Built-in kinds are imported when first asked for, so importing the registry stays
cheap and a kind whose module is missing fails only when it is used. An installed package adds kinds
through the entry-point group `crsbench.datasets` (`name = "package.module:Class"`), read the first time
a kind is looked up; a plug-in never replaces a built-in kind.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

from pydantic import ValidationError

from crsbench.datasets.base import Dataset
from crsbench.datasets.kind import DatasetInfo, KindOptions, bad_options, first_problem
from crsbench.errors import DataError

_BUILTIN = {
    "medmnist": "crsbench.datasets.medmnist:MedMNISTDataset",
    "folder": "crsbench.datasets.folder:FolderDataset",
    "demo": "crsbench.datasets.synthetic:SyntheticDataset",
    "npz": "crsbench.datasets.npz:NpzDataset",
    "isic2019": "crsbench.datasets.published.isic2019:ISIC2019Dataset",
    "aptos2019": "crsbench.datasets.published.aptos2019:APTOS2019Dataset",
    "chexpert": "crsbench.datasets.published.chexpert:CheXpertDataset",
    "mimic_cxr": "crsbench.datasets.published.mimic_cxr:MIMICCXRDataset",
}
_KINDS: dict[str, type | str] = dict(_BUILTIN)  # a class, or "module:Class" until first used
ENTRY_POINT_GROUP = "crsbench.datasets"
_plugins_read = False


def _read_plugins() -> None:
    """Kinds that installed packages declare, as "module:Class" strings (imported when first used)."""
    global _plugins_read
    if _plugins_read:
        return
    _plugins_read = True
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {entry_point.name!r} ({entry_point.value}) of group {ENTRY_POINT_GROUP!r}"
        if entry_point.name in _BUILTIN:
            raise DataError(f"{where}: {entry_point.name!r} is a built-in dataset kind; a plug-in takes another name")
        if ":" not in entry_point.value:
            raise DataError(f"{where}: must name a class as 'module:Class'")
        _KINDS.setdefault(entry_point.name, entry_point.value)


class OptionError(ValueError):
    """A bad option, with its place among the options (so a suite error can name the field)."""

    def __init__(self, location: tuple, message: str):
        super().__init__(message)
        self.location, self.message = location, message


def register_dataset(kind: str, dataset_class: type, *, replace: bool = False) -> None:
    """Add a kind: a class with `Options`, `info_for(options)` and `from_options(options)`.

    A subclass of `DatasetKind` that implements `_build()` gets the rest; one with a constructor of its own
    (keyword parameters named as its `Options` fields) is built with the options a suite gave."""
    if kind in _KINDS and not replace:
        raise ValueError(f"dataset kind {kind!r} is already registered; pass replace=True to override it")
    absent = [m for m in ("Options", "info_for", "from_options") if not hasattr(dataset_class, m)]
    if absent:
        raise TypeError(f"dataset kind {kind!r}: {dataset_class!r} lacks {', '.join(absent)} (see DatasetKind)")
    _KINDS[kind] = dataset_class


def known_dataset_kinds() -> tuple[str, ...]:
    _read_plugins()
    return tuple(sorted(_KINDS))


def dataset_kind(kind: str) -> type:
    _read_plugins()
    entry = _KINDS.get(kind)
    if entry is None:
        raise DataError(f"unknown dataset kind {kind!r}; known kinds: {', '.join(known_dataset_kinds())}")
    if isinstance(entry, str):
        module, name = entry.split(":", 1)
        try:
            loaded = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise DataError(f"dataset kind {kind!r}: cannot load {entry} ({type(exc).__name__}: {exc})") from None
        absent = [m for m in ("Options", "info_for", "from_options") if not hasattr(loaded, m)]
        if absent:
            raise DataError(f"dataset kind {kind!r}: {entry} lacks {', '.join(absent)} (see DatasetKind)")
        entry = _KINDS[kind] = loaded
    return entry


def parse_options(kind: str, options: dict[str, Any]) -> KindOptions:
    """The kind's options model; raises `OptionError` naming the first bad option."""
    try:
        return dataset_kind(kind).Options.model_validate(options)
    except ValidationError as error:
        raise OptionError(*first_problem(error)) from None


def info_for(kind: str, options: dict[str, Any]) -> DatasetInfo:
    """What the dataset is (name, task type, classes, modality, licence), from its options alone."""
    return dataset_kind(kind).info_for(_checked(kind, options))


def get_dataset(kind: str, **options: Any) -> Dataset:
    return dataset_kind(kind).from_options(_checked(kind, options))


def _checked(kind: str, options: dict[str, Any]) -> KindOptions:
    try:
        return parse_options(kind, options)
    except OptionError as error:
        raise bad_options(f"dataset kind {kind!r}", error.location, error.message) from None
