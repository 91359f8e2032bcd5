"""A folder of images plus a labels CSV, for a team's own data.

The CSV has one row per image: a column naming the image file (relative to the root folder, and
inside it once symbolic links are followed: an absolute path, `..` out of the folder or a link
leading out is refused, naming the CSV line; the extension may be left off, then the known image extensions are tried), one label column
for single-label and ordinal tasks or several 0/1 columns for multi-label tasks, and optionally
a group column (patient / lesion id) and a split column (train / val / test). Without a split
column the splits come from `grouped_stratified_split`.

Labels are compared in NFC without surrounding spaces (`datasets.labels`). Refused, naming the lines: a
column named twice in the header, a missing label (empty, `nan`, `NA`, ...) in a single-label or ordinal
task (a blank multi-label cell is a mask), and two spellings of one class that read alike.

The CSV and the file listing are checked when the dataset is built; the images themselves are
decoded lazily, one at a time, when a batch asks for them (`image_files`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Optional, Sequence, Union

import numpy as np

from crsbench.core.hashing import sha256_of
from crsbench.datasets.base import DatasetMeta
from crsbench.datasets.image_files import FileSplits, RowPlaces
from crsbench.datasets.kind import (
    DatasetInfo,
    DatasetKind,
    FileKindOptions,
    KindOptions,
    MaxSide,
    ModalityName,
    Number,
    PathLike,
)
from crsbench.datasets.labels import alike_rows, declared_names, is_missing, normal_label, refuse_repeated_columns
from crsbench.datasets.paths import Containment, contained
from crsbench.datasets.splits import grouped_stratified_split
from crsbench.datasets.subgroups import attribute_values, check_varies, parse_attributes
from crsbench.errors import DataError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
SPLIT_ALIASES = {"train": "train", "val": "val", "valid": "val", "validation": "val", "test": "test"}
_SHOWN = 5  # how many offending names an error message lists


def _size_and_mtime(path: Path) -> tuple:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _content(path: Path) -> tuple:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return (digest.hexdigest(),)


# how an image enters the folder fingerprint
FINGERPRINT_MODES = {"mtime": _size_and_mtime, "content": _content}


@dataclass(frozen=True)
class _Row:
    line: int  # line number in the CSV, header = 1, for error messages
    values: dict[str, str]


class FolderOptions(FileKindOptions):
    """The folder kind's options, in the order its constructor takes them by position."""

    root: PathLike
    csv: PathLike
    image_column: str = "image"
    label_columns: Union[str, list[str]] = "label"
    task_type: str = "single_label"
    group_column: Optional[str] = None
    split_column: Optional[str] = None
    class_names: Optional[list[str]] = None
    max_side: MaxSide = None
    extensions: list[str] = list(IMAGE_EXTENSIONS)
    split_seed: int = 0
    fractions: list[Number] = [0.7, 0.1, 0.2]
    name: Optional[str] = None
    modality: ModalityName = "generic"
    fingerprint: Literal["mtime", "content"] = "mtime"
    # subgroup attributes from columns of the CSV (datasets.subgroups specs): not in the fingerprint, so adding
    # them re-keys no record
    subgroups: list[str] = []


def label_columns(options: FolderOptions) -> tuple[str, ...]:
    return (options.label_columns,) if isinstance(options.label_columns, str) else tuple(options.label_columns)


class FolderDataset(FileSplits, DatasetKind):
    """Images under `root`, labels in `csv`; see the module docstring for the CSV layout.

    Built from `FolderOptions`, or its fields: `FolderDataset(root, csv, label_columns="dx")`.
    """

    info: ClassVar[DatasetInfo] = DatasetInfo(
        title="A folder of images and a labels CSV", summary="a team's own data",
        layout="<root>/<image files>, a CSV with image, label(s), optional group and split columns",
        access="your own data",
    )
    Options: ClassVar[type[KindOptions]] = FolderOptions
    options: FolderOptions

    @classmethod
    def info_for(cls, options: FolderOptions) -> DatasetInfo:
        """Classes are known here only when named (or, multi-label, from the label columns); else from the CSV."""
        columns = label_columns(options)
        named = tuple(str(c) for c in options.class_names) if options.class_names is not None else None
        classes = named or (columns if options.task_type == "multi_label" else None)
        return cls.info.but(
            name=options.name or Path(options.root).expanduser().name, task_type=options.task_type,
            class_names=classes, modality=options.modality,
        )

    def _build(self) -> None:
        options = self.options
        self.root = Path(options.root).expanduser()
        self.csv_path = Path(options.csv).expanduser()
        # the forms the checks and the fingerprint use: a tuple of columns, dotted extensions, float fractions
        self.label_columns = label_columns(options)
        self.extensions = tuple(e if e.startswith(".") else f".{e}" for e in options.extensions)
        self.fractions = tuple(float(f) for f in options.fractions)

        self._check_paths_exist()
        rows = self._read_rows()
        self.ids = self._image_ids(rows)
        self.root = self._image_root()
        self.files = self._resolve_image_files(rows)
        self.class_names, self.labels = self._parse_labels(rows, options.class_names)
        self.groups = self._groups(rows)
        self.attributes = self._attributes(rows)
        self.assignment = self._splits(rows)
        self.meta = self._build_meta()
        self.image_folder = self.root  # every image lies inside it (FileSplits checks again on reading)
        self.places = RowPlaces([self.csv_path], np.array([row.line for row in rows]))
        self._fingerprint: str | None = None

    # ----- the Dataset protocol

    def fingerprint(self) -> str:
        """`<mode>-<hash>` of the CSV, the options and each image's identity: size and modification time
        (`mtime`, the default: an image edited in place changes it) or its bytes' SHA-256 (`content`: reads
        every image once; survives copies that reset times). The mode is in the value, so the records and
        the run's dataset table say which one a run used."""
        if self._fingerprint is None:
            mode = self.options.fingerprint
            listing = sorted((self._relative(path), *FINGERPRINT_MODES[mode](path)) for path in set(self.files))
            self._fingerprint = mode + "-" + sha256_of(
                self.csv_path.read_bytes(), json.dumps(listing), json.dumps(self._loader_options())
            )
        return self._fingerprint

    # ----- reading and checking the CSV

    def _check_paths_exist(self) -> None:
        if not self.root.is_dir():
            raise DataError(f"image folder not found: {self.root}")
        if not self.csv_path.is_file():
            raise DataError(f"labels CSV not found: {self.csv_path}")

    def _read_rows(self) -> list[_Row]:
        try:
            with open(self.csv_path, newline="", encoding="utf-8-sig") as handle:
                reader = csv.DictReader(handle)
                header = [c.strip() for c in reader.fieldnames or []]
                reader.fieldnames = header
                refuse_repeated_columns(self.csv_path, header)
                self._check_columns(header)
                rows = [_Row(reader.line_num, row) for row in reader]
        except (UnicodeDecodeError, csv.Error) as error:
            raise DataError(f"{self.csv_path}: not a readable UTF-8 CSV ({error})") from error
        if not rows:
            raise DataError(f"{self.csv_path}: no data rows")
        for row in rows:
            if None in row.values or any(row.values.get(c) is None for c in header):
                raise DataError(f"{self.csv_path} line {row.line}: expected {len(header)} fields")
        return rows

    def _check_columns(self, header: list[str]) -> None:
        if not header:
            raise DataError(f"{self.csv_path}: empty file, expected a header row")
        o = self.options
        wanted = [o.image_column, *self.label_columns, o.group_column, o.split_column]
        for column in (c for c in wanted if c is not None):
            if column not in header:
                raise DataError(f"{self.csv_path}: missing column '{column}' (columns: {', '.join(header)})")
        for spec in parse_attributes(o.subgroups, f"{self.csv_path}: subgroups"):
            if spec.column not in header:
                raise DataError(f"{self.csv_path}: subgroup column '{spec.column}' does not exist "
                                f"(columns: {', '.join(header)})")

    def _image_ids(self, rows: list[_Row]) -> np.ndarray:
        column = self.options.image_column
        ids = np.array([row.values[column].strip() for row in rows])
        blank = np.flatnonzero(ids == "")
        if len(blank):
            raise DataError(f"{self.csv_path} line {rows[blank[0]].line}: empty '{column}'")
        self._check_unique_ids(ids)
        return ids

    def _check_unique_ids(self, ids: np.ndarray) -> None:
        names, counts = np.unique(ids, return_counts=True)
        duplicates = names[counts > 1]
        if len(duplicates):
            shown = ", ".join(duplicates[:_SHOWN])
            raise DataError(
                f"{self.csv_path}: {len(duplicates)} image names listed more than once in column"
                f" '{self.options.image_column}': {shown}"
            )

    def _resolve_image_files(self, rows: list[_Row]) -> list[Path]:
        files, missing = [], []
        guard = Containment(self.root)
        for image_id, row in zip(self.ids.tolist(), rows):
            where = f"{self.csv_path} line {row.line}"
            contained(self.root, image_id, where, resolve=False)  # refused before anything is opened
            guard.folders(os.path.join(self.root, image_id), image_id, lambda: where)  # linked folders first
            path = self._find_image(image_id)
            if path is None:
                missing.append(image_id)
            else:
                guard.resolved(os.fspath(path), image_id, lambda: where)  # the file itself, symbolic links followed
            files.append(path)
        if missing:
            shown = ", ".join(missing[:_SHOWN]) + (", ..." if len(missing) > _SHOWN else "")
            raise DataError(f"{self.csv_path}: {len(missing)} listed images not found under {self.root}: {shown}")
        return files

    def _image_root(self) -> Path:
        """`root`, or its `images/` where only that holds the first listed image: the layout `crsbench
        select` reads (labels.csv beside images/). A linked `images/` must lead inside `root`."""
        images = self.root / "images"
        first = str(self.ids[0]) if len(self.ids) else ""
        if not first or os.path.isabs(first) or ".." in Path(first).parts:  # refused later, before any stat
            return self.root
        if not images.is_dir() or self._find_image(first) is not None:
            return self.root
        inside = os.path.realpath(images).startswith(os.path.realpath(self.root) + os.sep)
        if not inside:
            return self.root
        found = FolderDataset._find_image(_Under(images, self.extensions), first)
        return images if found is not None else self.root

    def _find_image(self, image_id: str) -> Path | None:
        path = self.root / image_id
        if path.is_file():
            return path
        if path.suffix.lower() in self.extensions:
            return None
        for extension in self.extensions:
            for candidate in (path.with_name(path.name + extension), path.with_name(path.name + extension.upper())):
                if candidate.is_file():
                    return candidate
        return None

    # ----- labels

    def _parse_labels(self, rows: list[_Row], class_names: Sequence[str] | None):
        task_type = self.options.task_type
        parse = {
            "single_label": self._single_labels,
            "ordinal": self._ordinal_labels,
            "multi_label": self._multi_labels,
        }.get(task_type)
        if parse is None:
            raise DataError(f"task_type must be one of single_label, multi_label, ordinal; got {task_type!r}")
        if task_type != "multi_label" and len(self.label_columns) != 1:
            raise DataError(f"a {task_type} task takes one label column, got {len(self.label_columns)}")
        return parse(rows, class_names)

    def _single_labels(self, rows: list[_Row], class_names: Sequence[str] | None):
        column = self.label_columns[0]
        values = [normal_label(row.values[column]) for row in rows]
        names = self._declared(class_names) if class_names is not None else None
        for value, row in zip(values, rows):
            if is_missing(value) and (names is None or value not in names):  # a declared class may be "NA"
                self._missing_label(row, column, value)
        if names is None:
            names = class_order(values)
            self._refuse_alike(values, rows, column)
        index = {name: i for i, name in enumerate(names)}
        for value, row in zip(values, rows):
            if value not in index:
                self._unknown_label(row, column, value, f"known: {', '.join(names)}")
        return names, np.array([index[v] for v in values], dtype=np.int64)

    def _declared(self, class_names: Sequence[str]) -> tuple[str, ...]:
        try:
            return declared_names(class_names, f"{self.csv_path}: class_names")
        except ValueError as error:
            raise DataError(str(error)) from None

    def _refuse_alike(self, values: list[str], rows: list[_Row], column: str) -> None:
        """Two spellings of one class (case, invisible characters, look-alike letters) would make two classes."""
        alike = alike_rows(values)
        if alike is not None:
            clash, first, second = alike
            raise DataError(
                f"{self.csv_path}: class names {clash.first!r} (line {rows[first].line}) and {clash.second!r}"
                f" (line {rows[second].line}) in column '{column}' {clash.how}; use one spelling"
                " (they would count as two classes)"
            )

    def _ordinal_labels(self, rows: list[_Row], class_names: Sequence[str] | None):
        if class_names is not None:  # named grades, in order
            return self._single_labels(rows, class_names)
        column = self.label_columns[0]
        grades = [self._integer_grade(row, column) for row in rows]
        lowest, highest = min(grades), max(grades)
        # Keep every grade between the extremes so the ordinal scale has no gaps.
        names = tuple(str(g) for g in range(lowest, highest + 1))
        return names, np.array(grades, dtype=np.int64) - lowest

    def _integer_grade(self, row: _Row, column: str) -> int:
        value = normal_label(row.values[column])
        if is_missing(value):
            self._missing_label(row, column, value)
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not number.is_integer():
            self._unknown_label(row, column, value, "ordinal grades must be integers")
        return int(number)

    def _multi_labels(self, rows: list[_Row], class_names: Sequence[str] | None):
        names = self._declared(class_names if class_names is not None else self.label_columns)
        if len(names) != len(self.label_columns):
            raise DataError(f"{len(names)} class names for {len(self.label_columns)} label columns")
        labels = np.empty((len(rows), len(self.label_columns)), dtype=np.float32)
        for r, row in enumerate(rows):
            for c, column in enumerate(self.label_columns):
                labels[r, c] = self._binary_value(row, column)
        return names, labels

    def _binary_value(self, row: _Row, column: str) -> float:
        value = row.values[column].strip()
        if value == "":
            return np.nan  # blank: masked, neither trained nor scored on
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if number not in (0.0, 1.0):
            self._unknown_label(row, column, value, "multi-label values must be 0, 1 or blank")
        return number

    def _missing_label(self, row: _Row, column: str, value: str):
        raise DataError(f"{self.csv_path} line {row.line}: missing label {value!r} in column '{column}' (a label is"
                        " required: fill it in or drop the row)")

    def _unknown_label(self, row: _Row, column: str, value: str, hint: str):
        raise DataError(f"{self.csv_path} line {row.line}: unknown label {value!r} in column '{column}' ({hint})")

    # ----- groups, splits, meta

    def _groups(self, rows: list[_Row]) -> np.ndarray:
        column = self.options.group_column
        if column is None:
            return self.ids.copy()
        groups = np.array([row.values[column].strip() for row in rows])
        blank = np.flatnonzero(groups == "")
        if len(blank):
            raise DataError(f"{self.csv_path} line {rows[blank[0]].line}: empty group in column '{column}'")
        return groups

    def _attributes(self, rows: list[_Row]) -> dict[str, np.ndarray]:
        attributes = {}
        for spec in parse_attributes(self.options.subgroups, f"{self.csv_path}: subgroups"):
            where = f"{self.csv_path} column '{spec.column}'"
            values = attribute_values([row.values[spec.column] for row in rows], spec, where,
                                      lambda i: f"line {rows[i].line}")
            check_varies(values, where)
            attributes[spec.name] = values
        return attributes

    def _splits(self, rows: list[_Row]) -> np.ndarray:
        column = self.options.split_column
        if column is None:
            try:
                return grouped_stratified_split(self.labels, self.groups, self.fractions, self.options.split_seed)
            except ValueError as error:
                raise DataError(f"{self.csv_path}: cannot split ({error})") from error
        assignment = []
        for row in rows:
            value = row.values[column].strip()
            if value.lower() not in SPLIT_ALIASES:
                raise DataError(
                    f"{self.csv_path} line {row.line}: unknown split {value!r} in column"
                    f" '{column}' (expected train, val or test)"
                )
            assignment.append(SPLIT_ALIASES[value.lower()])
        assignment = np.array(assignment)
        self._check_groups_within_one_split(assignment)
        return assignment

    def _check_groups_within_one_split(self, assignment: np.ndarray) -> None:
        # A patient in two splits leaks between training and testing.
        seen: dict[str, str] = {}
        for group, split in zip(self.groups.tolist(), assignment.tolist()):
            if seen.setdefault(group, split) != split:
                raise DataError(
                    f"{self.csv_path}: group {group!r} appears in both '{seen[group]}' and '{split}'"
                    f" (column '{self.options.split_column}')"
                )

    def _build_meta(self) -> DatasetMeta:
        try:
            return self.info_for(self.options).to_meta(
                description=f"images under {self.root}, labels from {self.csv_path.name}", source=str(self.root),
                class_names=self.class_names,  # the CSV's, whether or not the options named them
            )
        except ValueError as error:
            raise DataError(f"{self.csv_path}: {error}") from error

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def _loader_options(self) -> dict:
        """The options that change what is read, in the normalised forms the fingerprint has always hashed."""
        o = self.options
        return {
            "image_column": o.image_column,
            "label_columns": list(self.label_columns),
            "task_type": o.task_type,
            "group_column": o.group_column,
            "split_column": o.split_column,
            "class_names": list(self.class_names),
            "max_side": o.max_side,
            "extensions": list(self.extensions),
            "split_seed": o.split_seed,
            "fractions": list(self.fractions),
        }


def class_order(values) -> tuple[str, ...]:
    """Classes in the order the dataset numbers them: numeric when every value is a whole number."""
    unique = set(values)
    if all(is_integer(v) for v in unique):
        return tuple(sorted(unique, key=int))  # "10" after "9"
    return tuple(sorted(unique))


def is_integer(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


class _Under:
    """What `_find_image` reads, for a folder other than the dataset's root."""

    def __init__(self, root: Path, extensions: tuple[str, ...]):
        self.root, self.extensions = root, extensions
