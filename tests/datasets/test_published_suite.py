"""The published benchmark's suite file: four datasets from environment roots, cxr with MIMIC as its shift."""

from __future__ import annotations

from pathlib import Path

import pytest
from _release_layouts import make_aptos, make_chexpert, make_isic, make_mimic

from crsbench.datasets.registry import get_dataset
from crsbench.errors import DataError
from crsbench.plan.suite import load_suite

SUITE = Path(__file__).resolve().parents[2] / "src" / "crsbench" / "suites" / "crs-bench.yaml"
ROOTS = {"ISIC2019_ROOT": make_isic, "APTOS2019_ROOT": make_aptos, "CHEXPERT_ROOT": make_chexpert, "MIMIC_CXR_JPG_ROOT": make_mimic}


def test_suite_shape():
    suite = load_suite(SUITE)
    assert suite.seeds == [0, 1, 2, 3, 4]
    assert suite.fractions == [0.01, 0.05, 0.10, 0.25, 0.50, 1.0]
    labels = [e.label for e in suite.encoders]
    zoo = {"resnet50-in1k", "vit-b16-in21k", "convnext-base-in22k", "dinov2-base", "clip-vit-b16", "siglip-base",
           "biomedclip", "medsiglip-448", "medgemma-4b-vision", "pubmedclip-vit-b32", "radimagenet-resnet50",
           "panderm-large", "retfound-cfp", "rad-dino", "chexzero"}
    assert zoo <= set(labels) and len(zoo) == 15
    assert suite.reference == "resnet50-in1k"
    assert suite.perturbations.select == "auto" and suite.perturbations.severities == [1, 2, 3, 4, 5]
    tasks = {t.name: t for t in suite.tasks}
    assert {name: t.dataset.kind for name, t in tasks.items()} == {"derm": "isic2019", "ophtho": "aptos2019", "cxr": "chexpert"}
    assert tasks["cxr"].shift.kind == "mimic_cxr"
    assert all(t.shift is None for name, t in tasks.items() if name != "cxr")


def test_roots_come_from_the_environment(tmp_path, monkeypatch):
    for variable, make in ROOTS.items():
        monkeypatch.setenv(variable, str(make(tmp_path / variable)))
    suite = load_suite(SUITE)
    for task in suite.tasks:
        for spec in (task.dataset, task.shift):
            if spec is None:
                continue
            dataset = get_dataset(spec.kind, **spec.options())
            assert len(dataset.ids) > 0 and dataset.split_file.is_file()
    cxr = next(t for t in suite.tasks if t.name == "cxr")
    source, shift = (get_dataset(s.kind, **s.options()) for s in (cxr.dataset, cxr.shift))
    assert source.policy == shift.policy and source.meta.class_names == shift.meta.class_names


def test_unset_variable_is_named(monkeypatch):
    monkeypatch.delenv("ISIC2019_ROOT", raising=False)
    derm = next(t for t in load_suite(SUITE).tasks if t.name == "derm")
    with pytest.raises(DataError, match=r"\$ISIC2019_ROOT, which is not set"):
        get_dataset(derm.dataset.kind, **derm.dataset.options())
