"""Builders of small fixture trees in the official release layouts, shared by the published-dataset tests.

Each builder writes the files a user gets from the official download (names and CSV columns as
published) with tiny generated JPG / PNG images, and returns the root folder.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from PIL import Image

ISIC_CLASSES = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK")
CHEXPERT_OBSERVATIONS = (
    "No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema",
    "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other",
    "Fracture", "Support Devices",
)  # fmt: skip
MIMIC_OBSERVATIONS = (
    "Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Enlarged Cardiomediastinum", "Fracture",
    "Lung Lesion", "Lung Opacity", "No Finding", "Pleural Effusion", "Pleural Other", "Pneumonia",
    "Pneumothorax", "Support Devices",
)  # fmt: skip
FIVE = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural Effusion")


def save_image(path: Path, seed: int = 0, size=(20, 16), grey: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    shape = (size[1], size[0]) if grey else (size[1], size[0], 3)
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).save(path)
    return path


def write_rows(path: Path, header: list[str], rows: list[list]) -> Path:
    text = "\n".join(",".join(str(v) for v in row) for row in [header, *rows]) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# ----- ISIC 2019


def isic_rows(n_per_class: int = 4) -> tuple[list[list], list[list]]:
    """Ground-truth and metadata rows: 8 classes x n images, lesions of two images, some without lesion_id,
    one `_downsampled` image name and one UNK image."""
    truth, metadata = [], []
    index = 0
    for c, name in enumerate(ISIC_CLASSES[:8]):
        for k in range(n_per_class):
            image = f"ISIC_{index:07d}" + ("_downsampled" if index == 3 else "")
            one_hot = ["1.0" if j == c else "0.0" for j in range(9)]
            truth.append([image, *one_hot])
            lesion = "" if k == n_per_class - 1 else f"IL_{c:03d}{k // 2}"
            metadata.append([image, 55, "anterior torso", lesion, "female"])
            index += 1
    unk = f"ISIC_{index:07d}"
    truth.append([unk, *["0.0"] * 8, "1.0"])
    metadata.append([unk, 40, "", "", "male"])
    return truth, metadata


def make_isic(root: Path, n_per_class: int = 4) -> Path:
    truth, metadata = isic_rows(n_per_class)
    write_rows(root / "ISIC_2019_Training_GroundTruth.csv", ["image", *ISIC_CLASSES], truth)
    write_rows(
        root / "ISIC_2019_Training_Metadata.csv", ["image", "age_approx", "anatom_site_general", "lesion_id", "sex"], metadata
    )
    for i, row in enumerate(truth):
        save_image(root / "ISIC_2019_Training_Input" / f"{row[0]}.jpg", seed=i)
    return root


# ----- APTOS 2019


def make_aptos(root: Path, n_per_grade: int = 4) -> Path:
    rows = [[f"{g}{k:011x}", g] for g in range(5) for k in range(n_per_grade)]
    write_rows(root / "train.csv", ["id_code", "diagnosis"], rows)
    for i, (id_code, _) in enumerate(rows):
        save_image(root / "train_images" / f"{id_code}.png", seed=i)
    return root


# ----- CheXpert

# (patient, study, view, frontal?, values of the five labels in FIVE order: "1.0", "0.0", "-1.0", "")
CHEXPERT_CASES = [
    (1, 1, 1, True, ["1.0", "", "", "", "0.0"]),
    (1, 1, 2, False, ["1.0", "", "", "", "0.0"]),
    (2, 1, 1, True, ["-1.0", "-1.0", "-1.0", "-1.0", "-1.0"]),
    (2, 2, 1, True, ["", "1.0", "0.0", "1.0", "1.0"]),
    (3, 1, 1, True, ["0.0", "0.0", "1.0", "", "-1.0"]),
    (4, 1, 1, True, ["", "", "", "-1.0", "1.0"]),
    (4, 1, 2, False, ["", "", "", "", ""]),
    (5, 1, 1, True, ["1.0", "1.0", "", "", ""]),
    (6, 1, 1, True, ["", "", "", "1.0", ""]),
    (7, 1, 1, True, ["", "-1.0", "1.0", "", "1.0"]),
    (8, 1, 1, True, ["1.0", "", "", "", "1.0"]),
    (9, 1, 1, True, ["", "1.0", "", "", ""]),
    (10, 1, 1, True, ["", "", "", "", ""]),
]


def chexpert_path(patient: int, study: int, view: int, frontal: bool, release="CheXpert-v1.0-small", part="train"):
    kind = "frontal" if frontal else "lateral"
    return f"{release}/{part}/patient{patient:05d}/study{study}/view{view}_{kind}.jpg"


def chexpert_row(patient, study, view, frontal, five, release="CheXpert-v1.0-small", part="train") -> list:
    values = dict(zip(FIVE, five))
    observations = [values.get(name, "") for name in CHEXPERT_OBSERVATIONS]
    view_kind = "Frontal" if frontal else "Lateral"
    ap_pa = "AP" if frontal else ""
    return [chexpert_path(patient, study, view, frontal, release, part), "Female", 60, view_kind, ap_pa, *observations]


CHEXPERT_HEADER = ["Path", "Sex", "Age", "Frontal/Lateral", "AP/PA", *CHEXPERT_OBSERVATIONS]


def make_chexpert(parent: Path, release: str = "CheXpert-v1.0-small", cases=CHEXPERT_CASES, valid: bool = False) -> Path:
    """Writes `parent/release/{train.csv, train/...}`; returns the release folder."""
    folder = parent / release
    rows = [chexpert_row(*case, release=release) for case in cases]
    write_rows(folder / "train.csv", CHEXPERT_HEADER, rows)
    for i, row in enumerate(rows):
        save_image(folder / row[0].split("/", 1)[1], seed=i, grey=True)
    if valid:
        valid_rows = [chexpert_row(64541 + k, 1, 1, True, ["1.0", "0.0", "", "1.0", "0.0"], release, "valid") for k in range(3)]
        write_rows(folder / "valid.csv", CHEXPERT_HEADER, valid_rows)
        for i, row in enumerate(valid_rows):
            save_image(folder / row[0].split("/", 1)[1], seed=100 + i, grey=True)
    return folder


# ----- MIMIC-CXR-JPG

# (subject, study, dicom, ViewPosition, official split)
MIMIC_IMAGES = [
    ("10000032", "50414267", "d01", "PA", "train"),
    ("10000032", "50414267", "d02", "LATERAL", "train"),
    ("10000032", "53189527", "d03", "AP", "train"),
    ("10000764", "57375967", "d04", "PA", "train"),
    ("10000764", "57375967", "d05", "LL", "train"),
    ("11000011", "51029426", "d06", "AP", "validate"),
    ("11000011", "51029426", "d07", "", "validate"),
    ("12000012", "52000012", "d08", "PA", "test"),
    ("12000012", "52000013", "d09", "PA", "test"),
    ("13000013", "53000013", "d10", "AP", "test"),
    ("14000014", "54000014", "d11", "PA", "train"),  # its study has no labeller row
]
# study -> (subject, five values)
MIMIC_LABELS = {
    "50414267": ("10000032", ["1.0", "", "0.0", "-1.0", ""]),
    "53189527": ("10000032", ["", "1.0", "", "", "1.0"]),
    "57375967": ("10000764", ["-1.0", "-1.0", "1.0", "", "0.0"]),
    "51029426": ("11000011", ["1.0", "", "", "1.0", "-1.0"]),
    "52000012": ("12000012", ["", "1.0", "1.0", "", ""]),
    "52000013": ("12000012", ["0.0", "", "-1.0", "1.0", "1.0"]),
    "53000013": ("13000013", ["1.0", "1.0", "", "", "1.0"]),
}
MIMIC_METADATA_HEADER = [
    "dicom_id", "subject_id", "study_id", "PerformedProcedureStepDescription", "ViewPosition", "Rows", "Columns",
    "StudyDate", "StudyTime", "ProcedureCodeSequence_CodeMeaning", "ViewCodeSequence_CodeMeaning",
    "PatientOrientationCodeSequence_CodeMeaning",
]  # fmt: skip


def mimic_label_rows(labels=MIMIC_LABELS) -> list[list]:
    rows = []
    for study, (subject, five) in labels.items():
        values = dict(zip(FIVE, five))
        rows.append([subject, study, *[values.get(name, "") for name in MIMIC_OBSERVATIONS]])
    return rows


def make_mimic(root: Path, images=MIMIC_IMAGES, labels=MIMIC_LABELS, gz: bool = True) -> Path:
    suffix = ".csv.gz" if gz else ".csv"  # PhysioNet ships the CSVs gzipped
    write_rows(root / f"mimic-cxr-2.0.0-chexpert{suffix}", ["subject_id", "study_id", *MIMIC_OBSERVATIONS], mimic_label_rows(labels))
    metadata = [
        [dicom, subject, study, "CHEST (PA AND LAT)", view, 3056, 2544, 21800506, 213014.531, "CHEST (PA AND LAT)",
         "postero-anterior", "Erect"]
        for subject, study, dicom, view, _ in images
    ]  # fmt: skip
    write_rows(root / f"mimic-cxr-2.0.0-metadata{suffix}", MIMIC_METADATA_HEADER, metadata)
    write_rows(
        root / f"mimic-cxr-2.0.0-split{suffix}",
        ["dicom_id", "study_id", "subject_id", "split"],
        [[dicom, study, subject, split] for subject, study, dicom, _, split in images],
    )
    for i, (subject, study, dicom, _, _) in enumerate(images):
        save_image(root / "files" / f"p{subject[:2]}" / f"p{subject}" / f"s{study}" / f"{dicom}.jpg", seed=i, grey=True)
    return root
