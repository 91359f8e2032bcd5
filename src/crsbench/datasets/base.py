"""The dataset protocol: a small declarative value plus a `split(name)` accessor.

Everything downstream of a dataset sees only `SplitData`: ids, uint8 RGB images at the resolution they
were acquired or stored at (sizes may differ between images; each encoder's input is made from them by
one resize, `crsbench.encoders.pixels`), labels and group ids (patient / lesion). Labels are int64 class indices `[n]` for single-label
and ordinal tasks, and float32 `[n, k]` in {0, 1, NaN} for multi-label tasks, NaN meaning
"masked: do not train or score on this label for this image" (the U-Ignore policy).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol, Sequence, Union, runtime_checkable

import numpy as np

from crsbench.core.vocabulary import TASK_TYPES


def file_sha256(path) -> str:
    """A file's SHA-256, read in chunks (an array file may be larger than memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class DatasetMeta:
    name: str
    task_type: str
    class_names: tuple[str, ...]
    modality: str = "generic"  # dermoscopy | fundus | chest_xray | generic: picks perturbation sets
    description: str = ""
    source: str = ""
    licence: str = ""

    def __post_init__(self) -> None:
        if self.task_type not in TASK_TYPES:
            raise ValueError(f"dataset {self.name!r}: task_type must be one of {TASK_TYPES}, got {self.task_type!r}")
        if len(self.class_names) < 2 and self.task_type != "multi_label":
            raise ValueError(f"dataset {self.name!r}: needs at least two classes")

    @property
    def n_classes(self) -> int:
        return len(self.class_names)


class ImageSource(Protocol):
    """Indexable images: `source[i]` is a uint8 array [H, W, 3]; sizes may differ between images."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> np.ndarray: ...


class ArrayImages:
    """Images held in memory as one uint8 array [n, H, W] or [n, H, W, C]."""

    def __init__(self, array: np.ndarray):
        if array.dtype != np.uint8:
            raise ValueError(f"images must be uint8, got {array.dtype}")
        if array.ndim == 3:
            array = array[..., None]
        if array.ndim != 4 or array.shape[-1] not in (1, 3):
            raise ValueError(f"images must be [n, H, W] or [n, H, W, 1|3], got shape {array.shape}")
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: int) -> np.ndarray:
        image = self.array[i]
        return np.repeat(image, 3, axis=-1) if image.shape[-1] == 1 else image

    def batch(self, indices: Sequence[int]) -> np.ndarray:
        images = self.array[np.asarray(indices)]
        return np.repeat(images, 3, axis=-1) if images.shape[-1] == 1 else images


Batch = Union[np.ndarray, list]  # uint8 [b, H, W, 3] when the images share a size, else a list of [H_i, W_i, 3]


def images_batch(source: ImageSource, indices: Sequence[int]) -> Batch:
    """The images at `indices`, stacked when they share a size; uses the source's `batch` when it has one."""
    if hasattr(source, "batch"):
        return source.batch(indices)
    return stack_if_uniform([source[int(i)] for i in indices])


def stack_if_uniform(images: list) -> Batch:
    """One array when every image has the same shape (the common, fast case), else the list itself."""
    if images and all(image.shape == images[0].shape for image in images):
        return np.stack(images)
    return images


@dataclass
class SplitData:
    ids: np.ndarray
    images: ImageSource
    labels: np.ndarray
    groups: np.ndarray = field(default=None)  # type: ignore[assignment]
    # attribute -> subgroup per case (datasets.subgroups); never part of a fingerprint
    subgroups: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ids = np.asarray(self.ids).astype(str)
        if self.groups is None:
            self.groups = self.ids.copy()
        self.groups = np.asarray(self.groups).astype(str)
        self.subgroups = {str(k): np.asarray(v).astype(str) for k, v in self.subgroups.items()}
        n = len(self.ids)
        if not (len(self.images) == len(self.labels) == len(self.groups) == n):
            raise ValueError(
                f"split sizes disagree: ids {n}, images {len(self.images)}, labels {len(self.labels)}, groups {len(self.groups)}"
            )
        for attribute, values in self.subgroups.items():
            if len(values) != n:
                raise ValueError(f"split sizes disagree: ids {n}, subgroup attribute {attribute!r} {len(values)}")

    def __len__(self) -> int:
        return len(self.ids)


@runtime_checkable
class Dataset(Protocol):
    meta: DatasetMeta

    def fingerprint(self) -> str:
        """A content hash that changes whenever the images, labels or splits change."""
        ...

    def split(self, name: str) -> SplitData: ...
