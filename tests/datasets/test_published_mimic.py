"""MIMIC-CXR-JPG read from a fixture tree in the PhysioNet layout, and as the CheXpert task's shift."""

from __future__ import annotations

import numpy as np
import pytest
from _release_layouts import FIVE, MIMIC_IMAGES, MIMIC_LABELS, MIMIC_OBSERVATIONS, make_chexpert, make_mimic, write_rows

from crsbench.datasets.base import images_batch
from crsbench.datasets.published.mimic_cxr import MIMICCXRDataset
from crsbench.datasets.registry import get_dataset
from crsbench.errors import DataError

FRONTAL_LABELLED = [image for image in MIMIC_IMAGES if image[3] in ("PA", "AP") and image[1] in MIMIC_LABELS]


@pytest.fixture
def mimic(tmp_path):
    return make_mimic(tmp_path / "mimic-cxr-jpg" / "2.0.0")


def test_frontal_labelled_images_with_the_official_split(mimic):
    dataset = get_dataset("mimic_cxr", root=mimic, max_side=8)
    assert dataset.meta.task_type == "multi_label" and dataset.meta.class_names == FIVE
    assert dataset.meta.modality == "chest_xray"
    # LATERAL, LL and a blank ViewPosition are not frontal; d11's study has no labeller row
    assert dataset.dropped == {"not_frontal_view": 3, "no_chexpert_labels": 1}
    assert sorted(dataset.ids) == sorted(d for _, _, d, _, _ in FRONTAL_LABELLED)
    official = {dicom: {"validate": "val"}.get(split, split) for _, _, dicom, _, split in FRONTAL_LABELLED}
    assert dict(zip(dataset.ids, dataset.assignment)) == official
    test = dataset.split("test")
    assert sorted(test.ids) == ["d08", "d09", "d10"]
    batch = images_batch(test.images, range(3))
    assert batch.shape[0] == 3 and batch.shape[3] == 3 and max(batch.shape[1:3]) <= 8
    assert set(dataset.groups) == {s for s, *_ in FRONTAL_LABELLED}


def test_each_image_takes_its_studys_labels_under_the_policy(mimic):
    default = MIMICCXRDataset(mimic)
    ignore = MIMICCXRDataset(mimic, uncertainty="U-Ignore")
    row = list(default.ids).index("d04")  # study 57375967: -1, -1, 1, blank, 0
    np.testing.assert_array_equal(default.labels[row], [1, 0, 1, 0, 0])
    np.testing.assert_array_equal(ignore.labels[row], [np.nan, np.nan, 1, 0, 0])
    first, second = list(default.ids).index("d01"), list(default.ids).index("d03")
    np.testing.assert_array_equal(default.labels[first], [1, 0, 0, 1, 0])  # Edema -1 -> U-Ones
    np.testing.assert_array_equal(default.labels[second], [0, 1, 0, 0, 1])


def test_plain_csv_files_and_environment_root(tmp_path, monkeypatch):
    root = make_mimic(tmp_path / "plain", gz=False)
    monkeypatch.setenv("MIMIC_CXR_JPG_ROOT", str(root))
    assert len(MIMICCXRDataset().ids) == len(FRONTAL_LABELLED)


def test_missing_csv(mimic):
    (mimic / "mimic-cxr-2.0.0-split.csv.gz").unlink()
    with pytest.raises(DataError, match="mimic-cxr-2.0.0-split.csv not found"):
        MIMICCXRDataset(mimic)


def test_unknown_split_value(mimic):
    images = [(*image[:4], "holdout" if image[2] == "d08" else image[4]) for image in MIMIC_IMAGES]
    make_mimic(mimic, images=images)
    with pytest.raises(DataError, match="line 9: unknown value 'holdout' in column 'split'"):
        MIMICCXRDataset(mimic)


def test_frontal_image_without_official_split(mimic):
    rows = [[d, st, su, sp] for su, st, d, _, sp in MIMIC_IMAGES if d != "d06"]
    write_rows(mimic / "mimic-cxr-2.0.0-split.csv.gz", ["dicom_id", "study_id", "subject_id", "split"], rows)
    with pytest.raises(DataError, match="1 frontal labelled images have no official split: d06"):
        MIMICCXRDataset(mimic)


def test_duplicate_ids(mimic):
    make_mimic(mimic, images=MIMIC_IMAGES + [MIMIC_IMAGES[0]])
    with pytest.raises(DataError, match="more than once in column 'dicom_id'"):
        MIMICCXRDataset(mimic)


def test_duplicate_study_in_labels(mimic):
    header = ["subject_id", "study_id", *MIMIC_OBSERVATIONS]
    row = ["10000032", "50414267", *[""] * 14]
    write_rows(mimic / "mimic-cxr-2.0.0-chexpert.csv.gz", header, [row, row])
    with pytest.raises(DataError, match="more than once in column 'subject_id,study_id'"):
        MIMICCXRDataset(mimic)


def test_unknown_label_value(mimic):
    labels = {**MIMIC_LABELS, "52000012": ("12000012", ["", "yes", "1.0", "", ""])}
    make_mimic(mimic, labels=labels)
    with pytest.raises(DataError, match=r"line 6: unknown value 'yes' in column 'Cardiomegaly'"):
        MIMICCXRDataset(mimic)


def test_missing_image_checked_on_request(mimic):
    (mimic / "files" / "p12" / "p12000012" / "s52000012" / "d08.jpg").unlink()
    assert len(MIMICCXRDataset(mimic).ids) == len(FRONTAL_LABELLED)
    with pytest.raises(DataError, match="1 listed images not found: d08"):
        MIMICCXRDataset(mimic, check_images=True, resplit=True)
    dataset = MIMICCXRDataset(mimic, check_images=True, missing="drop", resplit=True)
    assert dataset.dropped["missing_image"] == 1 and "d08" not in dataset.ids


def test_source_change_detected(mimic):
    MIMICCXRDataset(mimic)
    images = [(*image[:4], "train" if image[2] == "d10" else image[4]) for image in MIMIC_IMAGES]
    make_mimic(mimic, images=images)
    with pytest.raises(DataError, match="source changed"):
        MIMICCXRDataset(mimic)
    assert MIMICCXRDataset(mimic, resplit=True).split_sizes()["test"] == 2


def test_chexpert_task_with_mimic_as_its_shift(tmp_path):
    from crsbench.plan.suite import parse_suite

    make_chexpert(tmp_path / "chexpert")
    make_mimic(tmp_path / "mimic")
    suite = parse_suite(
        {
            "name": "cxr-shift",
            "encoders": ["raw-pixels"],
            "tasks": [
                {
                    "name": "cxr",
                    "dataset": {"kind": "chexpert", "root": "chexpert", "max_side": 8},
                    "shift": {"kind": "mimic_cxr", "root": "mimic", "max_side": 8},
                }
            ],
        },
        base=tmp_path,
    )
    task = suite.tasks[0]
    source = get_dataset(task.dataset.kind, **task.dataset.options())
    shift = get_dataset(task.shift.kind, **task.shift.options())
    assert source.meta.class_names == shift.meta.class_names
    assert source.policy == shift.policy
    assert sorted(shift.split("test").ids) == ["d08", "d09", "d10"]
