"""MIMIC-CXR-JPG 2.x (PhysioNet), read as released: the shift target of the CheXpert task.

Layout under the root (`root` option, else $MIMIC_CXR_JPG_ROOT; the `mimic-cxr-jpg/2.x.y` folder):

    mimic-cxr-2.0.0-chexpert.csv(.gz)   subject_id,study_id,<14 observations>   (labels per study)
    mimic-cxr-2.0.0-metadata.csv(.gz)   dicom_id,subject_id,study_id,...,ViewPosition,...
    mimic-cxr-2.0.0-split.csv(.gz)      dicom_id,study_id,subject_id,split        (train / validate / test)
    files/p10/p10000032/s50414267/<dicom_id>.jpg

Each image takes its study's labels (same 5 labels and uncertainty policy as CheXpert). Frontal means
ViewPosition PA or AP; other views, and frontal images of studies the labeller left out, are dropped and
counted. The splits are MIMIC's official ones (validate -> val), so as a shift target its `test` split is
the official test split; they are still written to a split file so a changed copy is detected.

Images are not checked when the dataset is built (377k files): pass check_images: true, or run
`crsbench datasets check`, to stat every listed file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from crsbench.datasets.kind import DatasetInfo, KindOptions, PathLike
from crsbench.datasets.published.common import (
    PublishedOptions,
    Listing,
    PublishedDataset,
    check_allowed,
    check_unique,
    count_drop,
    explicit_file,
    find_file,
    listed,
    read_table,
    release_attributes,
    resolve_root,
)
from crsbench.datasets.published.cxr_labels import COMPETITION_LABELS, label_matrix, resolve_policy
from crsbench.datasets.subgroups import DECADES, UNKNOWN, AttributeSpec
from crsbench.errors import DataError

NAME = "mimic_cxr"
TITLE = "MIMIC-CXR-JPG"
ENV_VAR = "MIMIC_CXR_JPG_ROOT"
LABELS_CSV = "mimic-cxr-2.0.0-chexpert.csv"
METADATA_CSV = "mimic-cxr-2.0.0-metadata.csv"
SPLIT_CSV = "mimic-cxr-2.0.0-split.csv"
FRONTAL_VIEWS = ("PA", "AP")
OFFICIAL_SPLITS = {"train": "train", "validate": "val", "test": "test"}
LICENCE = "PhysioNet Credentialed Health Data License 1.5.0 (credentialed access, signed DUA)"


class MIMICOptions(PublishedOptions):
    uncertainty: Union[str, dict[str, str], None] = None
    views: list[str] = list(FRONTAL_VIEWS)
    check_images: bool = False  # 377k files: checked on request
    # MIMIC-IV's patients table (patients.csv(.gz): subject_id, gender, anchor_age), a separate credentialed
    # release: with it, each image's sex and age band (subgroup attributes; never in the fingerprint)
    patients: Optional[PathLike] = None


class MIMICCXRDataset(PublishedDataset):
    """Frontal MIMIC-CXR-JPG images with CheXpert-labeller labels and the official split."""

    info: ClassVar[DatasetInfo] = DatasetInfo(
        name=NAME, task_type="multi_label", class_names=COMPETITION_LABELS, modality="chest_xray", licence=LICENCE,
        title="MIMIC-CXR-JPG 2.x", summary="cxr shift: 5 labels, frontal, official split", env_var=ENV_VAR,
        layout="mimic-cxr-2.0.0-{chexpert,metadata,split}.csv(.gz), files/pXX/pSUBJECT/sSTUDY/*.jpg",
        access="PhysioNet credentialed access + DUA",
    )  # fmt: skip
    Options: ClassVar[type[KindOptions]] = MIMICOptions
    options: MIMICOptions

    def _build(self) -> None:
        o = self.options
        root = resolve_root(o.root, ENV_VAR, TITLE)
        sources = tuple(find_file(root, (name, name + ".gz"), TITLE) for name in (LABELS_CSV, METADATA_CSV, SPLIT_CSV))
        policy = resolve_policy(o.uncertainty)
        patients = explicit_file(o.patients, "MIMIC-IV patients") if o.patients is not None else None
        listing = read_listing(root, *sources, policy=policy, views=tuple(o.views), patients_path=patients)
        meta = self.info_for(o).to_meta(
            description="MIMIC-CXR-JPG frontal views, 5 CheXpert labels, official split", source=str(root),
        )
        # the official split: nothing is drawn, so no fractions or seed are added to the split file's options
        self._finish(root, listing, meta, {"views": list(o.views), "split": "official"}, label_options={"policy": policy})
        self.policy = policy


def read_listing(
    root: Path, labels_path: Path, metadata_path: Path, split_path: Path, policy: Mapping[str, str], views: tuple,
    patients_path: Path | None = None,
) -> Listing:
    dropped: dict[str, int] = {}
    images = frontal_images(metadata_path, views, dropped)
    labels = study_labels(labels_path)
    images = images.merge(labels, on=["subject_id", "study_id"], how="left", indicator=True)
    labelled = (images["_merge"] == "both").to_numpy()
    count_drop(dropped, "no_chexpert_labels", int((~labelled).sum()))
    images = images[labelled].reset_index(drop=True)
    return Listing(
        ids=images["dicom_id"].to_numpy().astype(str),
        files=[image_file(root, *row) for row in images[["subject_id", "study_id", "dicom_id"]].itertuples(index=False)],
        labels=label_matrix(labels.loc[images["label_row"]], policy, labels_path),  # index: CSV rows, for errors
        groups=images["subject_id"].to_numpy().astype(str),
        sources=(labels_path, metadata_path, split_path),
        official_split=official_split(split_path, images["dicom_id"]),
        dropped=dropped,
        image_folder=root / "files",
        lines=images["metadata_row"].to_numpy() + 2,  # the paths are built from metadata values
        line_sources=np.ones(len(images), dtype=np.int64),  # sources[1]: the metadata CSV
        attributes={"view": images["ViewPosition"].to_numpy().astype(str),
                    **(patient_attributes(patients_path, images["subject_id"]) if patients_path else {})},
    )


# MIMIC-IV's patients columns and the attribute each becomes (the age at the anchor year, by decade)
PATIENT_ATTRIBUTES = (AttributeSpec("gender", label="sex"), AttributeSpec("anchor_age", DECADES, "age_band"))


def patient_attributes(patients_path: Path, subjects: pd.Series) -> dict[str, np.ndarray]:
    """Sex and age band per image from MIMIC-IV's patients table, by subject_id; a subject the table lacks is
    the UNKNOWN subgroup (counted and shown, never dropped)."""
    table = _stripped(read_table(patients_path, ["subject_id", "gender", "anchor_age"]), ["subject_id"])
    check_unique(table["subject_id"], patients_path, "subject_id")
    values = release_attributes(table, PATIENT_ATTRIBUTES, patients_path)
    rows = pd.Index(table["subject_id"]).get_indexer(subjects.to_numpy())
    out = {}
    for name, column in values.items():
        picked = np.full(len(rows), UNKNOWN, dtype=object)
        picked[rows >= 0] = column[rows[rows >= 0]]
        out[name] = picked.astype(str)
    return out


def frontal_images(metadata_path: Path, views: tuple, dropped: dict[str, int]) -> pd.DataFrame:
    metadata = read_table(metadata_path, ["dicom_id", "subject_id", "study_id", "ViewPosition"])
    metadata = _stripped(metadata, ["dicom_id", "subject_id", "study_id", "ViewPosition"])
    check_unique(metadata["dicom_id"], metadata_path, "dicom_id")
    frontal = metadata["ViewPosition"].isin(views).to_numpy()
    count_drop(dropped, "not_frontal_view", int((~frontal).sum()))
    metadata["metadata_row"] = metadata.index
    return metadata.loc[frontal, ["dicom_id", "subject_id", "study_id", "metadata_row", "ViewPosition"]]


def study_labels(labels_path: Path) -> pd.DataFrame:
    """The labeller's table with a `label_row` column pointing back at each study's row."""
    labels = read_table(labels_path, ["subject_id", "study_id", *COMPETITION_LABELS])
    labels = _stripped(labels, ["subject_id", "study_id"])
    check_unique(labels["subject_id"] + "/s" + labels["study_id"], labels_path, "subject_id,study_id")
    labels["label_row"] = labels.index
    return labels


def official_split(split_path: Path, dicom_ids: pd.Series) -> np.ndarray:
    table = _stripped(read_table(split_path, ["dicom_id", "split"]), ["dicom_id", "split"])
    check_unique(table["dicom_id"], split_path, "dicom_id")
    check_allowed(table["split"], OFFICIAL_SPLITS, split_path, "split")
    split_of = table.set_index("dicom_id")["split"].map(OFFICIAL_SPLITS)
    assigned = split_of.reindex(dicom_ids.to_numpy())
    absent = dicom_ids[assigned.isna().to_numpy()].tolist()
    if absent:
        raise DataError(f"{split_path}: {len(absent)} frontal labelled images have no official split: {listed(absent)}")
    return assigned.to_numpy().astype(str)


def image_file(root: Path, subject_id: str, study_id: str, dicom_id: str) -> str:
    return os.path.join(root, "files", f"p{subject_id[:2]}", f"p{subject_id}", f"s{study_id}", f"{dicom_id}.jpg")


def _stripped(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    for column in columns:
        table[column] = table[column].str.strip()
    return table
