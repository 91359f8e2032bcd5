"""ISIC 2019 read from a fixture tree in the official layout, and the shared split-file machinery."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from _release_layouts import isic_rows, make_isic, truncate, write_rows

from crsbench.datasets.base import Dataset, images_batch
from crsbench.datasets.published.common import SPLITS_FOLDER, cache_splits_folder
from crsbench.datasets.published.isic2019 import CLASSES, ISIC2019Dataset
from crsbench.datasets.registry import get_dataset
from crsbench.errors import DataError

TRUTH = "ISIC_2019_Training_GroundTruth.csv"
METADATA = "ISIC_2019_Training_Metadata.csv"


@pytest.fixture
def isic(tmp_path):
    return make_isic(tmp_path / "ISIC2019")


def build(root, **options):
    return ISIC2019Dataset(root, max_side=16, **options)


def all_splits(dataset):
    return {name: dataset.split(name) for name in ("train", "val", "test")}


# ----- a well-formed copy


def test_reads_the_official_layout(isic):
    dataset = build(isic)
    assert isinstance(dataset, Dataset)
    assert dataset.meta.class_names == CLASSES and dataset.meta.task_type == "single_label"
    assert dataset.meta.modality == "dermoscopy"
    assert dataset.dropped == {"unk_class": 1}
    assert len(dataset.ids) == 32 and "ISIC_0000003_downsampled" in dataset.ids
    assert dataset.class_counts()["total"].tolist() == [4] * 8
    splits = all_splits(dataset)
    assert sum(len(s) for s in splits.values()) == 32
    assert all(len(s) > 0 for s in splits.values())
    batch = images_batch(splits["train"].images, range(3))
    assert batch.shape[0] == 3 and batch.shape[3] == 3 and max(batch.shape[1:3]) <= 16 and batch.dtype == np.uint8


def test_split_grouped_by_lesion_and_blank_lesion_is_its_own_group(isic):
    dataset = build(isic)
    truth, metadata = isic_rows()
    lesion_of = {row[0]: row[3] for row in metadata}
    split_of = dict(zip(dataset.ids, dataset.assignment))
    by_lesion: dict[str, set] = {}
    for image, lesion in lesion_of.items():
        if lesion and image in split_of:
            by_lesion.setdefault(lesion, set()).add(split_of[image])
    assert all(len(splits) == 1 for splits in by_lesion.values())
    blank = [image for image, lesion in lesion_of.items() if not lesion and image in split_of]
    groups = dict(zip(dataset.ids, dataset.groups))
    assert len({groups[image] for image in blank}) == len(blank)  # no two share a group


def test_registry_and_environment_root(isic, monkeypatch):
    monkeypatch.setenv("ISIC2019_ROOT", str(isic))
    dataset = get_dataset("isic2019", max_side=16)
    assert dataset.root == isic
    with pytest.raises(DataError, match="bad options"):
        get_dataset("isic2019", root=isic, uncertainty="U-Ones")


# ----- fixed splits


def test_splits_are_written_once_and_reused(isic):
    first = build(isic)
    assert first.split_file.parent == isic / SPLITS_FOLDER
    payload = json.loads(gzip.open(first.split_file, "rt").read())
    assert payload["dataset"] == "isic2019" and payload["source_checksum"] == first.source_checksum
    assert sorted(sum(payload["splits"].values(), [])) == sorted(first.ids)
    second = build(isic, split_seed=0)
    assert np.array_equal(first.assignment, second.assignment)
    assert first.fingerprint() == second.fingerprint()
    # the file is what is read back: edit it by hand and the edit shows
    moved = payload["splits"]["test"].pop()
    payload["splits"]["train"].append(moved)
    with gzip.open(first.split_file, "wt") as handle:
        json.dump(payload, handle)
    third = build(isic)
    assert third.assignment[list(third.ids).index(moved)] == "train"


def test_other_options_get_their_own_split_file(isic):
    assert build(isic).split_file != build(isic, split_seed=1).split_file


def test_changed_source_is_detected_and_resplit_recovers(isic):
    build(isic)
    truth, _ = isic_rows()
    truth[0][1:] = ["0.0", "1.0", *["0.0"] * 7]  # relabel one image MEL -> NV
    write_rows(isic / TRUTH, ["image", "MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK"], truth)
    with pytest.raises(DataError, match="source changed.*resplit: true"):
        build(isic)
    assert build(isic, resplit=True).class_counts()["total"].tolist() == [3, 5, 4, 4, 4, 4, 4, 4]
    build(isic)  # the new file is now the fixed one


def test_removed_image_changes_the_listing(isic):
    build(isic)
    (isic / "ISIC_2019_Training_Input" / "ISIC_0000005.jpg").unlink()
    with pytest.raises(DataError, match="source changed"):
        build(isic, missing="drop")


def test_read_only_root_falls_back_to_the_cache(isic):
    (isic / SPLITS_FOLDER).write_text("not a folder")  # mkdir fails, as on a read-only root
    dataset = build(isic)
    assert dataset.split_file.parent == cache_splits_folder()
    assert np.array_equal(build(isic).assignment, dataset.assignment)


def test_corrupt_split_file(isic):
    path = build(isic).split_file
    path.write_bytes(b"garbage")
    with pytest.raises(DataError, match="unreadable"):
        build(isic)


# ----- bad input


def test_missing_root(tmp_path, monkeypatch):
    with pytest.raises(DataError, match="dataset folder not found"):
        build(tmp_path / "nowhere")
    monkeypatch.delenv("ISIC2019_ROOT", raising=False)
    with pytest.raises(DataError, match=r"set \$ISIC2019_ROOT"):
        ISIC2019Dataset()
    with pytest.raises(DataError, match=r"\$ISIC2019_ROOT, which is not set"):
        build(str(tmp_path / "${ISIC2019_ROOT}"))


@pytest.mark.parametrize("name", [TRUTH, METADATA])
def test_missing_csv(isic, name):
    (isic / name).unlink()
    with pytest.raises(DataError, match=f"{name} not found"):
        build(isic)


def test_missing_image_folder(isic):
    (isic / "ISIC_2019_Training_Input").rename(isic / "elsewhere")
    with pytest.raises(DataError, match="image folder not found"):
        build(isic)


def test_nested_image_folder(isic):
    outer = isic / "ISIC_2019_Training_Input"
    outer.rename(isic / "tmp")
    outer.mkdir()
    (isic / "tmp").rename(outer / "ISIC_2019_Training_Input")
    assert len(build(isic).ids) == 32


def test_missing_images_fail_with_count_and_names_or_drop(isic):
    for name in ("ISIC_0000001", "ISIC_0000002"):
        (isic / "ISIC_2019_Training_Input" / f"{name}.jpg").unlink()
    with pytest.raises(DataError, match=r"2 listed images not found: ISIC_0000001, ISIC_0000002"):
        build(isic)
    dataset = build(isic, missing="drop")
    assert dataset.dropped == {"unk_class": 1, "missing_image": 2}
    assert len(dataset.ids) == 30 and "ISIC_0000001" not in dataset.ids
    with pytest.raises(DataError, match="missing must be one of"):
        build(isic, missing="ignore")


def test_truncated_image_fails_when_read_with_its_name(isic):
    truncate(isic / "ISIC_2019_Training_Input" / "ISIC_0000004.jpg")
    dataset = build(isic)
    assert [image for image, _ in dataset.unreadable_images()] == ["ISIC_0000004"]
    split = dataset.split(dataset.assignment[list(dataset.ids).index("ISIC_0000004")])
    with pytest.raises(DataError, match="ISIC_0000004.jpg: cannot read image"):
        images_batch(split.images, range(len(split)))


def test_unknown_label_value(isic):
    truth, _ = isic_rows()
    truth[2][3] = "2.0"
    write_rows(isic / TRUTH, ["image", "MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK"], truth)
    with pytest.raises(DataError, match=r"line 4: unknown value '2.0' in column 'BCC'"):
        build(isic)


def test_two_diagnoses_in_one_row(isic):
    truth, _ = isic_rows()
    truth[5][1] = "1.0"
    write_rows(isic / TRUTH, ["image", "MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK"], truth)
    with pytest.raises(DataError, match="line 7: image 'ISIC_0000005' has 2 diagnoses"):
        build(isic)


def test_duplicate_ids(isic):
    truth, metadata = isic_rows()
    write_rows(isic / TRUTH, ["image", "MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK"], truth + [truth[1]])
    with pytest.raises(DataError, match="1 ids listed more than once in column 'image': ISIC_0000001"):
        build(isic)
    make_isic(isic)
    header = ["image", "age_approx", "anatom_site_general", "lesion_id", "sex"]
    write_rows(isic / METADATA, header, metadata + [metadata[7]])
    with pytest.raises(DataError, match=f"{METADATA}: 1 ids listed more than once"):
        build(isic)


def test_image_without_metadata_row(isic):
    _, metadata = isic_rows()
    header = ["image", "age_approx", "anatom_site_general", "lesion_id", "sex"]
    write_rows(isic / METADATA, header, metadata[1:])
    with pytest.raises(DataError, match="1 images of the ground truth have no metadata row: ISIC_0000000"):
        build(isic)


def test_missing_column(isic):
    truth, _ = isic_rows()
    write_rows(isic / TRUTH, ["image", "MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC"], [r[:-1] for r in truth])
    with pytest.raises(DataError, match="missing column.*UNK"):
        build(isic)


def test_empty_csv(isic):
    (isic / TRUTH).write_text("")
    with pytest.raises(DataError, match="empty file"):
        build(isic)
