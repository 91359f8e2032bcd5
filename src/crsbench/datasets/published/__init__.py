"""Adapters for the published benchmark's datasets, read from their official release layouts.

`PUBLISHED` describes each one (for `crsbench datasets`); `published_class(kind)` returns its class.
Classes are imported on demand so listing the datasets stays cheap.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class PublishedInfo:
    kind: str
    title: str
    task: str
    env_var: str
    layout: str
    access: str
    module: str
    class_name: str


PUBLISHED = {
    info.kind: info
    for info in (
        PublishedInfo(
            "isic2019", "ISIC 2019 (training set)", "derm: 8 classes, grouped by lesion", "ISIC2019_ROOT",
            "ISIC_2019_Training_Input/*.jpg, ISIC_2019_Training_GroundTruth.csv, ISIC_2019_Training_Metadata.csv",
            "CC BY-NC 4.0", "isic2019", "ISIC2019Dataset",
        ),
        PublishedInfo(
            "aptos2019", "APTOS 2019 Blindness Detection", "ophtho: grades 0-4, ordinal", "APTOS2019_ROOT",
            "train.csv (id_code,diagnosis), train_images/*.png", "Kaggle competition rules",
            "aptos2019", "APTOS2019Dataset",
        ),
        PublishedInfo(
            "chexpert", "CheXpert-v1.0(-small)", "cxr: 5 labels, frontal, grouped by patient", "CHEXPERT_ROOT",
            "train.csv (Path, Frontal/Lateral, 14 observations), train/patientNNNNN/studyN/*.jpg",
            "Stanford research use agreement", "chexpert", "CheXpertDataset",
        ),
        PublishedInfo(
            "mimic_cxr", "MIMIC-CXR-JPG 2.x", "cxr shift: 5 labels, frontal, official split", "MIMIC_CXR_JPG_ROOT",
            "mimic-cxr-2.0.0-{chexpert,metadata,split}.csv(.gz), files/pXX/pSUBJECT/sSTUDY/*.jpg",
            "PhysioNet credentialed access + DUA", "mimic_cxr", "MIMICCXRDataset",
        ),
    )
}  # fmt: skip


def published_class(kind: str) -> type:
    info = PUBLISHED[kind]
    module = importlib.import_module(f"crsbench.datasets.published.{info.module}")
    return getattr(module, info.class_name)
