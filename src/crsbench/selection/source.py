"""DATA -> the dataset a suite names, the inferred task, and where each example came from (file, line).

A folder holds a labels CSV (`labels.csv`, or its only CSV) and the images, beside it or under
`images/`. An `.npz` holds either MedMNIST's arrays (`train_images`, `train_labels`, ...; the kind
`medmnist`, whose metadata declares the task) or `images` and `labels` (the kind `npz`, split here
with a grouped, stratified split).
"""

from __future__ import annotations

import csv
import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from crsbench.datasets.arrays import NpzArchive, check_image_header, check_rows, refuse_non_finite
from crsbench.datasets.labels import refuse_repeated_columns
from crsbench.datasets.paths import Containment, contained, real_folder
from crsbench.datasets.subgroups import parse_attributes
from crsbench.errors import DataError
from crsbench.core.modalities import canonical_modality
from crsbench.selection.task import AlikeClasses, LabelProblem, TaskFacts, infer_from_array, infer_from_columns

MEDMNIST_KEYS = ("train_images", "train_labels", "val_images", "val_labels", "test_images", "test_labels")
SPLIT_COLUMN = "split"  # used when the CSV has one
DEFAULT_LABEL_COLUMN = "label"
# Example ids of array datasets: `{name}-{split}-{index:05d}` (MedMNIST) or `{name}-{index:06d}` (npz)
_ARRAY_ID = re.compile(r"-(?:(?P<split>train|val|test)-)?(?P<index>\d+)$")


def modality_name(choice: str | None, default: str = "generic") -> str:
    """--modality -> the perturbation family set; the one vocabulary, old spellings as aliases."""
    return default if choice is None else canonical_modality(choice)


@dataclass(frozen=True)
class Cohort:
    """One DATA argument, understood: its dataset options, its task, and how to name its rows."""

    path: Path
    options: dict  # the suite's dataset mapping: kind plus options
    facts: TaskFacts
    described: str  # one line: what DATA is
    csv: Optional[Path] = None
    lines: dict[str, int] = field(default_factory=dict)  # image id -> CSV line (folder)
    group_column: Optional[str] = None

    def row(self, image_id: str) -> str:
        """Where one example sits in DATA: `12` (a CSV line), `train row 17` (a MedMNIST split's array
        index, from 0) or `row 17` (an `.npz` array index, from 0)."""
        if self.csv is not None:
            return str(self.lines.get(image_id, "?"))
        found = _ARRAY_ID.search(image_id)
        if found is None:
            return f"id {image_id}"
        split, index = found.group("split"), int(found.group("index"))
        return f"{split} row {index}" if split else f"row {index}"

    def where(self, image_id: str) -> str:
        """`labels.csv line 12` for a folder, `retinamnist.npz: train row 17` for arrays."""
        if self.csv is not None:
            return f"{self.csv} line {self.row(image_id)}"
        return f"{self.path}: {self.row(image_id)}"

    @property
    def unit(self) -> str:
        return "test patients" if self.group_column else "test images"


SUBGROUP_OPTION = {"folder": "subgroups", "npz": "subgroups_key"}  # the dataset option that names attributes


def open_cohort(data: Path, *, label_column: str | None = None, image_column: str = "image",
                group_column: str | None = None, ordinal: bool = False, modality: str | None = None,
                name: str | None = None, role: str = "data", subgroup_columns: Sequence[str] = ()) -> Cohort:
    """`role` is `data` for the cohort, `shift` for a shift set (every example a test example).
    `subgroup_columns`: attribute specs (datasets.subgroups), read from the CSV's columns or the .npz's keys."""
    data = Path(data).expanduser()
    if data.is_dir():
        cohort = _folder(data, label_column, image_column, group_column, ordinal, modality, name, role,
                         tuple(subgroup_columns))
    elif data.is_file() and data.suffix.lower() == ".npz":
        cohort = _npz(data, label_column, group_column, ordinal, modality, name, role)
    else:
        cohort = None
    if cohort is not None:
        if subgroup_columns:
            option = SUBGROUP_OPTION.get(cohort.options["kind"])
            if option is None:
                raise DataError(f"{data}: --subgroup-column: a {cohort.options['kind']} file carries no subgroup "
                                "attributes (a folder's CSV columns or an .npz's keys do)")
            cohort.options[option] = list(subgroup_columns)
        return cohort
    if not data.exists():
        raise DataError(f"{data}: no such folder or file")
    raise DataError(f"{data}: expected a folder with a labels CSV, or an .npz file")


# ----------------------------------------------------------------------------- folder


def _labels_csv(folder: Path) -> Path:
    preferred = folder / "labels.csv"
    if os.path.lexists(preferred) and _inside_cohort(folder, preferred).is_file():
        return preferred
    found = sorted(folder.glob("*.csv"))
    if len(found) == 1:
        return _inside_cohort(folder, found[0])
    if not found:
        raise DataError(f"{folder}: no labels CSV (expected labels.csv with an image and a label column)")
    raise DataError(f"{folder}: {len(found)} CSV files and none is labels.csv: {', '.join(p.name for p in found)}")


def _inside_cohort(folder: Path, path: Path) -> Path:
    """`path` when, symbolic links followed, it lies inside the cohort folder; checked before it is opened."""
    target, real = os.path.realpath(path), real_folder(folder)
    if target != real and not target.startswith(real.rstrip(os.sep) + os.sep):
        raise DataError(f"{path}: a symbolic link to {target}, outside the cohort folder {folder}; copy what it "
                        "holds into the cohort folder (select reads nothing outside it)")
    return path


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]], list[int]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            header = [c.strip() for c in reader.fieldnames or []]
            reader.fieldnames = header
            refuse_repeated_columns(path, header)
            rows, lines = [], []
            for row in reader:
                rows.append({k: (v or "") for k, v in row.items() if k is not None})
                lines.append(reader.line_num)
    except (UnicodeDecodeError, csv.Error) as error:
        raise DataError(f"{path}: not a readable UTF-8 CSV ({error})") from None
    if not header:
        raise DataError(f"{path}: empty file, expected a header row")
    if not rows:
        raise DataError(f"{path}: no data rows")
    return header, rows, lines


def _label_columns(path: Path, header: list[str], given: str | None, taken: set[str]) -> list[str]:
    if given:
        columns = [c.strip() for c in given.split(",") if c.strip()]
        for column in columns:
            if column not in header:
                raise DataError(f"{path}: missing label column '{column}' (columns: {', '.join(header)})")
        return columns
    if DEFAULT_LABEL_COLUMN in header:
        return [DEFAULT_LABEL_COLUMN]
    rest = [c for c in header if c not in taken]
    if len(rest) == 1:
        return rest  # the only column left can only be the label
    raise DataError(f"{path}: missing label column '{DEFAULT_LABEL_COLUMN}' (columns: {', '.join(header)}); "
                    "name it with --label-column (several, comma-separated, for multi-label)")


def _image_root(folder: Path, first_image: str, where: str) -> Path:
    """The folder the CSV's paths are relative to: the cohort folder or its `images/`, whichever holds the
    first image. A linked `images/` must lead inside the cohort folder, checked before anything in it is."""
    images = folder / "images"
    if images.is_symlink():
        _inside_cohort(folder, images)
    for root in (folder, images):
        candidate = contained(root, first_image, where, resolve=False)  # nothing outside is even stat'ed
        Containment(root).folders(os.fspath(candidate), first_image, lambda: where)
        if candidate.exists() or any(candidate.parent.glob(f"{glob.escape(candidate.name)}.*")):
            return root
    return images if images.is_dir() else folder


def _folder(folder, label_column, image_column, group_column, ordinal, modality, name, role,
            subgroup_columns: tuple[str, ...] = ()) -> Cohort:
    path = _labels_csv(folder)
    header, rows, lines = _read_csv(path)
    attribute_columns = [a.column for a in parse_attributes(subgroup_columns, "--subgroup-column")]
    for column, option in ((image_column, "--image-column"), (group_column, "--group-column"),
                           *((c, "--subgroup-column") for c in attribute_columns)):
        if column is not None and column not in header:
            raise DataError(f"{path}: missing column '{column}' (columns: {', '.join(header)}); name it with {option}")
    split_column = SPLIT_COLUMN if SPLIT_COLUMN in header and role == "data" else None
    taken = {image_column, group_column, split_column, *attribute_columns} - {None}
    columns = _label_columns(path, header, label_column, taken)
    try:
        facts = infer_from_columns({c: [r[c] for r in rows] for c in columns}, ordinal=ordinal)
    except LabelProblem as problem:
        raise DataError(f"{path} line {lines[problem.row]}: {problem.value!r} in column '{problem.column}' "
                        f"({problem.hint})") from None
    except AlikeClasses as alike:
        first, second = (lines[r] for r in alike.rows)
        raise DataError(f"{path}: class names {alike.clash.first!r} (line {first}) and {alike.clash.second!r} "
                        f"(line {second}) in column '{alike.column}' {alike.clash.how}; use one spelling "
                        "(they would count as two classes)") from None
    except ValueError as error:
        raise DataError(f"{path}: {error}") from None
    ids = [r[image_column].strip() for r in rows]
    root = _image_root(folder, ids[0], f"{path} line {lines[0]}")
    options = {
        "kind": "folder", "root": str(root.resolve()), "csv": str(path.resolve()), "image_column": image_column,
        "label_columns": columns[0] if len(columns) == 1 else columns, "task_type": facts.task_type,
        "modality": modality_name(modality), "name": name or folder.resolve().name,
    }
    if facts.task_type == "single_label":
        options["class_names"] = list(facts.class_names)  # declared, so a shift set numbers them alike
    if group_column:
        options["group_column"] = group_column
    if split_column:
        options["split_column"] = split_column
    if role == "shift":
        options["fractions"] = [0, 0, 1]  # a shift set is only ever tested on
    described = (f"{folder}: {len(rows)} images listed in {path.name}, images under {root}"
                 + (f", split from column '{split_column}'" if split_column else "")
                 + (f", grouped by '{group_column}'" if group_column else ""))
    return Cohort(folder, options, facts, described, path, dict(zip(ids, lines)), group_column)


# ----------------------------------------------------------------------------- npz


def _npz(path, label_column, group_column, ordinal, modality, name, role) -> Cohort:
    with NpzArchive(path) as archive:  # every member's header is checked before its array is read
        if all(k in archive.keys for k in MEDMNIST_KEYS):
            return _medmnist(path, archive, ordinal, modality, name, role)
        return _plain_npz(path, archive, archive.keys, label_column, group_column, ordinal, modality, name, role)


def _medmnist(path, archive, ordinal, modality, name, role) -> Cohort:
    from crsbench.datasets.medmnist import MEDMNIST_DATASETS

    info = MEDMNIST_DATASETS.get(path.stem.lower())
    if info is None:
        raise DataError(f"{path}: MedMNIST arrays, but the file name is not a MedMNIST dataset "
                        f"({', '.join(sorted(MEDMNIST_DATASETS))}); rename it or save 'images' and 'labels' keys")
    if role == "shift":
        raise DataError(f"{path}: a MedMNIST file has its own splits; a shift set needs 'images' and 'labels' keys")
    parts = {split: archive.read(f"{split}_labels") for split in ("train", "val", "test")}
    for split, labels in parts.items():
        _refuse_negative(path, split, labels)
    labels = np.concatenate(list(parts.values()))
    try:
        facts = infer_from_array(labels, ordinal=ordinal and info.task_type != "ordinal", declared=info.task_type,
                                 class_names=info.class_names)
    except ValueError as error:
        raise DataError(f"{path}: {error}") from None
    if facts.task_type != info.task_type:
        raise DataError(f"{path}: MedMNIST declares {info.name} {info.task_type}; --ordinal cannot change it")
    options = {"kind": "medmnist", "name": info.name, "path": str(path.resolve())}
    sizes = "/".join(str(len(part)) for part in parts.values())
    described = f"{path}: MedMNIST {info.name}, official splits train/val/test {sizes}"
    if modality is not None and modality_name(modality) != info.modality:
        described += f" (perturbations for {modality_name(modality)}, not MedMNIST's {info.modality})"
    return Cohort(path, options, facts, described)


def _refuse_negative(path: Path, split: str, labels: np.ndarray) -> None:
    """A negative class index, named by its split and row (the concatenated row would mislead)."""
    if not np.issubdtype(labels.dtype, np.number):
        return
    bad = np.flatnonzero((labels.reshape(len(labels), -1) < 0).any(axis=1))
    if bad.size:
        raise DataError(f"{path}: {split} row {int(bad[0])}: label {labels[bad[0]].tolist()} is negative "
                        f"(key '{split}_labels'; class indices start at 0)")


def _plain_labels(path: Path, archive: NpzArchive, labels_key: str, group_column: str | None) -> np.ndarray:
    """The label array, once the images' and labels' headers agree; a missing (NaN) class index names its row."""
    n = check_image_header(archive, "images").shape[0]
    for key, what in ((labels_key, "labels"), (group_column, "groups")):
        if key is not None:
            check_rows(archive, key, n, what)
    labels = archive.read(labels_key)
    multi = labels.ndim == 2 and labels.shape[1] > 1  # NaN masks a multi-label entry
    refuse_non_finite(path, labels_key, labels, allow_nan=multi,
                      nan_is="a missing label: every image needs a class index")
    return labels


def _plain_npz(path, archive, keys, label_column, group_column, ordinal, modality, name, role) -> Cohort:
    labels_key = label_column or "labels"
    for key, option in (("images", None), (labels_key, "--label-column"), (group_column, "--group-column")):
        if key is not None and key not in keys:
            hint = f"; name it with {option}" if option else ""
            raise DataError(f"{path}: key '{key}' missing (keys: {', '.join(keys)}){hint}")
    labels = _plain_labels(path, archive, labels_key, group_column)
    try:
        facts = infer_from_array(labels, ordinal=ordinal)
    except ValueError as error:
        raise DataError(f"{path}: key '{labels_key}': {error}") from None
    options = {
        "kind": "npz", "path": str(path.resolve()), "labels_key": labels_key, "class_names": list(facts.class_names),
        "task_type": facts.task_type, "modality": modality_name(modality), "name": name or path.stem,
        "split": "test" if role == "shift" else "auto",
    }
    if group_column:
        options["groups_key"] = group_column
    if role == "data" and "split" in keys:
        options["split_key"] = "split"
    described = f"{path}: {len(labels)} images in arrays"
    return Cohort(path, options, facts, described, group_column=group_column)
