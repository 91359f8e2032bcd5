"""The whole pipeline on real fundus data, checked against an independent scikit-learn probe."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.preprocessing import StandardScaler

from crsbench import api
from crsbench.datasets.registry import get_dataset
from crsbench.embed.cache import EmbeddingCache, EmbeddingRequest
from crsbench.encoders.registry import get_encoder
from crsbench.plan.suite import parse_suite

from _shared_data import shared_file

C_GRID = [1e-3, 1e-2, 1e-1, 1.0]


@pytest.mark.slow
def test_retinamnist_probe_auroc_agrees_with_independent_sklearn(tmp_path):
    npz = shared_file("medmnist", "retinamnist.npz")
    suite = parse_suite({
        "name": "retina", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": [{"name": "efficientnet-lite0", "options": {"input_size": 64}}],
        "tasks": [{"name": "retina", "dataset": {"kind": "medmnist", "name": "retinamnist", "path": str(npz)}}],
        "seeds": [0], "fractions": [1.0], "probe": {"c_grid": C_GRID},
    })
    summary = api.run(suite)
    records = api.records(summary.output)
    assert len(records) == 1
    record = records.iloc[0]
    assert record.task_type == "ordinal" and record.n_train == 1080 and record.n_eval == 400
    assert np.isfinite(record.kappa_quadratic)

    # independent: the cached matrices, sklearn's scaler and probe, sklearn's AUROC
    encoder = get_encoder("efficientnet-lite0", input_size=64)
    dataset = get_dataset("medmnist", name="retinamnist", path=str(npz))
    cache = EmbeddingCache(tmp_path / "cache")
    x = {s: cache.load(EmbeddingRequest(encoder, dataset, s).key()).matrix for s in ("train", "val", "test")}
    y = {s: dataset.split(s).labels for s in ("train", "val", "test")}
    scaler = StandardScaler().fit(x["train"])
    fits = [LogisticRegression(C=c, max_iter=2000).fit(scaler.transform(x["train"]), y["train"]) for c in C_GRID]
    best = min(fits, key=lambda m: log_loss(y["val"], m.predict_proba(scaler.transform(x["val"])), labels=range(5)))
    expected = roc_auc_score(y["test"], best.predict_proba(scaler.transform(x["test"])), multi_class="ovr")
    assert record.auroc == pytest.approx(expected, abs=0.02)
    assert 0.6 < record.auroc < 0.9  # a real, imperfect signal: RetinaMNIST is hard at 28 px
