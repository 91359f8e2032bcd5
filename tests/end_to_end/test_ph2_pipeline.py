"""A folder of real dermoscopy images with a labels CSV, through the whole pipeline (PH2)."""

import pytest

from crsbench import api
from crsbench.plan.suite import parse_suite

from _shared_data import shared_file


@pytest.mark.slow
def test_ph2_folder_dataset_runs_end_to_end_with_perturbations(tmp_path):
    labels = shared_file("ph2", "labels.csv")
    suite = parse_suite({
        "name": "ph2", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": [{"name": "efficientnet-lite0", "label": "lite0-96", "options": {"input_size": 96}}, "raw-pixels"],
        "tasks": [{"name": "ph2", "dataset": {
            "kind": "folder", "root": str(labels.parent / "images"), "csv": str(labels), "image_column": "image",
            "label_columns": "diagnosis", "task_type": "single_label", "modality": "dermoscopy"}}],
        "seeds": [0, 1], "fractions": [0.5, 1.0], "probe": {"c_grid": [0.01, 0.1, 1.0]},
        "perturbations": {"select": ["hair", "defocus_blur"], "severities": [1, 5]},
    })
    summary = api.run(suite)
    records = api.records(summary.output)
    assert len(records) == 2 * 2 * 2 + 2 * 2 * 4  # encoders x seeds x (clean at both fractions + 2 x 2 perturbed at 100%)
    clean = records[(records.condition_kind == "clean") & (records.fraction == 1.0) & (records.seed == 0)].set_index("encoder")
    assert clean.loc["lite0-96", "n_eval"] + clean.loc["lite0-96", "n_train"] <= 200
    assert clean.loc["lite0-96", "auroc"] > 0.7  # three PH2 classes from ImageNet features: a real signal
    blurred = records[(records.condition == "defocus_blur") & (records.severity == 5) & (records.encoder == "lite0-96")]
    assert blurred.auroc.mean() < clean.loc["lite0-96", "auroc"] + 0.02
