"""APTOS 2019 read from a fixture tree in the Kaggle layout (train.csv + train_images/*.png)."""

from __future__ import annotations

import numpy as np
import pytest
from _release_layouts import make_aptos, truncate, write_rows

from crsbench.datasets.base import images_batch
from crsbench.datasets.published.aptos2019 import GRADES, APTOS2019Dataset
from crsbench.datasets.registry import get_dataset
from crsbench.errors import DataError


@pytest.fixture
def aptos(tmp_path):
    return make_aptos(tmp_path / "aptos2019-blindness-detection")


def rows_of(root):
    lines = (root / "train.csv").read_text().split()[1:]
    return [line.split(",") for line in lines]


def test_reads_the_kaggle_layout_as_ordinal(aptos):
    dataset = get_dataset("aptos2019", root=aptos, max_side=12)
    assert dataset.meta.task_type == "ordinal" and dataset.meta.class_names == GRADES
    assert dataset.meta.modality == "fundus"
    assert dataset.dropped == {}
    assert dataset.class_counts()["total"].tolist() == [4] * 5
    test = dataset.split("test")
    assert test.labels.dtype == np.int64 and set(test.labels) <= set(range(5))
    batch = images_batch(test.images, range(len(test)))  # decoded at their own size, longer side capped
    assert batch.shape[0] == len(test) and batch.shape[3] == 3 and max(batch.shape[1:3]) <= 12
    sizes = dataset.split_sizes()
    assert sum(sizes.values()) == 20 and min(sizes.values()) > 0


def test_environment_root(aptos, monkeypatch):
    monkeypatch.setenv("APTOS2019_ROOT", str(aptos))
    assert APTOS2019Dataset().root == aptos


def test_unknown_grade(aptos):
    rows = rows_of(aptos)
    rows[3][1] = "5"
    write_rows(aptos / "train.csv", ["id_code", "diagnosis"], rows)
    with pytest.raises(DataError, match=r"line 5: unknown value '5' in column 'diagnosis'"):
        APTOS2019Dataset(aptos)


def test_duplicate_id_code(aptos):
    rows = rows_of(aptos)
    write_rows(aptos / "train.csv", ["id_code", "diagnosis"], rows + [rows[0]])
    with pytest.raises(DataError, match="more than once in column 'id_code'"):
        APTOS2019Dataset(aptos)


def test_missing_csv_and_image_folder(aptos):
    (aptos / "train_images").rename(aptos / "images")
    with pytest.raises(DataError, match="image folder not found"):
        APTOS2019Dataset(aptos)
    (aptos / "train.csv").unlink()
    with pytest.raises(DataError, match="train.csv not found"):
        APTOS2019Dataset(aptos)


def test_missing_image_fail_or_drop(aptos):
    first = rows_of(aptos)[0][0]
    (aptos / "train_images" / f"{first}.png").unlink()
    # the error names the CSV and the line that lists the image, not only the dataset
    with pytest.raises(DataError, match=rf"^{aptos}/train.csv line 2: 1 listed images not found: {first} \(first: "):
        APTOS2019Dataset(aptos)
    dataset = APTOS2019Dataset(aptos, missing="drop")
    assert dataset.dropped == {"missing_image": 1} and len(dataset.ids) == 19


def test_truncated_png(aptos):
    first = rows_of(aptos)[0][0]
    truncate(aptos / "train_images" / f"{first}.png")
    dataset = APTOS2019Dataset(aptos)
    bad = dataset.unreadable_images()
    assert [image for image, _ in bad] == [first] and "cannot read image" in bad[0][1]
