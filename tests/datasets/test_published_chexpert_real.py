"""The real CheXpert-v1.0-small train.csv (223,414 rows, no images) parsed end to end.

Every count is checked twice: against numbers this test computes independently with pandas, and
against the literal numbers of the published file, so a silent change in either shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.datasets.published.chexpert import CheXpertDataset
from crsbench.datasets.published.cxr_labels import COMPETITION_LABELS

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRAIN_CSV = SHARED_DATA / "chexpert" / "chexpert_train.csv.gz"

pytestmark = [pytest.mark.skipif(not TRAIN_CSV.is_file(), reason=f"real data not available: {TRAIN_CSV} is absent"),
              pytest.mark.xdist_group("chexpert-real"),  # one worker reads the label file once
              pytest.mark.slow]  # each policy parses the 223,414 rows again: with the slow tests, not the fast loop

ROWS, FRONTAL, LATERAL, FRONTAL_PATIENTS = 223_414, 191_027, 32_387, 64_534
# per label among frontal views: (positive 1.0, uncertain -1.0, negative 0.0, blank)
RAW_COUNTS = {
    "Atelectasis": (29_720, 29_863, 1_025, 130_419),
    "Cardiomegaly": (23_385, 6_707, 7_869, 153_066),
    "Consolidation": (12_983, 24_381, 19_608, 134_055),
    "Edema": (49_675, 11_818, 15_915, 113_619),
    "Pleural Effusion": (76_899, 9_578, 25_299, 79_251),
}


@pytest.fixture(scope="module")
def frontal() -> pd.DataFrame:
    table = pd.read_csv(TRAIN_CSV)
    assert len(table) == ROWS
    return table[table["Frontal/Lateral"] == "Frontal"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("chexpert-root")  # writable: the split files go here


@pytest.fixture(scope="module")
def default(root) -> CheXpertDataset:
    return CheXpertDataset(root, csv=TRAIN_CSV)


def independent_counts(frontal: pd.DataFrame, policy: str) -> tuple[dict, dict]:
    """Positives and masked entries per label under one policy, straight from the raw values."""
    positives, masked = {}, {}
    for label in COMPETITION_LABELS:
        values = frontal[label]
        positives[label] = int((values == 1).sum() + (values == -1).sum() * (policy == "U-Ones"))
        masked[label] = int((values == -1).sum()) if policy == "U-Ignore" else 0
    return positives, masked


def test_raw_counts_of_the_published_file(frontal):
    assert len(frontal) == FRONTAL
    for label, (pos, unc, neg, blank) in RAW_COUNTS.items():
        values = frontal[label]
        assert ((values == 1).sum(), (values == -1).sum(), (values == 0).sum(), values.isna().sum()) == (pos, unc, neg, blank)


def test_frontal_views_and_dropped_laterals(default, frontal):
    assert len(default.ids) == len(frontal) == FRONTAL
    assert default.dropped == {"lateral_view": LATERAL}
    assert set(default.ids) == set(frontal["Path"])
    patients = frontal["Path"].str.extract(r"(patient\d+)", expand=False)
    assert dict(zip(default.ids, default.groups)) == dict(zip(frontal["Path"], patients))
    assert len(set(default.groups)) == FRONTAL_PATIENTS


def test_default_policy_counts(default, frontal):
    positives = {
        label: int((frontal[label] == 1).sum() + (frontal[label] == -1).sum() * (label in ("Atelectasis", "Edema")))
        for label in COMPETITION_LABELS
    }
    assert default.class_counts()["total"].to_dict() == positives
    literal = {label: RAW_COUNTS[label][0] + RAW_COUNTS[label][1] * (label in ("Atelectasis", "Edema")) for label in RAW_COUNTS}
    assert positives == literal == {
        "Atelectasis": 59_583, "Cardiomegaly": 23_385, "Consolidation": 12_983, "Edema": 61_493,
        "Pleural Effusion": 76_899,
    }  # fmt: skip
    assert not np.isnan(default.labels).any()  # blank = 0, no U-Ignore in the default


@pytest.mark.parametrize("policy", ["U-Ones", "U-Zeros", "U-Ignore"])
def test_label_counts_per_policy(root, default, frontal, policy):
    dataset = CheXpertDataset(root, csv=TRAIN_CSV, uncertainty=policy)
    assert np.array_equal(dataset.assignment, default.assignment)  # one split for every policy
    positives, masked = independent_counts(frontal, policy)
    assert dataset.class_counts()["total"].to_dict() == positives
    assert dataset.masked_counts()["total"].to_dict() == masked
    literal_masked = {label: RAW_COUNTS[label][1] if policy == "U-Ignore" else 0 for label in RAW_COUNTS}
    assert masked == literal_masked
    # observed entries (not masked) are exactly the rows minus the masked ones
    assert (~np.isnan(dataset.labels)).sum(axis=0).tolist() == [FRONTAL - masked[label] for label in COMPETITION_LABELS]


def test_no_patient_in_two_splits_and_sizes_near_70_10_20(default):
    split_of_patient = pd.Series(default.assignment).groupby(pd.Series(default.groups)).nunique()
    assert (split_of_patient == 1).all()
    sizes = default.split_sizes()
    assert sum(sizes.values()) == FRONTAL
    for name, target in (("train", 0.7), ("val", 0.1), ("test", 0.2)):
        assert abs(sizes[name] / FRONTAL - target) < 0.01
    counts = default.class_counts()
    assert (counts[["train", "val", "test"]] > 0).all().all()  # every label has positives in every split


def test_splits_are_fixed_across_runs(root, default):
    again = CheXpertDataset(root, csv=TRAIN_CSV)
    assert again.split_file == default.split_file
    assert np.array_equal(again.assignment, default.assignment)
    assert again.fingerprint() == default.fingerprint()
