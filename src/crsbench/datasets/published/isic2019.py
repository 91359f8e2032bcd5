"""ISIC 2019 training set, read from the release as published by the ISIC challenge.

Layout under the root (`root` option, else $ISIC2019_ROOT):

    ISIC_2019_Training_Input/ISIC_0000000.jpg ...   (the unzipped ISIC_2019_Training_Input.zip;
                                                     a doubly nested .../ISIC_2019_Training_Input/ also works)
    ISIC_2019_Training_GroundTruth.csv   image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK  (one-hot, 1.0 / 0.0)
    ISIC_2019_Training_Metadata.csv      image,age_approx,anatom_site_general,lesion_id,sex

Some image names end in `_downsampled`; the file is still `<image>.jpg`. Eight classes are used; UNK
rows (none in the training release, but the column exists) are dropped and counted. Splits are grouped
by `lesion_id`, so images of one lesion never cross splits; an image without a lesion id is its own group.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from crsbench.datasets.kind import DatasetInfo, KindOptions
from crsbench.datasets.published.common import (
    DrawnSplitOptions,
    Listing,
    PublishedDataset,
    check_allowed,
    check_unique,
    count_drop,
    csv_line,
    find_file,
    listed,
    read_table,
    release_attributes,
    resolve_root,
)
from crsbench.datasets.subgroups import DECADES, AttributeSpec
from crsbench.errors import DataError

NAME = "isic2019"
TITLE = "ISIC 2019"
ENV_VAR = "ISIC2019_ROOT"
CLASSES = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")
UNUSED_CLASS = "UNK"
IMAGE_FOLDER = "ISIC_2019_Training_Input"
GROUND_TRUTH = "ISIC_2019_Training_GroundTruth.csv"
METADATA = "ISIC_2019_Training_Metadata.csv"
ONE_HOT_VALUES = {"0": 0, "0.0": 0, "1": 1, "1.0": 1}
LICENCE = "CC BY-NC 4.0 (ISIC Archive; see the attribution file of the release)"


class ISIC2019Dataset(PublishedDataset):
    """The 8-class ISIC 2019 dermoscopy task, split grouped by lesion."""

    info: ClassVar[DatasetInfo] = DatasetInfo(
        name=NAME, task_type="single_label", class_names=CLASSES, modality="dermoscopy", licence=LICENCE,
        title="ISIC 2019 (training set)", summary="derm: 8 classes, grouped by lesion", env_var=ENV_VAR,
        layout="ISIC_2019_Training_Input/*.jpg, ISIC_2019_Training_GroundTruth.csv, ISIC_2019_Training_Metadata.csv",
        access="CC BY-NC 4.0",
    )  # fmt: skip
    Options: ClassVar[type[KindOptions]] = DrawnSplitOptions

    def _build(self) -> None:
        root = resolve_root(self.options.root, ENV_VAR, TITLE)
        truth_path = find_file(root, (GROUND_TRUTH, GROUND_TRUTH + ".gz"), TITLE)
        metadata_path = find_file(root, (METADATA, METADATA + ".gz"), TITLE)
        listing = read_listing(root, truth_path, metadata_path)
        meta = self.info_for(self.options).to_meta(
            description="ISIC 2019 training set, 8 diagnostic classes (UNK unused), split grouped by lesion_id",
            source=str(root),
        )
        self._finish(root, listing, meta, {"classes": list(CLASSES)})


def read_listing(root: Path, truth_path: Path, metadata_path: Path) -> Listing:
    truth = read_table(truth_path, ["image", *CLASSES, UNUSED_CLASS])
    truth["image"] = truth["image"].str.strip()
    check_unique(truth["image"], truth_path, "image")
    classes = one_hot_classes(truth, truth_path)
    dropped: dict[str, int] = {}
    used = classes < len(CLASSES)
    count_drop(dropped, "unk_class", int((~used).sum()))
    images = truth["image"].to_numpy()[used]
    groups, attributes = lesion_groups(images, metadata_path)
    folder = image_folder(root)
    return Listing(
        ids=images.astype(str),
        files=[os.path.join(folder, f"{image}.jpg") for image in images],
        labels=classes[used].astype(np.int64),
        groups=groups,
        sources=(truth_path, metadata_path),
        dropped=dropped,
        image_folder=folder,
        lines=np.flatnonzero(used) + 2,  # ground-truth CSV lines, header = line 1
        attributes=attributes,
    )


def one_hot_classes(truth: pd.DataFrame, path: Path) -> np.ndarray:
    """The class index of each row (UNK = 8); exactly one 1 per row, every cell 0 or 1."""
    columns = [*CLASSES, UNUSED_CLASS]
    for column in columns:
        check_allowed(truth[column].str.strip(), ONE_HOT_VALUES, path, column)
    one_hot = np.stack([truth[c].str.strip().map(ONE_HOT_VALUES).to_numpy() for c in columns], axis=1)
    not_one = np.flatnonzero(one_hot.sum(axis=1) != 1)
    if len(not_one):
        first = not_one[0]
        raise DataError(
            f"{path} line {csv_line(first)}: image {truth['image'].iloc[first]!r} has {one_hot[first].sum()}"
            f" diagnoses, expected exactly one ({len(not_one)} such rows)"
        )
    return one_hot.argmax(axis=1)


# the metadata's attribute columns and the attribute each becomes (age_approx banded by decade)
ATTRIBUTES = (AttributeSpec("sex"), AttributeSpec("age_approx", DECADES, "age_band"),
              AttributeSpec("anatom_site_general", label="site"))


def lesion_groups(images: np.ndarray, metadata_path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """lesion_id per image (an image with a blank lesion_id is its own group), and the patient attributes of
    the metadata (sex, age band, anatomical site) where it has the columns."""
    metadata = read_table(metadata_path, ["image", "lesion_id"])
    metadata["image"] = metadata["image"].str.strip()
    check_unique(metadata["image"], metadata_path, "image")
    lesion = metadata.set_index("image")["lesion_id"].str.strip()
    absent = [image for image in images if image not in lesion.index]
    if absent:
        raise DataError(f"{metadata_path}: {len(absent)} images of the ground truth have no metadata row: {listed(absent)}")
    groups = lesion.reindex(images).to_numpy(dtype=object)  # object: a fixed-width str array would truncate
    blank = groups == ""
    groups[blank] = ["image:" + str(image) for image in images[blank]]
    rows = metadata.iloc[pd.Index(metadata["image"]).get_indexer(images)]  # keeps each row's CSV position
    return groups.astype(str), release_attributes(rows, ATTRIBUTES, metadata_path)


def image_folder(root: Path) -> Path:
    folder = root / IMAGE_FOLDER
    nested = folder / IMAGE_FOLDER  # unzipping into a folder of the same name nests it once
    if nested.is_dir():
        return nested
    if not folder.is_dir():
        raise DataError(f"{TITLE}: image folder not found: {folder} (unzip ISIC_2019_Training_Input.zip into {root})")
    return folder
