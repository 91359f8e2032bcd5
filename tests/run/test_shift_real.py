"""Institutional shift on real data: paediatric PneumoniaMNIST -> adult multi-source chest X-rays."""

import numpy as np
import pytest

from crsbench import api
from crsbench.datasets.base import DatasetMeta
from crsbench.errors import DataError
from crsbench.run.shift import align_shift_labels
from crsbench.plan.suite import parse_suite

from _shared_data import shared_file


def test_shift_labels_are_aligned_by_name_and_mapping():
    task = DatasetMeta("t", "single_label", ("normal", "pneumonia"))
    shift = DatasetMeta("s", "single_label", ("pneumonia", "no finding"))
    aligned = align_shift_labels(np.array([0, 1, 1]), task, shift, {"no finding": "normal"})
    assert aligned.tolist() == [1, 0, 0]
    with pytest.raises(DataError, match=r"classes \['no finding'\] are not in t's"):
        align_shift_labels(np.array([0]), task, shift, None)
    multi_task = DatasetMeta("m", "multi_label", ("a", "b", "c"))
    multi_shift = DatasetMeta("n", "multi_label", ("c", "a"))
    aligned = align_shift_labels(np.array([[1.0, 0.0]]), multi_task, multi_shift, None)
    np.testing.assert_array_equal(aligned[0, [0, 2]], [0.0, 1.0])
    assert np.isnan(aligned[0, 1])  # a label the shift data lacks is masked, not called negative


@pytest.mark.slow
def test_pneumoniamnist_probe_loses_auroc_on_adult_multisource_xrays(tmp_path):
    pneumonia = shared_file("medmnist", "pneumoniamnist.npz")
    multisource = shared_file("cxr_multisource", "cxr_multisource_128.npz")
    suite = parse_suite({
        "name": "shift", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": ["raw-pixels", {"name": "efficientnet-lite0", "label": "lite0-64", "options": {"input_size": 64}}],
        "tasks": [{
            "name": "pneumonia",
            # the shared copy is re-packed (same images, other order), so its md5 is not the official one
            "dataset": {"kind": "medmnist", "name": "pneumoniamnist", "path": str(pneumonia), "verify_md5": False},
            "shift": {"kind": "npz", "path": str(multisource), "class_names": ["no finding", "pneumonia"],
                      "modality": "chest_xray", "name": "cxr-multisource"},
            "shift_label_map": {"no finding": "normal"},
        }],
        "seeds": [0], "fractions": [1.0], "probe": {"c_grid": [0.01, 0.1, 1.0]},
    })
    api.run(suite)
    records = api.records(tmp_path / "out").set_index(["encoder", "condition_kind"])
    for encoder in ("raw-pixels", "lite0-64"):
        clean, shifted = records.loc[(encoder, "clean"), "auroc"], records.loc[(encoder, "shift"), "auroc"]
        assert clean > 0.85  # paediatric pneumonia is easy in-distribution
        assert shifted < clean - 0.05  # and a real drop on another population and hospital
    shift_row = records.loc[("lite0-64", "shift")]
    assert shift_row["condition"] == "shift:cxr-multisource" and shift_row["n_eval"] == 615
