"""Subgroup attributes per case: read from each source, stored beside the predictions, re-keying nothing."""

from __future__ import annotations

import collections
import hashlib

import numpy as np
import pandas as pd
import pytest

from crsbench import api
from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.npz import NpzDataset
from crsbench.datasets.subgroups import UNKNOWN, band_ages, band_of, parse_attribute, parse_attributes
from crsbench.datasets.synthetic import demo_dataset
from crsbench.errors import DataError
from crsbench.results.predictions import load_predictions
from crsbench.results.store import ResultsStore, database_path

from _cohort_folders import cohort_folder, folder_suite


def _digest(*arrays) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


# The demo's test splits as they were before attributes existed (ids, labels, groups, images): the attribute
# stream must move none of them.
DEMO_DIGESTS = {"derm": "23b26f449bff497f", "cxr": "7897a39da88094da"}


@pytest.mark.parametrize("specialty", sorted(DEMO_DIGESTS))
def test_the_demo_attributes_change_no_image_or_label(specialty):
    split = demo_dataset(specialty, n_train=10, n_val=5, n_test=60).split("test")
    assert _digest(split.ids.astype("U32"), split.labels, split.groups.astype("U32"), split.images.array) \
        == DEMO_DIGESTS[specialty]
    assert set(split.subgroups) == {"sex", "age_band"}
    assert set(split.subgroups["sex"]) == {"F", "M"}
    assert set(split.subgroups["age_band"]) <= {"<50", "50-70", ">=70"}


def test_the_two_images_of_a_lesion_share_their_patient_attributes():
    split = demo_dataset("derm", n_test=300).split("test")
    frame = pd.DataFrame({"group": split.groups, **split.subgroups})
    assert (frame.groupby("group").nunique() == 1).all().all()
    assert (frame["group"].duplicated()).any()  # the demo has pairs, so the check above can fail


def test_age_bands_by_decade_and_by_stated_edges():
    assert band_of(49.9, "decades") == "40-49" and band_of(50, "decades") == "50-59"
    assert [band_of(a, (18.0, 65.0)) for a in (3, 18, 64.9, 65, 90)] == ["<18", "18-65", "18-65", ">=65", ">=65"]
    assert list(band_ages(["71", "", "nan", " 8 "], "decades", "x")) == ["70-79", UNKNOWN, UNKNOWN, "0-9"]
    with pytest.raises(DataError, match=r"ages.csv column 'age' row 2: age 'old' is not a number"):
        band_ages(["40", "old"], "decades", "ages.csv column 'age'")


@pytest.mark.parametrize("spec, message", [
    ("age:10,5", "strictly ascending"), ("age:young", "bands must be"), ("a b", "attribute column"),
])
def test_a_bad_attribute_spec_is_refused_by_name(spec, message):
    with pytest.raises(DataError, match=message):
        parse_attribute(spec)


def test_an_attribute_named_twice_is_refused():
    with pytest.raises(DataError, match="named twice"):
        parse_attributes(["sex", "sex:decades"])


def _folder(tmp_path, extra=None):
    rows = []
    for i in range(60):
        row = {"image": f"i{i:03d}.png", "diagnosis": "a" if i % 2 else "b", "sex": "F" if i % 3 else "M",
               "age": str(20 + i) if i % 7 else ""}
        row.update((extra or {})(i) if extra else {})
        rows.append(row)
    return cohort_folder(tmp_path, rows)


def test_the_folder_kind_reads_attributes_and_keeps_its_fingerprint(tmp_path):
    folder = _folder(tmp_path)
    plain = FolderDataset(folder / "images", folder / "labels.csv", label_columns="diagnosis")
    with_attributes = FolderDataset(folder / "images", folder / "labels.csv", label_columns="diagnosis",
                                    subgroups=["sex", "age:decades"])
    assert plain.fingerprint() == with_attributes.fingerprint()
    test = with_attributes.split("test")
    assert set(test.subgroups) == {"sex", "age"} and not plain.split("test").subgroups
    table = pd.read_csv(folder / "labels.csv", dtype=str, keep_default_na=False).set_index("image")
    for case, sex, age in zip(test.ids, test.subgroups["sex"], test.subgroups["age"]):
        assert sex == table.loc[f"{case}.png" if f"{case}.png" in table.index else case, "sex"]
        raw = table.loc[f"{case}.png" if f"{case}.png" in table.index else case, "age"]
        assert age == (UNKNOWN if raw == "" else f"{int(raw) // 10 * 10}-{int(raw) // 10 * 10 + 9}")
    assert UNKNOWN in set(with_attributes.split("train").subgroups["age"])  # missing ages kept as their own subgroup


@pytest.mark.parametrize("subgroups, message", [
    (["ethnicity"], r"labels.csv: subgroup column 'ethnicity' does not exist"),
    (["site"], r"labels.csv column 'site': every row has the one value 'north'"),
    (["years:decades"], r"labels.csv column 'years' line 3: age 'unknown-ish' is not a number"),
])
def test_bad_attribute_columns_get_one_line_naming_file_and_column(tmp_path, subgroups, message):
    folder = _folder(tmp_path, lambda i: {"site": "north", "years": "unknown-ish" if i == 1 else str(30 + i)})
    with pytest.raises(DataError, match=message):
        FolderDataset(folder / "images", folder / "labels.csv", label_columns="diagnosis", subgroups=subgroups)


def test_the_npz_kind_reads_a_subgroups_key_outside_its_fingerprint(tmp_path):
    path = tmp_path / "set.npz"
    rng = np.random.default_rng(0)
    np.savez(path, images=rng.integers(0, 255, (40, 8, 8), dtype=np.uint8), labels=np.arange(40) % 2,
             source=np.array(["a", "b", "c", "d"] * 10), age=np.where(np.arange(40) % 5, 30.0 + np.arange(40), np.nan))
    plain = NpzDataset(path=path, class_names=["n", "p"])
    tagged = NpzDataset(path=path, class_names=["n", "p"], subgroups_key=["source", "age:decades"])
    assert plain.fingerprint() == tagged.fingerprint()
    split = tagged.split("test")
    assert collections.Counter(split.subgroups["source"]) == {"a": 10, "b": 10, "c": 10, "d": 10}
    assert (split.subgroups["age"] == UNKNOWN).sum() == 8 and split.subgroups["age"][1] == "30-39"


def _folder_suite(root, folder, subgroups: str):
    return folder_suite(root, folder, subgroups)


def _keys(out) -> list[str]:
    with ResultsStore(database_path(out), read_only=True) as store:
        return sorted(store.query("SELECT record_key FROM records")["record_key"])


def test_adding_attributes_to_a_store_re_keys_nothing_and_stores_them_beside(tmp_path):
    folder = _folder(tmp_path)
    first = api.run(_folder_suite(tmp_path, folder, ""))
    keys = _keys(tmp_path / "out")
    assert first.written == len(keys) > 0 and not load_predictions(tmp_path / "out").subgroups
    again = api.run(_folder_suite(tmp_path, folder, ", subgroups: [sex, 'age:decades']"))
    assert again.written == 0 and _keys(tmp_path / "out") == keys
    stored = load_predictions(tmp_path / "out")
    (test_set,) = stored.subgroups
    attributes = stored.attributes(test_set)
    assert set(attributes) == {"sex", "age"}
    assert len(attributes["sex"]) == len(stored.case_set(test_set).case_id)


def test_isic_2019_reads_sex_age_band_and_site_from_its_metadata(tmp_path):
    from crsbench.datasets.published.isic2019 import ISIC2019Dataset

    from _release_layouts import make_isic

    dataset = ISIC2019Dataset(root=make_isic(tmp_path / "isic"))
    fingerprint = dataset.fingerprint()
    subgroups = {name: np.concatenate([dataset.split(s).subgroups[name] for s in ("train", "val", "test")])
                 for name in ("sex", "age_band", "site")}
    assert set(subgroups["sex"]) == {"female"} and set(subgroups["age_band"]) == {"50-59"}
    assert set(subgroups["site"]) == {"anterior torso"}  # the UNK image (blank site, male) is dropped with its row
    assert ISIC2019Dataset(root=tmp_path / "isic").fingerprint() == fingerprint


def test_chexpert_reads_sex_age_band_and_view_beside_its_listing(tmp_path):
    from crsbench.datasets.published.chexpert import CheXpertDataset

    from _release_layouts import make_chexpert

    dataset = CheXpertDataset(root=make_chexpert(tmp_path))
    split = dataset.split("train")
    assert set(split.subgroups) == {"sex", "age_band", "view"}
    assert len(split.subgroups["sex"]) == len(split.ids)


def test_mimic_reads_the_view_and_with_mimic_iv_patients_sex_and_age_band(tmp_path):
    from crsbench.datasets.published.mimic_cxr import MIMICCXRDataset

    from _release_layouts import make_mimic, write_rows

    root = make_mimic(tmp_path / "mimic")
    plain = MIMICCXRDataset(root=root)
    assert set(plain.split("test").subgroups) == {"view"}
    assert set(plain.split("test").subgroups["view"]) <= {"AP", "PA"}
    patients = write_rows(tmp_path / "patients.csv", ["subject_id", "gender", "anchor_age", "anchor_year"],
                          [["10000032", "F", 52, 2180], ["12000012", "M", 71, 2150], ["13000013", "F", "", 2160]])
    with_patients = MIMICCXRDataset(root=root, patients=patients)
    assert with_patients.fingerprint() == plain.fingerprint()
    test = with_patients.split("test")
    by_subject = dict(zip(test.groups, zip(test.subgroups["sex"], test.subgroups["age_band"])))
    assert by_subject["12000012"] == ("M", "70-79") and by_subject["13000013"] == ("F", UNKNOWN)
    train = with_patients.split("train")
    assert ("unknown", "unknown") in set(zip(train.subgroups["sex"], train.subgroups["age_band"]))  # not in the table
    bad = write_rows(tmp_path / "bad.csv", ["subject_id", "gender", "anchor_age"], [["10000032", "F", "fifty"]])
    with pytest.raises(DataError, match=r"bad.csv column 'anchor_age' line 2: age 'fifty' is not a number"):
        MIMICCXRDataset(root=root, patients=bad)
