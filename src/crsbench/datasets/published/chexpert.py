"""CheXpert-v1.0 and CheXpert-v1.0-small (Stanford ML Group), read as released.

Layout: the unzipped release folder (`CheXpert-v1.0-small/` or `CheXpert-v1.0/`) holds

    train.csv   Path,Sex,Age,Frontal/Lateral,AP/PA,<14 observations>   (1.0 / 0.0 / -1.0 / blank)
    valid.csv   same columns (used only with include_valid: true)
    train/patient00001/study1/view1_frontal.jpg ...

`root` (or $CHEXPERT_ROOT) is that folder or the folder above it. `Path` in the CSV starts with the release
folder's name (`CheXpert-v1.0-small/train/...`), so images are found relative to the release folder.
A `csv` option reads another copy of train.csv (e.g. a .csv.gz) with images still under the root.

Frontal views only (laterals dropped and counted); the 5 competition labels with a per-label
uncertainty policy (see `cxr_labels`); splits grouped by patient (the `patientNNNNN` part of Path) and
stratified on the certain positives, so every uncertainty policy shares one split.

Images are not checked when the dataset is built (223k files): pass check_images: true, or run
`crsbench datasets check`, to stat every listed file; otherwise a missing file fails when its pixels are
first read, with its name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from crsbench.datasets.kind import DatasetInfo, KindOptions, PathLike
from crsbench.datasets.published.common import (
    DrawnSplitOptions,
    Listing,
    PublishedDataset,
    check_allowed,
    check_unique,
    count_drop,
    csv_line,
    explicit_file,
    find_file,
    read_table,
    release_attributes,
    resolve_root,
)
from crsbench.datasets.published.cxr_labels import COMPETITION_LABELS, certain_positives, label_matrix, resolve_policy
from crsbench.datasets.subgroups import DECADES, AttributeSpec
from crsbench.errors import DataError

NAME = "chexpert"
TITLE = "CheXpert"
ENV_VAR = "CHEXPERT_ROOT"
RELEASE_FOLDERS = ("CheXpert-v1.0-small", "CheXpert-v1.0")
VIEWS = ("Frontal", "Lateral")
RELEASE_PREFIX = r"^(?:CheXpert-v1\.0-small|CheXpert-v1\.0)/"
PATIENT_PATTERN = r"(patient\d+)"
LICENCE = "Stanford University School of Medicine CheXpert Dataset Research Use Agreement (non-commercial)"


class CheXpertOptions(DrawnSplitOptions):
    csv: Optional[PathLike] = None
    uncertainty: Union[str, dict[str, str], None] = None
    include_valid: bool = False
    check_images: bool = False  # 223k files: checked on request


class CheXpertDataset(PublishedDataset):
    """Frontal chest X-rays, 5 competition labels, multi-label with an uncertainty policy."""

    info: ClassVar[DatasetInfo] = DatasetInfo(
        name=NAME, task_type="multi_label", class_names=COMPETITION_LABELS, modality="chest_xray", licence=LICENCE,
        title="CheXpert-v1.0(-small)", summary="cxr: 5 labels, frontal, grouped by patient", env_var=ENV_VAR,
        layout="train.csv (Path, Frontal/Lateral, 14 observations), train/patientNNNNN/studyN/*.jpg",
        access="Stanford research use agreement",
    )  # fmt: skip
    Options: ClassVar[type[KindOptions]] = CheXpertOptions
    options: CheXpertOptions

    def _build(self) -> None:
        o = self.options
        root = resolve_root(o.root, ENV_VAR, TITLE)
        release = release_folder(root)
        policy = resolve_policy(o.uncertainty)
        csv_paths = [explicit_file(o.csv, TITLE) if o.csv is not None else find_file(release, ("train.csv", "train.csv.gz"), TITLE)]
        if o.include_valid:
            csv_paths.append(find_file(release, ("valid.csv", "valid.csv.gz"), TITLE))
        listing = read_listing(release, csv_paths, policy)
        meta = self.info_for(o).to_meta(
            description="CheXpert frontal views, 5 competition labels, split grouped by patient", source=str(root),
        )
        split_options = {"include_valid": o.include_valid, "view": "Frontal"}
        self._finish(root, listing, meta, split_options, label_options={"policy": policy})
        self.policy = policy


def release_folder(root: Path) -> Path:
    """The folder holding train.csv: the root itself, or the release folder inside it."""
    if (root / "train.csv").is_file() or (root / "train.csv.gz").is_file():
        return root
    for name in RELEASE_FOLDERS:
        if (root / name).is_dir():
            return root / name
    return root


def read_listing(release: Path, csv_paths: Sequence[Path], policy: Mapping[str, str]) -> Listing:
    parts = [read_part(release, path, policy) for path in csv_paths]
    dropped: dict[str, int] = {}
    for part in parts:
        for reason, n in part.dropped.items():
            count_drop(dropped, reason, n)
    ids = np.concatenate([p.ids for p in parts])
    names = set.intersection(*(set(p.attributes) for p in parts))
    check_unique(pd.Series(ids), csv_paths[0], "Path")  # train and valid must not share a Path either
    return Listing(
        ids=ids,
        files=[f for p in parts for f in p.files],
        labels=np.concatenate([p.labels for p in parts]),
        strata=np.concatenate([p.strata for p in parts]),
        groups=np.concatenate([p.groups for p in parts]),
        sources=tuple(csv_paths),
        dropped=dropped,
        image_folder=release,
        lines=np.concatenate([p.lines for p in parts]),
        line_sources=np.concatenate([np.full(len(p.ids), k) for k, p in enumerate(parts)]),
        attributes={name: np.concatenate([p.attributes[name] for p in parts]) for name in sorted(names)},
    )


def read_part(release: Path, csv_path: Path, policy: Mapping[str, str]) -> Listing:
    table = read_table(csv_path, ["Path", "Frontal/Lateral", *COMPETITION_LABELS])
    table["Path"] = table["Path"].str.strip()
    check_unique(table["Path"], csv_path, "Path")
    views = table["Frontal/Lateral"].str.strip()
    check_allowed(views, VIEWS, csv_path, "Frontal/Lateral")
    frontal = (views == "Frontal").to_numpy()
    dropped: dict[str, int] = {}
    count_drop(dropped, "lateral_view", int((~frontal).sum()))
    table = table[frontal]
    paths = table["Path"].to_numpy().astype(str)
    attributes = release_attributes(table, ATTRIBUTES, csv_path)
    return Listing(
        ids=paths,
        files=image_files(release, table["Path"], csv_path),
        labels=label_matrix(table, policy, csv_path),
        strata=certain_positives(table),
        groups=patient_ids(table, csv_path),
        sources=(csv_path,),
        dropped=dropped,
        lines=table.index.to_numpy() + 2,  # the index is the row's position in the CSV; header = line 1
        attributes=attributes,
    )


# the release's attribute columns and the attribute each becomes (a numeric age banded by decade)
ATTRIBUTES = (AttributeSpec("Sex", label="sex"), AttributeSpec("Age", DECADES, "age_band"),
              AttributeSpec("AP/PA", label="view"))


def image_files(release: Path, csv_paths: pd.Series, csv_path: Path | None = None) -> list[str]:
    """Each image's file: Path starts with the release folder's name, which is dropped (vectorised: 200k rows).

    An absolute Path is refused (naming its line); `..` out of the release is refused by the shared check.
    """
    absolute = np.flatnonzero(csv_paths.str.startswith(("/", "\\")).to_numpy())
    if len(absolute):
        first = absolute[0]
        raise DataError(
            f"{csv_path} line {csv_line(csv_paths.index[first])}: image path {csv_paths.iloc[first]!r} is absolute;"
            f" paths must be relative to {release.parent}"
        )
    relative = csv_paths.str.replace(RELEASE_PREFIX, "", regex=True)
    return (os.path.join(release, "") + relative).tolist()


def patient_ids(table: pd.DataFrame, csv_path: Path) -> np.ndarray:
    patients = table["Path"].str.extract(PATIENT_PATTERN, expand=False)
    absent = np.flatnonzero(patients.isna().to_numpy())
    if len(absent):
        position = table.index[absent[0]]
        raise DataError(
            f"{csv_path} line {csv_line(position)}: no patient id (patientNNNNN) in Path"
            f" {table['Path'].iloc[absent[0]]!r} ({len(absent)} such rows)"
        )
    return patients.to_numpy().astype(str)
