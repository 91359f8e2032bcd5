"""Arrays read from an `.npz` with limits: each member's `.npy` header is read and checked before its data.

`np.load` trusts an archive: a member whose header declares a 1.4 TiB array is allocated before the read
fails, an object array needs pickle, and a member that is not `.npy` is read whole as bytes. Here the header
is read from the zip member first and checked against the member's real (uncompressed) size, a memory
bound and the shape the caller expects; only then is the array read, from the same open archive.
"""

from __future__ import annotations

import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from crsbench.errors import DataError

# One array may take at most this much memory. The largest official MedMNIST+ array (pathmnist_224
# train_images, 13.5 GB) fits; more in one array is a crafted header or a cohort that belongs in a folder
# of image files, which are decoded one at a time.
MAX_ARRAY_BYTES = 16 * 2**30
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
# what a damaged or crafted archive raises while it is read
ARCHIVE_ERRORS = (OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile, NotImplementedError, RuntimeError)
NUMERIC = "biuf"  # dtype kinds of labels
TEXT_OR_INTEGER = "iuUS"  # dtype kinds of ids, groups and splits


@dataclass(frozen=True)
class Header:
    """What a member's `.npy` header declares, checked against the member's size."""

    key: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=object)) * self.dtype.itemsize

    def described(self) -> str:
        return f"{self.dtype} {list(self.shape)}"


class NpzArchive:
    """An `.npz` opened for checked reading: `keys`, `header(key)`, `read(key)`; use it as a context manager."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        try:
            self._zip = zipfile.ZipFile(self.path)
            names = self._zip.namelist()
        except ARCHIVE_ERRORS as error:
            raise DataError(f"{self.path}: not a readable .npz file ({error})") from None
        twice = [name for name, n in Counter(names).items() if n > 1]
        if twice:  # which one np.load would read is an accident of the zip layout
            self._zip.close()
            raise DataError(f"{self.path}: member '{twice[0]}' appears more than once; the file is damaged or crafted")
        self.keys = [name.removesuffix(".npy") for name in names]  # np.load's names for them
        self._file_bytes = self.path.stat().st_size
        self._headers: dict[str, Header] = {}

    def __enter__(self) -> "NpzArchive":
        return self

    def __exit__(self, *exc) -> None:
        self._zip.close()

    def _member(self, key: str) -> zipfile.ZipInfo:
        if key not in self.keys:
            raise DataError(f"{self.path}: key '{key}' missing (keys: {', '.join(self.keys) or 'none'})")
        try:
            return self._zip.getinfo(f"{key}.npy")
        except KeyError:  # np.load would hand back the member's raw bytes, however large
            raise DataError(f"{self.path}: key '{key}' is not a .npy array") from None

    def header(self, key: str) -> Header:
        """The member's declared shape and dtype, refused unless its data can be read safely."""
        if key not in self._headers:
            member = self._member(key)
            if member.compress_size > self._file_bytes:  # the zip directory itself is lying
                raise DataError(f"{self.path}: key '{key}' claims {member.compress_size:,} stored bytes, more than "
                                f"the whole file ({self._file_bytes:,}); the file is damaged or crafted")
            try:
                with self._zip.open(member) as stream:
                    header, offset = self._read_header(stream, key)
            except ARCHIVE_ERRORS as error:
                raise DataError(f"{self.path}: key '{key}' is unreadable ({error})") from None
            self._check_size(header, member.file_size - offset)
            self._headers[key] = header
        return self._headers[key]

    def _read_header(self, stream, key: str) -> tuple[Header, int]:
        version = np.lib.format.read_magic(stream)
        reader = _HEADER_READERS.get(version)
        if reader is None:  # version 3 only adds UTF-8 field names, i.e. structured arrays
            raise DataError(f"{self.path}: key '{key}' is a .npy of version {version[0]}.{version[1]}; "
                            "save it with numpy.savez as a plain numeric or string array")
        shape, _fortran, dtype = reader(stream)
        if dtype.hasobject:
            raise DataError(f"{self.path}: key '{key}' is unreadable (dtype {dtype}); save it as a numeric or "
                            "string array (object arrays are refused: reading them would run pickled code)")
        return Header(key, tuple(int(n) for n in shape), dtype), stream.tell()

    def _check_size(self, header: Header, data_bytes: int) -> None:
        if header.nbytes != data_bytes:
            raise DataError(f"{self.path}: key '{header.key}' declares {header.described()} ({header.nbytes:,} "
                            f"bytes) but holds {data_bytes:,} bytes of data; the file is damaged or crafted")
        if header.nbytes > MAX_ARRAY_BYTES:
            raise DataError(f"{self.path}: key '{header.key}' is {header.nbytes / 2**30:.1f} GiB "
                            f"({header.described()}), more than the {MAX_ARRAY_BYTES // 2**30} GiB one array may "
                            "take in memory; store the cohort as a folder of image files")

    def read(self, key: str) -> np.ndarray:
        """The member's array, once its header passed `header`."""
        header = self.header(key)
        try:
            with self._zip.open(self._member(key)) as stream:
                return np.lib.format.read_array(stream, allow_pickle=False)
        except ARCHIVE_ERRORS as error:
            raise DataError(f"{self.path}: key '{key}' is unreadable ({error})") from None
        except MemoryError:
            raise DataError(f"{self.path}: key '{key}' ({header.described()}, {header.nbytes:,} bytes) does not "
                            "fit in this machine's memory") from None


def require_kind(archive: NpzArchive, key: str, kinds: str, what: str) -> Header:
    """The header of `key`, refused unless its dtype kind is one of `kinds`."""
    header = archive.header(key)
    if header.dtype.kind not in kinds:
        raise DataError(f"{archive.path}: key '{key}' must hold {what}, got {header.dtype}")
    return header


def check_image_header(archive: NpzArchive, key: str) -> Header:
    """uint8 `[n, H, W]` or `[n, H, W, 1|3]`, at least one image, none of them empty."""
    header = archive.header(key)
    shape = header.shape
    channels_ok = len(shape) == 3 or (len(shape) == 4 and shape[3] in (1, 3))
    if header.dtype != np.uint8 or not channels_ok:
        raise DataError(f"{archive.path}: key '{key}' must be uint8 [n, H, W] or [n, H, W, 1|3], "
                        f"got {header.described()}")
    if 0 in shape[1:3]:
        raise DataError(f"{archive.path}: key '{key}' holds zero-size images ({header.described()})")
    if shape[0] == 0:
        raise DataError(f"{archive.path}: key '{key}' holds no images")
    return header


def check_rows(archive: NpzArchive, key: str, n: int, what: str = "labels") -> Header:
    """One entry per image: `[n]` or `[n, k]`."""
    header = archive.header(key)
    if len(header.shape) not in (1, 2) or header.shape[0] != n:
        raise DataError(f"{archive.path}: key '{key}' must hold {n} {what} ([{n}] or [{n}, k]), "
                        f"got {header.described()}")
    return header


def first_non_finite(array: np.ndarray, allow_nan: bool = False) -> int | None:
    """The first row holding NaN (unless allowed) or an infinity; None when every value is finite."""
    if array.dtype.kind != "f":
        return None
    bad = np.isinf(array) if allow_nan else ~np.isfinite(array)
    rows = np.flatnonzero(bad.reshape(len(array), -1).any(axis=1)) if array.ndim else np.flatnonzero(bad)
    return int(rows[0]) if rows.size else None


def refuse_non_finite(path: Path, key: str, array: np.ndarray, allow_nan: bool = False, nan_is: str = "") -> None:
    """A DataError naming the first row holding NaN (unless allowed) or an infinity; `nan_is` says what a
    NaN means there (e.g. "a missing label")."""
    row = first_non_finite(array, allow_nan)
    if row is not None:
        values = array.reshape(len(array), -1)[row]
        shown = values[~np.isfinite(values)][0]
        why = nan_is if np.isnan(shown) and nan_is else "not a finite number"
        raise DataError(f"{path}: key '{key}' row {row} holds {shown} ({why})")


def read_all(archive: NpzArchive, keys: Sequence[str | None]) -> dict[str, np.ndarray]:
    """The arrays of the keys given (None skipped), each header checked first."""
    return {key: archive.read(key) for key in keys if key is not None}
