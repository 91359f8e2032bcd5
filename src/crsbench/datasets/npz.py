"""Any `.npz` of images and labels: for cohorts shipped as arrays, and for shift-only test sets.

With `split: test` every example is a test example (a shift target is never trained on); with
`split: auto` a grouped, stratified split is drawn once from `split_seed`; with `split_key` the file
names each example's split.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Optional, Union

import numpy as np

from crsbench.core.hashing import sha256_of
from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.arrays import (
    NUMERIC,
    TEXT_OR_INTEGER,
    NpzArchive,
    check_image_header,
    check_rows,
    read_all,
    refuse_non_finite,
    require_kind,
)
from crsbench.datasets.base import ArrayImages, SplitData, file_sha256
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions, ModalityName, PathLike
from crsbench.datasets.labels import declared_names
from crsbench.datasets.splits import grouped_stratified_split
from crsbench.datasets.subgroups import AttributeSpec, attribute_values, check_varies, parse_attributes
from crsbench.errors import DataError


class NpzOptions(KindOptions):
    path: PathLike
    class_names: list[str]
    task_type: str = "single_label"
    images_key: str = "images"
    labels_key: str = "labels"
    ids_key: Optional[str] = None
    groups_key: Optional[str] = None
    split: str = "test"
    split_key: Optional[str] = None
    split_seed: int = 0
    modality: ModalityName = "generic"
    name: Optional[str] = None
    # subgroup attributes from keys of the file (datasets.subgroups specs, e.g. "sex" or "age:decades"); not in
    # the fingerprint, so adding them re-keys no record
    subgroups_key: Union[str, list[str], None] = None


# the options that say how the file is read (the fingerprint's list; path, classes and names enter otherwise)
_READING_OPTIONS = ("images_key", "labels_key", "ids_key", "groups_key", "split", "split_key", "split_seed")


class NpzDataset(DatasetKind):
    info: ClassVar[DatasetInfo] = DatasetInfo(
        title="Images and labels in one .npz", summary="cohorts shipped as arrays; shift-only test sets",
        layout="one .npz with uint8 images and labels (optional ids, groups, split keys)", access="your own data",
    )
    Options: ClassVar[type[KindOptions]] = NpzOptions
    options: NpzOptions

    @classmethod
    def info_for(cls, options: NpzOptions) -> DatasetInfo:
        return cls.info.but(
            name=options.name or Path(options.path).stem, task_type=options.task_type,
            class_names=tuple(options.class_names), modality=options.modality,
        )

    def _build(self) -> None:
        o = self.options
        self.path = Path(o.path)
        if not self.path.is_file():
            raise DataError(f"{self.path}: npz file not found")
        if o.split not in ("test", "auto") and o.split_key is None:
            raise DataError(f"{self.path}: split must be 'test' or 'auto' (or give split_key), got {o.split!r}")
        try:
            class_names = declared_names(o.class_names, f"{self.path}: class_names")
        except ValueError as error:
            raise DataError(str(error)) from None
        self.meta = self.info_for(o).to_meta(source=str(self.path), class_names=class_names)
        self._arrays: dict | None = None
        self._digest: str | None = None

    def fingerprint(self) -> str:
        if self._digest is None:
            file_hash = file_sha256(self.path)
            reading = self.options.model_dump(include=set(_READING_OPTIONS))  # the rest are in the meta
            self._digest = sha256_of(file_hash, repr(sorted(reading.items())), repr(self.meta))
        return self._digest

    def _attribute_specs(self) -> tuple[AttributeSpec, ...]:
        given = self.options.subgroups_key
        return parse_attributes([given] if isinstance(given, str) else given, f"{self.path}: subgroups_key")

    def _keys(self) -> tuple[Optional[str], ...]:
        o = self.options
        return (o.images_key, o.labels_key, o.ids_key, o.groups_key, o.split_key,
                *(a.column for a in self._attribute_specs()))

    def _load(self) -> dict:
        """The arrays, read once; every header is checked before any array is read."""
        if self._arrays is None:
            with NpzArchive(self.path) as archive:
                self._check_headers(archive)
                self._arrays = self._arranged(read_all(archive, self._keys()))
        return self._arrays

    def _check_headers(self, archive: NpzArchive) -> None:
        o = self.options
        for key in (k for k in self._keys() if k is not None):
            archive.header(key)  # missing, object or oversized members first, whatever their role
        n = check_image_header(archive, o.images_key).shape[0]
        require_kind(archive, o.labels_key, NUMERIC, "numeric labels")
        check_rows(archive, o.labels_key, n)
        for key, what in ((o.ids_key, "ids"), (o.groups_key, "groups"), (o.split_key, "split names")):
            if key is not None:
                require_kind(archive, key, TEXT_OR_INTEGER, f"{what} as text or integers")
                check_rows(archive, key, n, what)
        for spec in self._attribute_specs():
            require_kind(archive, spec.column, NUMERIC + "US", "subgroup values as text or numbers")
            check_rows(archive, spec.column, n, "subgroup values")

    def _arranged(self, data: dict[str, np.ndarray]) -> dict:
        o = self.options
        images = data[o.images_key]
        labels = self._checked_labels(data[o.labels_key])
        n = len(images)
        ids = data[o.ids_key].astype(str) if o.ids_key else np.array([f"{self.meta.name}-{i:06d}" for i in range(n)])
        groups = data[o.groups_key].astype(str) if o.groups_key else ids
        split = self._assign(data, labels, groups)
        attributes = {}
        for spec in self._attribute_specs():
            where = f"{self.path} key '{spec.column}'"
            raw = data[spec.column].reshape(len(images), -1)[:, 0]
            raw = ["" if isinstance(v, float) and np.isnan(v) else v for v in raw.tolist()]  # NaN: missing
            attributes[spec.name] = attribute_values(raw, spec, where)
            check_varies(attributes[spec.name], where)
        return {"images": images, "labels": labels, "ids": ids, "groups": groups, "split": split,
                "attributes": attributes}

    def _checked_labels(self, labels: np.ndarray) -> np.ndarray:
        k, key = self.meta.n_classes, self.options.labels_key
        if self.meta.task_type == "multi_label":
            refuse_non_finite(self.path, key, labels, allow_nan=True)
            labels = labels.astype(np.float32).reshape(len(labels), -1)
            bad = ~np.isnan(labels) & ~np.isin(labels, (0.0, 1.0))
            if labels.shape[1] != k or bad.any():
                raise DataError(f"{self.path}: multi-label labels must be [n, {k}] in {{0, 1, NaN}}")
            return labels
        refuse_non_finite(self.path, key, labels, nan_is="a missing label: every image needs a class index")
        if labels.ndim == 2 and labels.shape[1] != 1:
            raise DataError(f"{self.path}: key '{key}' must be [n] or [n, 1] class indices for a "
                            f"{self.meta.task_type} task, got {list(labels.shape)}")
        labels = labels.reshape(-1)
        whole = labels.astype(np.int64)
        if (whole != labels).any():
            row = int(np.flatnonzero(whole != labels)[0])
            raise DataError(f"{self.path}: label {labels[row]} at row {row} is not a whole-number class index")
        if whole.min() < 0 or whole.max() >= k:
            row = int(np.flatnonzero((whole < 0) | (whole >= k))[0])
            raise DataError(f"{self.path}: label {whole[row]} at row {row} is outside 0..{k - 1} "
                            f"({list(self.meta.class_names)})")
        return whole

    def _assign(self, data, labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
        o = self.options
        if o.split_key:
            split = np.char.lower(data[o.split_key].astype(str))
            unknown = sorted(set(split) - set(SPLITS))
            if unknown:
                raise DataError(f"{self.path}: {o.split_key!r} has values {unknown}; expected {SPLITS}")
            return split
        if o.split == "test":
            return np.full(len(labels), "test")
        return grouped_stratified_split(labels, groups, seed=o.split_seed)

    def split(self, name: str) -> SplitData:
        if name not in SPLITS:
            raise DataError(f"unknown split {name!r}; expected one of {SPLITS}")
        arrays = self._load()
        rows = np.flatnonzero(arrays["split"] == name)
        return SplitData(ids=arrays["ids"][rows], images=ArrayImages(arrays["images"][rows]),
                         labels=arrays["labels"][rows], groups=arrays["groups"][rows],
                         subgroups={name: values[rows] for name, values in arrays["attributes"].items()})
