"""APTOS 2019 Blindness Detection (Kaggle competition), training set as downloaded from Kaggle.

Layout under the root (`root` option, else $APTOS2019_ROOT):

    train.csv                 id_code,diagnosis   (grades 0-4)
    train_images/<id_code>.png

Grades are ordinal (0 no DR ... 4 proliferative DR), so quadratic weighted kappa is reported too. The
release has no patient ids, so splits are stratified by grade with each image its own group: the two
eyes of one person may fall in different splits (a limitation of the release, stated in the docs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import numpy as np

from crsbench.datasets.kind import DatasetInfo, KindOptions
from crsbench.datasets.published.common import (
    DrawnSplitOptions,
    Listing,
    PublishedDataset,
    check_allowed,
    check_unique,
    find_file,
    read_table,
    resolve_root,
)
from crsbench.errors import DataError

NAME = "aptos2019"
TITLE = "APTOS 2019"
ENV_VAR = "APTOS2019_ROOT"
GRADES = ("0 no DR", "1 mild", "2 moderate", "3 severe", "4 proliferative DR")
GRADE_VALUES = {str(g): g for g in range(len(GRADES))}
LABELS_CSV = "train.csv"
IMAGE_FOLDER = "train_images"
LICENCE = "Kaggle competition rules (APTOS 2019 Blindness Detection): non-commercial research use"


class APTOS2019Dataset(PublishedDataset):
    """Five diabetic-retinopathy grades from fundus photographs, an ordinal task."""

    info: ClassVar[DatasetInfo] = DatasetInfo(
        name=NAME, task_type="ordinal", class_names=GRADES, modality="fundus", licence=LICENCE,
        title="APTOS 2019 Blindness Detection", summary="ophtho: grades 0-4, ordinal", env_var=ENV_VAR,
        layout="train.csv (id_code,diagnosis), train_images/*.png", access="Kaggle competition rules",
    )  # fmt: skip
    Options: ClassVar[type[KindOptions]] = DrawnSplitOptions

    def _build(self) -> None:
        root = resolve_root(self.options.root, ENV_VAR, TITLE)
        listing = read_listing(root, find_file(root, (LABELS_CSV, LABELS_CSV + ".gz"), TITLE))
        meta = self.info_for(self.options).to_meta(
            description="APTOS 2019 training set, diabetic retinopathy grades 0-4 (ordinal)", source=str(root),
        )
        self._finish(root, listing, meta, {"grades": list(GRADES)})


def read_listing(root: Path, labels_path: Path) -> Listing:
    table = read_table(labels_path, ["id_code", "diagnosis"])
    ids = table["id_code"].str.strip()
    check_unique(ids, labels_path, "id_code")
    grades = table["diagnosis"].str.strip()
    check_allowed(grades, GRADE_VALUES, labels_path, "diagnosis")
    folder = root / IMAGE_FOLDER
    if not folder.is_dir():
        raise DataError(f"{TITLE}: image folder not found: {folder} (unzip the Kaggle download into {root})")
    ids = ids.to_numpy().astype(str)
    return Listing(
        ids=ids,
        files=[os.path.join(folder, f"{image_id}.png") for image_id in ids],
        labels=grades.map(GRADE_VALUES).to_numpy().astype(np.int64),
        groups=ids.copy(),  # no patient ids in the release
        sources=(labels_path,),
        image_folder=folder,
        lines=np.arange(len(ids)) + 2,  # header = line 1
    )
