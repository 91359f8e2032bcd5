"""CheXpert read from a fixture tree in the release layout; the real train.csv is in test_published_chexpert_real."""

from __future__ import annotations

import numpy as np
import pytest
from _release_layouts import CHEXPERT_CASES, CHEXPERT_HEADER, FIVE, chexpert_row, make_chexpert, write_rows

from crsbench.datasets.base import images_batch
from crsbench.datasets.published.chexpert import CheXpertDataset
from crsbench.datasets.published.cxr_labels import DEFAULT_POLICY, resolve_policy
from crsbench.datasets.registry import get_dataset
from crsbench.errors import DataError

NAN = np.nan
FRONTAL = [case for case in CHEXPERT_CASES if case[3]]


@pytest.fixture
def parent(tmp_path):
    make_chexpert(tmp_path / "data")
    return tmp_path / "data"


def expected(policy: dict[str, str]) -> np.ndarray:
    uncertain = {"U-Ones": 1.0, "U-Zeros": 0.0, "U-Ignore": NAN}
    raw = {"1.0": 1.0, "0.0": 0.0, "": 0.0}
    return np.array(
        [[raw.get(v, uncertain[policy[label]]) for v, label in zip(case[4], FIVE)] for case in FRONTAL], dtype=np.float32
    )


def labels_by_path(dataset) -> np.ndarray:
    order = {path: i for i, path in enumerate(dataset.ids)}
    paths = [chexpert_row(*case)[0] for case in FRONTAL]
    return dataset.labels[[order[p] for p in paths]]


@pytest.mark.parametrize(
    "uncertainty, policy",
    [
        (None, DEFAULT_POLICY),
        ("U-Ones", dict.fromkeys(FIVE, "U-Ones")),
        ("zeros", dict.fromkeys(FIVE, "U-Zeros")),
        ("U-Ignore", dict.fromkeys(FIVE, "U-Ignore")),
        ({"Cardiomegaly": "U-Ignore"}, {**DEFAULT_POLICY, "Cardiomegaly": "U-Ignore"}),
    ],
)
def test_uncertainty_policies(parent, uncertainty, policy):
    dataset = CheXpertDataset(parent, uncertainty=uncertainty, max_side=8)
    assert dataset.policy == policy
    np.testing.assert_array_equal(labels_by_path(dataset), expected(policy))
    assert dataset.labels.dtype == np.float32


def test_default_policy_is_u_ones_for_atelectasis_and_edema():
    assert resolve_policy(None) == {
        "Atelectasis": "U-Ones", "Cardiomegaly": "U-Zeros", "Consolidation": "U-Zeros",
        "Edema": "U-Ones", "Pleural Effusion": "U-Zeros",
    }  # fmt: skip
    with pytest.raises(DataError, match="unknown uncertainty policy"):
        resolve_policy("U-Maybe")
    with pytest.raises(DataError, match="unknown label"):
        resolve_policy({"Pneumonia": "U-Ones"})


def test_frontal_views_patient_groups_and_image_paths(parent):
    dataset = get_dataset("chexpert", root=parent, max_side=8)
    assert dataset.meta.task_type == "multi_label" and dataset.meta.class_names == FIVE
    assert dataset.dropped == {"lateral_view": 2}
    assert len(dataset.ids) == len(FRONTAL)
    assert set(dataset.groups) == {f"patient{p:05d}" for p, *_ in FRONTAL}
    splits = {name: dataset.split(name) for name in ("train", "val", "test")}
    patients = [set(s.groups) for s in splits.values()]
    assert not (patients[0] & patients[1] or patients[0] & patients[2] or patients[1] & patients[2])
    train = splits["train"]
    batch = images_batch(train.images, range(len(train)))
    assert batch.shape[0] == len(train) and batch.shape[3] == 3 and max(batch.shape[1:3]) <= 8


def test_root_may_be_the_release_folder_or_its_parent(parent, monkeypatch):
    from_parent = CheXpertDataset(parent)
    from_release = CheXpertDataset(parent / "CheXpert-v1.0-small")
    assert from_parent.files == from_release.files
    monkeypatch.setenv("CHEXPERT_ROOT", str(parent / "CheXpert-v1.0-small"))
    assert CheXpertDataset().root == parent / "CheXpert-v1.0-small"


def test_full_size_release_name(tmp_path):
    make_chexpert(tmp_path, release="CheXpert-v1.0")
    dataset = CheXpertDataset(tmp_path, check_images=True)
    assert len(dataset.ids) == len(FRONTAL)


def test_include_valid(tmp_path):
    make_chexpert(tmp_path, valid=True)
    dataset = CheXpertDataset(tmp_path, include_valid=True, check_images=True)
    assert len(dataset.ids) == len(FRONTAL) + 3
    assert {"patient64541", "patient64542", "patient64543"} <= set(dataset.groups)
    with pytest.raises(DataError, match="valid.csv not found"):
        CheXpertDataset(make_chexpert(tmp_path / "other").parent, include_valid=True)


def test_images_checked_only_on_request(parent):
    release = parent / "CheXpert-v1.0-small"
    (release / "train" / "patient00003" / "study1" / "view1_frontal.jpg").unlink()
    assert len(CheXpertDataset(parent).ids) == len(FRONTAL)  # lazy: not stat-ed by default
    with pytest.raises(DataError, match=r"1 listed images not found: CheXpert-v1.0-small/train/patient00003"):
        CheXpertDataset(parent, check_images=True, resplit=True)
    dropped = CheXpertDataset(parent, check_images=True, missing="drop", resplit=True)
    assert dropped.dropped == {"lateral_view": 2, "missing_image": 1}


def write_cases(parent, rows):
    write_rows(parent / "CheXpert-v1.0-small" / "train.csv", CHEXPERT_HEADER, rows)


def test_unknown_label_value(parent):
    rows = [chexpert_row(*case) for case in CHEXPERT_CASES]
    rows[4][CHEXPERT_HEADER.index("Edema")] = "2.0"
    write_cases(parent, rows)
    with pytest.raises(DataError, match=r"line 6: unknown value '2.0' in column 'Edema'"):
        CheXpertDataset(parent)


def test_unknown_view(parent):
    rows = [chexpert_row(*case) for case in CHEXPERT_CASES]
    rows[0][3] = "Oblique"
    write_cases(parent, rows)
    with pytest.raises(DataError, match="line 2: unknown value 'Oblique' in column 'Frontal/Lateral'"):
        CheXpertDataset(parent)


def test_duplicate_path(parent):
    rows = [chexpert_row(*case) for case in CHEXPERT_CASES]
    write_cases(parent, rows + [rows[2]])
    with pytest.raises(DataError, match="more than once in column 'Path'"):
        CheXpertDataset(parent)


def test_path_without_patient_id(parent):
    rows = [chexpert_row(*case) for case in CHEXPERT_CASES]
    rows[3][0] = "CheXpert-v1.0-small/train/someone/study1/view1_frontal.jpg"
    write_cases(parent, rows)
    with pytest.raises(DataError, match="line 5: no patient id"):
        CheXpertDataset(parent)


def test_missing_csv_and_column(parent, tmp_path):
    with pytest.raises(DataError, match="train.csv not found"):
        CheXpertDataset(tmp_path / "data" / "CheXpert-v1.0-small" / "train")
    with pytest.raises(DataError, match="CSV not found"):
        CheXpertDataset(parent, csv=tmp_path / "absent.csv")
    rows = [chexpert_row(*case) for case in CHEXPERT_CASES]
    drop = CHEXPERT_HEADER.index("Cardiomegaly")
    write_rows(
        parent / "CheXpert-v1.0-small" / "train.csv",
        [c for i, c in enumerate(CHEXPERT_HEADER) if i != drop],
        [[v for i, v in enumerate(row) if i != drop] for row in rows],
    )
    with pytest.raises(DataError, match="missing column.*Cardiomegaly"):
        CheXpertDataset(parent)


def test_every_policy_shares_one_split_but_not_the_fingerprint(parent):
    default, ignore = CheXpertDataset(parent), CheXpertDataset(parent, uncertainty="U-Ignore")
    assert default.split_file == ignore.split_file
    assert np.array_equal(default.assignment, ignore.assignment)
    assert default.fingerprint() != ignore.fingerprint()
    assert CheXpertDataset(parent, split_seed=3).split_file != default.split_file
