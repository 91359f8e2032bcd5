"""Dataset kinds by name: `get_dataset("medmnist", name="retinamnist")` builds a dataset from options.

Factories import their modules when called, so importing the registry stays cheap and a kind whose
module is missing fails only when it is asked for.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from crsbench.datasets.base import Dataset
from crsbench.errors import DataError

DatasetFactory = Callable[..., Dataset]

_FACTORIES: dict[str, DatasetFactory] = {}


def register_dataset(name: str, factory: DatasetFactory, *, replace: bool = False) -> None:
    if name in _FACTORIES and not replace:
        raise ValueError(f"dataset kind {name!r} is already registered; pass replace=True to override it")
    _FACTORIES[name] = factory


def known_dataset_kinds() -> tuple[str, ...]:
    return tuple(sorted(_FACTORIES))


def get_dataset(kind: str, **options: Any) -> Dataset:
    factory = _FACTORIES.get(kind)
    if factory is None:
        raise DataError(f"unknown dataset kind {kind!r}; known kinds: {', '.join(known_dataset_kinds())}")
    _check_options(kind, factory, options)
    return factory(**options)


def _check_options(kind: str, factory: DatasetFactory, options: dict[str, Any]) -> None:
    # Checked against the signature, not by catching TypeError, so bugs inside a factory are not masked.
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as error:
        raise DataError(f"dataset kind {kind!r}: bad options {sorted(options)} ({error})") from None


def _medmnist(name: str, path=None, download: bool = False, size: int = 28, verify_md5: bool = True) -> Dataset:
    from crsbench.datasets.medmnist import MedMNISTDataset

    return MedMNISTDataset(name, path=path, download=download, size=size, verify_md5=verify_md5)


def _folder(root, csv, **options: Any) -> Dataset:
    from crsbench.datasets.folder import FolderDataset

    _check_options("folder", FolderDataset, {"root": root, "csv": csv, **options})
    return FolderDataset(root, csv, **options)


def _demo(specialty: str, site: str = "A", **sizes: Any) -> Dataset:
    from crsbench.datasets.synthetic import demo_dataset

    return demo_dataset(specialty, site=site, **sizes)


register_dataset("medmnist", _medmnist)
register_dataset("folder", _folder)
register_dataset("demo", _demo)


def _published(kind: str) -> DatasetFactory:
    """A factory for one published dataset (ISIC 2019, APTOS 2019, CheXpert, MIMIC-CXR-JPG)."""

    def factory(**options: Any) -> Dataset:
        from crsbench.datasets.published import published_class

        dataset_class = published_class(kind)
        _check_options(kind, dataset_class, options)
        return dataset_class(**options)

    return factory


for _kind in ("isic2019", "aptos2019", "chexpert", "mimic_cxr"):
    register_dataset(_kind, _published(_kind))


def _npz(path, class_names, **options: Any) -> Dataset:
    from crsbench.datasets.npz import NpzDataset

    _check_options("npz", NpzDataset, {"path": path, "class_names": class_names, **options})
    return NpzDataset(path, class_names, **options)


register_dataset("npz", _npz)
