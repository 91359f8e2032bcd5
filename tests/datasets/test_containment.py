"""No file outside a dataset's folder is ever read: hostile paths in a labels CSV are refused by line."""

import os
from pathlib import Path

import pytest

from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.paths import contained
from crsbench.errors import DataError

from _image_files import save_image, write_csv


def _tree(tmp_path: Path, hostile: str) -> tuple[Path, Path]:
    """Four good rows and, on line 6, one row naming `hostile`; a sibling folder holds an image too."""
    root = tmp_path / "images"
    for i in range(4):
        save_image(root / f"img{i}.png", seed=i)
    save_image(tmp_path / "sibling" / "other.png", seed=9)
    rows = ["image,dx"] + [f"img{i}.png,{'ab'[i % 2]}" for i in range(4)] + [f"{hostile},a"]
    return root, write_csv(tmp_path / "labels.csv", "\n".join(rows))


@pytest.mark.parametrize("hostile,message", [
    ("../../../../../../etc/passwd", r"labels.csv line 6: image path '../../../../../../etc/passwd' is outside"),
    ("/etc/passwd", r"labels.csv line 6: image path '/etc/passwd' is absolute"),
    ("../sibling/other.png", r"labels.csv line 6: image path '../sibling/other.png' is outside the dataset folder"),
    ("img0.png/../../sibling/other", r"labels.csv line 6: .* is outside the dataset folder"),
])
def test_folder_csv_paths_outside_the_root_are_refused(tmp_path, hostile, message):
    root, csv = _tree(tmp_path, hostile)
    with pytest.raises(DataError, match=message):
        FolderDataset(root, csv, label_columns="dx")


def test_folder_symlink_leading_out_is_refused(tmp_path):
    root, csv = _tree(tmp_path, "link.png")
    os.symlink(tmp_path / "sibling" / "other.png", root / "link.png")
    with pytest.raises(DataError, match=r"labels.csv line 6: image path 'link.png' leads through a symbolic link to .*other.png"):
        FolderDataset(root, csv, label_columns="dx")


def test_links_inside_the_folder_and_a_linked_root_are_fine(tmp_path):
    root, csv = _tree(tmp_path, "alias.png")
    os.symlink(root / "img0.png", root / "alias.png")
    os.symlink(root, tmp_path / "linked-root")
    assert len(FolderDataset(tmp_path / "linked-root", csv, label_columns="dx").ids) == 5


def test_contained_builds_the_path_under_the_folder(tmp_path):
    assert contained(tmp_path, "a/b.png", "x.csv line 2", resolve=False) == tmp_path / "a" / "b.png"
    with pytest.raises(DataError, match=r"^x.csv line 2: image path '\.\./b.png' is outside the dataset folder"):
        contained(tmp_path / "a", "../b.png", "x.csv line 2")


# ----- the published layouts: one shared check, one line naming the CSV line

from _release_layouts import (  # noqa: E402
    CHEXPERT_CASES, CHEXPERT_HEADER, MIMIC_IMAGES, MIMIC_METADATA_HEADER, chexpert_row, make_aptos, make_chexpert,
    make_isic, make_mimic, write_rows,
)

from crsbench.datasets.published.aptos2019 import APTOS2019Dataset  # noqa: E402
from crsbench.datasets.published.chexpert import CheXpertDataset  # noqa: E402
from crsbench.datasets.published.isic2019 import ISIC2019Dataset  # noqa: E402
from crsbench.datasets.published.mimic_cxr import MIMICCXRDataset  # noqa: E402

ESCAPE = "../../../../../../../../etc/passwd"


def _replace_first_cell(csv: Path, value: str) -> None:
    header, first, *rest = csv.read_text().splitlines()
    csv.write_text("\n".join([header, ",".join([value, *first.split(",")[1:]]), *rest]) + "\n")


@pytest.mark.parametrize("hostile", [ESCAPE, "../sibling/x"])
def test_aptos_id_leading_out_of_the_images_is_refused(tmp_path, hostile):
    root = make_aptos(tmp_path / "aptos")
    _replace_first_cell(root / "train.csv", hostile)
    with pytest.raises(DataError, match=r"train.csv line 2: image path .* is outside the dataset folder .*train_images"):
        APTOS2019Dataset(root)


def test_aptos_symlinked_image_leading_out_is_refused(tmp_path):
    root = make_aptos(tmp_path / "aptos")
    first = (root / "train.csv").read_text().splitlines()[1].split(",")[0]
    image = root / "train_images" / f"{first}.png"
    outside = tmp_path / "elsewhere.png"
    image.rename(outside)
    os.symlink(outside, image)
    with pytest.raises(DataError, match=r"train.csv line 2: image path .* symbolic link to .*elsewhere.png"):
        APTOS2019Dataset(root)


def test_isic_image_name_leading_out_is_refused(tmp_path):
    root = make_isic(tmp_path / "isic")
    truth = root / "ISIC_2019_Training_GroundTruth.csv"
    metadata = root / "ISIC_2019_Training_Metadata.csv"
    name = truth.read_text().splitlines()[1].split(",")[0]
    for csv in (truth, metadata):
        csv.write_text(csv.read_text().replace(name + ",", ESCAPE + ",", 1))
    with pytest.raises(DataError, match=r"GroundTruth.csv line 2: image path .*etc/passwd.jpg' is outside"):
        ISIC2019Dataset(root)


@pytest.mark.parametrize("path", [
    "CheXpert-v1.0-small/train/patient00001/../../../../../../../../etc/passwd",
    "/etc/patient00001/passwd",
])
def test_chexpert_path_leading_out_is_refused_even_unchecked(tmp_path, path):
    parent = tmp_path / "parent"
    make_chexpert(parent)
    rows = [chexpert_row(*case) for case in CHEXPERT_CASES]
    rows[2][0] = path  # line 4, a frontal view
    write_rows(parent / "CheXpert-v1.0-small" / "train.csv", CHEXPERT_HEADER, rows)
    with pytest.raises(DataError, match=r"train.csv line 4: image path .* is (outside the dataset folder|absolute)"):
        CheXpertDataset(parent)  # check_images is off by default: the paths are still checked


def test_chexpert_symlink_is_refused_when_the_image_is_read(tmp_path):
    parent = tmp_path / "parent"
    release = make_chexpert(parent)
    image = release / "train" / "patient00003" / "study1" / "view1_frontal.jpg"
    outside = tmp_path / "elsewhere.jpg"
    image.rename(outside)
    os.symlink(outside, image)
    with pytest.raises(DataError, match=r"train.csv line \d+: .* symbolic link to .*elsewhere.jpg"):
        CheXpertDataset(parent, check_images=True)
    dataset = CheXpertDataset(parent)  # not stat-ed when built, so refused when decoded
    split = next(s for s in (dataset.split(n) for n in ("train", "val", "test")) if "patient00003" in " ".join(s.ids))
    index = [i for i, name in enumerate(split.ids) if "patient00003" in name][0]
    with pytest.raises(DataError, match=r"symbolic link to .*elsewhere.jpg"):
        split.images[index]


def test_mimic_dicom_id_leading_out_is_refused(tmp_path):
    images = [(s, st, ESCAPE if d == "d03" else d, v, sp) for s, st, d, v, sp in MIMIC_IMAGES]
    root = make_mimic(tmp_path / "mimic", images=MIMIC_IMAGES)
    metadata = [[d, s, st, "x", v, 1, 1, 1, 1, "x", "x", "x"] for s, st, d, v, _ in images]
    write_rows(root / "mimic-cxr-2.0.0-metadata.csv.gz", MIMIC_METADATA_HEADER, metadata)
    write_rows(root / "mimic-cxr-2.0.0-split.csv.gz", ["dicom_id", "study_id", "subject_id", "split"],
               [[d, st, s, sp] for s, st, d, _, sp in images])
    with pytest.raises(DataError, match=r"metadata.csv.gz line 4: image path .*etc/passwd.jpg' is outside"):
        MIMICCXRDataset(root)
