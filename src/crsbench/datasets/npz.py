"""Any `.npz` of images and labels: for cohorts shipped as arrays, and for shift-only test sets.

With `split: test` every example is a test example (a shift target is never trained on); with
`split: auto` a grouped, stratified split is drawn once from `split_seed`; with `split_key` the file
names each example's split.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import ClassVar, Optional

import numpy as np

from crsbench.datasets.base import SPLITS, ArrayImages, SplitData, sha256_of
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions, PathLike
from crsbench.datasets.splits import grouped_stratified_split
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
    modality: str = "generic"
    name: Optional[str] = None


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
        self.meta = self.info_for(o).to_meta(source=str(self.path))
        self._arrays: dict | None = None
        self._digest: str | None = None

    def fingerprint(self) -> str:
        if self._digest is None:
            file_hash = hashlib.sha256(self.path.read_bytes()).hexdigest()
            reading = self.options.model_dump(include=set(_READING_OPTIONS))  # the rest are in the meta
            self._digest = sha256_of(file_hash, repr(sorted(reading.items())), repr(self.meta))
        return self._digest

    def _load(self) -> dict:
        if self._arrays is not None:
            return self._arrays
        o = self.options
        try:
            data = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"{self.path}: not a readable npz file ({exc})") from None
        for key in (o.images_key, o.labels_key, o.ids_key, o.groups_key, o.split_key):
            if key is not None and key not in data.files:
                raise DataError(f"{self.path}: key {key!r} missing (keys: {', '.join(data.files)})")
        data = self._read_arrays(data)
        images, labels = data[o.images_key], data[o.labels_key]
        if images.dtype != np.uint8 or images.ndim not in (3, 4):
            raise DataError(f"{self.path}: {o.images_key!r} must be uint8 [n,H,W] or [n,H,W,C], got {images.dtype} {images.shape}")
        if len(labels) != len(images):
            raise DataError(f"{self.path}: {len(labels)} labels for {len(images)} images")
        labels = self._checked_labels(labels)
        n = len(images)
        ids = data[o.ids_key].astype(str) if o.ids_key else np.array([f"{self.meta.name}-{i:06d}" for i in range(n)])
        groups = data[o.groups_key].astype(str) if o.groups_key else ids
        self._arrays = {"images": images, "labels": labels, "ids": ids, "groups": groups, "split": self._assign(data, labels, groups)}
        return self._arrays

    def _read_arrays(self, archive) -> dict[str, np.ndarray]:
        """The arrays the options name; an object array (which only pickle could read) fails naming its key."""
        o = self.options
        arrays = {}
        for key in (o.images_key, o.labels_key, o.ids_key, o.groups_key, o.split_key):
            if key is None:
                continue
            try:
                arrays[key] = archive[key]
            except (OSError, ValueError, zipfile.BadZipFile) as error:
                raise DataError(
                    f"{self.path}: key {key!r} is unreadable ({error}); save it as a numeric or string array "
                    "(object arrays are refused: reading them would run pickled code)"
                ) from None
        return arrays

    def _checked_labels(self, labels: np.ndarray) -> np.ndarray:
        k = self.meta.n_classes
        if self.meta.task_type == "multi_label":
            labels = labels.astype(np.float32).reshape(len(labels), -1)
            bad = ~np.isnan(labels) & ~np.isin(labels, (0.0, 1.0))
            if labels.shape[1] != k or bad.any():
                raise DataError(f"{self.path}: multi-label labels must be [n, {k}] in {{0, 1, NaN}}")
            return labels
        labels = labels.reshape(len(labels), -1)[:, 0].astype(np.int64)
        if labels.min() < 0 or labels.max() >= k:
            row = int(np.flatnonzero((labels < 0) | (labels >= k))[0])
            raise DataError(f"{self.path}: label {labels[row]} at row {row} is outside 0..{k - 1} ({list(self.meta.class_names)})")
        return labels

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
                         labels=arrays["labels"][rows], groups=arrays["groups"][rows])
