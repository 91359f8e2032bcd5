"""Perturbations and shift inside the protocol: which records exist, and that every encoder sees the
same corrupted test images whatever the batch size."""

import numpy as np
import pytest

from crsbench import api
from crsbench.plan.conditions import Condition
from crsbench.datasets.registry import get_dataset
from crsbench.embed.cache import Embedder, EmbeddingRequest
from crsbench.encoders.registry import get_encoder
from crsbench.errors import DataError
from crsbench.plan.suite import parse_suite

SIZES = {"n_train": 60, "n_val": 20, "n_test": 30}


def _suite(tmp_path, **extra):
    raw = {
        "name": "robust", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": ["raw-pixels"],
        "tasks": [
            {"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES},
             "shift": {"kind": "demo", "specialty": "derm", "site": "B", **SIZES}},
            {"name": "cxr", "dataset": {"kind": "demo", "specialty": "cxr", **SIZES}, "perturbations": ["gamma_up"]},
        ],
        "seeds": [0, 1], "fractions": [0.5, 1.0], "probe": {"c_grid": [0.1]},
        "perturbations": {"select": ["gaussian_noise", "jpeg"], "severities": [1, 5]},
    }
    raw.update(extra)
    return parse_suite(raw)


def test_perturbed_and_shifted_records_exist_only_at_full_labels(tmp_path):
    api.run(_suite(tmp_path))
    records = api.records(tmp_path / "out")
    full, partial = records[records.fraction == 1.0], records[records.fraction == 0.5]
    assert set(partial.condition_kind) == {"clean"}
    derm = full[full.task == "derm"]
    assert sorted({(c, s) for c, s in derm.loc[derm.condition_kind == "perturbation", ["condition", "severity"]].values}) == [
        ("gaussian_noise", 1), ("gaussian_noise", 5), ("jpeg", 1), ("jpeg", 5)]
    assert set(derm.loc[derm.condition_kind == "shift", "condition"]) == {"shift:demo-derm-siteB"}
    cxr = full[full.task == "cxr"]  # the task's own selection overrides the suite's
    assert set(cxr.loc[cxr.condition_kind == "perturbation", "condition"]) == {"gamma_up"}
    # per seed: 1 clean at 50%; at 100%: clean + 4 perturbed + 1 shift (derm), clean + 2 perturbed (cxr)
    assert len(records) == 2 * (1 + 6) + 2 * (1 + 3)
    # perturbed evaluations use the clean-trained probe on other embeddings of the same test images
    clean = derm[derm.condition_kind == "clean"].iloc[0]
    noisy = derm[(derm.condition == "gaussian_noise") & (derm.severity == 5)].iloc[0]
    assert noisy.embedding_hash_train == clean.embedding_hash_train
    assert noisy.embedding_hash_eval != clean.embedding_hash_eval and noisy.n_eval == clean.n_eval


def test_perturbed_embeddings_do_not_depend_on_batch_size():
    encoder = get_encoder("colour-texture")
    dataset = get_dataset("demo", specialty="derm", **SIZES)
    condition = Condition.perturbation("hair", 4, seed=3)
    small = Embedder(batch_size=7).embed(EmbeddingRequest(encoder, dataset, "test", condition)).matrix
    large = Embedder(batch_size=30).embed(EmbeddingRequest(encoder, dataset, "test", condition)).matrix
    clean = Embedder(batch_size=30).embed(EmbeddingRequest(encoder, dataset, "test")).matrix
    np.testing.assert_array_equal(small, large)
    assert not np.array_equal(small, clean)


def test_perturbation_key_changes_with_severity_seed_and_parameter():
    ids = {Condition.perturbation("jpeg", s, seed).cache_id() for s in (1, 2) for seed in (0, 1)}
    assert len(ids) == 4 and all("jpeg" in i for i in ids)


def test_unknown_perturbation_in_a_suite_names_the_field(tmp_path):
    with pytest.raises(Exception, match=r"perturbations.select: unknown perturbations \['fog'\]"):
        _suite(tmp_path, perturbations={"select": ["fog"]})


def test_shift_with_other_class_names_fails_before_any_work(tmp_path):
    suite = parse_suite({
        "name": "bad-shift", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": ["raw-pixels"],
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES},
                   "shift": {"kind": "demo", "specialty": "fundus", **SIZES}}],
        "seeds": [0], "fractions": [1.0],
    })
    with pytest.raises(DataError, match="task type ordinal differs"):
        api.run(suite)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.slow
def test_records_are_identical_with_dataloader_workers(tmp_path):
    columns = ["encoder", "task", "seed", "fraction", "condition", "severity", "auroc", "ece", "nll", "embedding_hash_eval"]
    tables = []
    for workers in (0, 2):
        out = tmp_path / f"w{workers}"
        suite = _suite(out, num_workers=workers, seeds=[0], fractions=[1.0])
        api.run(suite)
        tables.append(api.records(out / "out")[columns].sort_values(columns[:6]).reset_index(drop=True))
    assert len(tables[0]) == 9
    assert tables[0].equals(tables[1])
