"""Image files as a dataset's images: decoded on demand, one at a time, EXIF orientation applied, 16-bit
greyscale scaled to 8 bits, a decompression bomb refused naming the file, and an error naming the CSV line
that listed the image. Shared by every kind that reads image files (`folder`, the published datasets).
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.base import SplitData, stack_if_uniform
from crsbench.datasets.decoded import DecodedStore
from crsbench.datasets.paths import check_contained
from crsbench.errors import DataError


class RowPlaces:
    """Where each image was listed, `<csv> line <n>`, for error messages; picklable, sliced with `take`."""

    def __init__(self, sources: Sequence[Path | str], lines: np.ndarray, which: np.ndarray | None = None):
        self.sources = tuple(str(s) for s in sources)
        self.lines = np.asarray(lines)
        self.which = None if which is None else np.asarray(which)  # index into `sources` (None: the first)

    def __getitem__(self, i: int) -> str:
        source = self.sources[0 if self.which is None else int(self.which[i])]
        return f"{source} line {int(self.lines[i])}"

    def take(self, indices) -> "RowPlaces":
        return RowPlaces(self.sources, self.lines[indices], None if self.which is None else self.which[indices])


class FileImages:
    """Images decoded from files on demand: uint8 RGB at the file's own resolution.

    `max_side` (None: the original) caps the longer side for releases whose files are far larger than any
    encoder's input; the cap only ever shrinks an image. With `inside`, each file's real path (symbolic
    links followed) must lie in that folder when it is read. With `places`, an error names the CSV line
    that listed the image, beside the file.
    """

    def __init__(self, paths: Sequence[Path | str], max_side: int | None = None, inside: Path | str | None = None,
                 store: DecodedStore | None = None, places: RowPlaces | None = None):
        self.paths = [Path(p) for p in paths]
        self.max_side = None if max_side is None else int(max_side)
        self.inside = None if inside is None else Path(inside)
        self.store = store  # where decoded pixels are kept between passes; None: decode on every read
        self.places = places

    def with_store(self, store: DecodedStore | None) -> "FileImages":
        """The same images, read through a store of decoded pixels."""
        return FileImages(self.paths, self.max_side, self.inside, store, self.places)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> np.ndarray:
        path = self.paths[i]
        try:
            if self.inside is not None:
                check_contained(self.inside, [str(path)], lambda _: str(path), resolve=True)
            if self.store is None:
                return load_image(path, self.max_side)
            return np.array(self.store.get(path, self.max_side, load_image))  # a writable copy in memory
        except DataError as error:
            if self.places is None:
                raise
            raise DataError(f"{self.places[i]}: {error}") from None

    def batch(self, indices: Sequence[int]):
        return stack_if_uniform([self[int(i)] for i in indices])


# PIL's own limit: above it an image is refused as a decompression bomb rather than decoded
MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485
BOMB_ERRORS = (Image.DecompressionBombError, Image.DecompressionBombWarning)


@contextmanager
def open_image(path: Path, max_side: int | None = None) -> Iterator[Image.Image]:
    """An image decoded in full; a decompression bomb (more than MAX_IMAGE_PIXELS pixels) is a DataError
    naming the file, where PIL would only warn below twice the limit. With `max_side`, a JPEG is decoded
    at the smallest DCT scale whose longer side still reaches it (never below: `load_image` shrinks the rest)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(path)
    except BOMB_ERRORS as error:
        raise _bomb(path, str(error)) from None
    with image:
        if image.width * image.height > MAX_IMAGE_PIXELS:  # also when a library has switched PIL's check off
            raise _bomb(path, f"{image.width} x {image.height} pixels")
        if max_side is not None and max(image.size) > 2 * max_side:
            scale = max_side / max(image.size)
            image.draft(image.mode, (math.ceil(image.width * scale), math.ceil(image.height * scale)))
        image.load()  # decode now, so truncated files fail here with their name
        yield image


def _bomb(path: Path, detail: str) -> DataError:
    return DataError(f"{path}: refused as a possible decompression bomb ({detail}); "
                     f"downscale the image below {MAX_IMAGE_PIXELS:,} pixels")


def load_image(path: Path, max_side: int | None = None) -> np.ndarray:
    """A file -> uint8 RGB [H, W, 3], EXIF orientation applied, at its own size (or shrunk to `max_side`)."""
    try:
        with open_image(path, max_side) as image:
            image = ImageOps.exif_transpose(image)
            rgb = _to_rgb(image)
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as error:
        raise DataError(f"{path}: cannot read image ({error})") from error
    if max_side is not None and max(rgb.size) > max_side:
        scale = max_side / max(rgb.size)
        size = (max(1, round(rgb.width * scale)), max(1, round(rgb.height * scale)))
        rgb = rgb.resize(size, Image.Resampling.BICUBIC, reducing_gap=None)
    return np.asarray(rgb, dtype=np.uint8)


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode in ("I", "I;16", "I;16B", "I;16L"):
        # 16-bit greyscale (common for X-ray PNGs): scale to 8 bits rather than clipping at 255.
        array = np.asarray(image, dtype=np.float64) / 257.0
        image = Image.fromarray(np.clip(np.rint(array), 0, 255).astype(np.uint8), mode="L")
    return image.convert("RGB")  # greyscale is replicated to three channels


class FileSplits:
    """`split(name)` for datasets holding, per example, an id, an image file, a label, a group and a split
    (attributes `ids`, `files`, `labels`, `groups`, `assignment`, plus `meta`, the options' `max_side`,
    `image_folder` and, optionally, `places`)."""

    places: RowPlaces | None = None  # where each file was listed, when known
    attributes: dict[str, np.ndarray] = {}  # attribute -> subgroup per example (datasets.subgroups); replaced, never mutated

    @property
    def max_side(self) -> int | None:
        return self.options.max_side

    def split(self, name: str) -> SplitData:
        if name not in SPLITS:
            raise DataError(f"unknown split {name!r} for {self.meta.name}; expected one of {', '.join(SPLITS)}")
        members = np.flatnonzero(self.assignment == name)
        return SplitData(
            ids=self.ids[members],
            images=FileImages([self.files[i] for i in members], self.max_side, inside=self.image_folder,
                              places=None if self.places is None else self.places.take(members)),
            labels=self.labels[members],
            groups=self.groups[members],
            subgroups={name: values[members] for name, values in self.attributes.items()},
        )
