"""The batched AUROC engine equals the per-vector reference path: the same draws, the same values.

Reference: weighted_metrics.WeightedMetrics.auroc one vector and one chunk of draws at a time (what
bootstrap.case_bootstrap(engine="reference") runs); independent check: scikit-learn's roc_auc_score
with sample weights."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.scoring.axes import compute_axes
from crsbench.scoring.case_bootstrap import case_bootstrap
from crsbench.scoring.bootstrap_batched import draw_aurocs
from crsbench.crs.definition import CRSConfig
from crsbench.simulation.cohort import Design, EncoderTruth, simulate
from crsbench.scoring.task_draws import cluster_counts
from crsbench.metrics.weighted import WeightedMetrics, case_major

torch = pytest.importorskip("torch")


def _vectors(rng, task_type, n, k, n_vectors, ties):
    if task_type == "multi_label":
        y = (rng.random((n, k)) < 0.3).astype(float)
        y[rng.random((n, k)) < 0.15] = np.nan  # missing labels: masked per label
        y[:, -1] = np.where(np.isnan(y[:, -1]), np.nan, 0.0)  # one label with no positive: undefined, skipped
        probs = [np.clip(0.3 + 0.3 * np.nan_to_num(y) + rng.normal(0, 0.25, (n, k)), 0, 1) for _ in range(n_vectors)]
    else:
        y = rng.integers(0, k, size=n)
        probs = []
        for _ in range(n_vectors):
            logits = rng.normal(size=(n, k))
            logits[np.arange(n), y] += 1.0
            probs.append(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))
    if ties:  # coarse scores: many ties within and across classes
        probs = [np.round(p, 1) for p in probs]
        if task_type != "multi_label":
            probs = [p / p.sum(axis=1, keepdims=True) for p in probs]
    return y, {f"v{i}": WeightedMetrics(task_type, y, p) for i, p in enumerate(probs)}


SHAPES = {
    "binary": ("single_label", 2, False),
    "binary_ties": ("single_label", 2, True),
    "single": ("single_label", 5, False),
    "single_ties": ("single_label", 5, True),
    "ordinal_ties": ("ordinal", 5, True),
    "multi_label_masked": ("multi_label", 4, False),
    "multi_label_masked_ties": ("multi_label", 4, True),
}


@pytest.mark.parametrize("kernel", ["numpy", "torch"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_draw_aurocs_equal_the_reference_bit_for_bit(shape, kernel):
    task_type, k, ties = SHAPES[shape]
    rng = np.random.default_rng(11)
    n, n_clusters = 120, 50
    y, vectors = _vectors(rng, task_type, n, k, 4, ties)
    codes = rng.integers(0, n_clusters, size=n)
    counts = np.vstack([np.ones(n_clusters), cluster_counts(rng, n_clusters, 60)])
    got = draw_aurocs(vectors.__getitem__, list(vectors), counts, codes, kernel=kernel, device=torch.device("cpu"))
    weights = case_major(counts[:, codes])
    assert any(c.has_ties for m in vectors.values() for c in m.auroc_columns) or not ties
    for name, metrics in vectors.items():
        np.testing.assert_array_equal(got[name], metrics.auroc(weights))


@pytest.mark.parametrize("kernel", ["numpy", "torch"])
def test_chunking_changes_nothing(kernel):
    """Any memory bound (one vector and one draw at a time, up to all at once) gives the same values."""
    rng = np.random.default_rng(5)
    y, vectors = _vectors(rng, "multi_label", 90, 3, 5, True)
    codes = np.arange(90)
    counts = np.vstack([np.ones(90), cluster_counts(rng, 90, 37)])
    results = [draw_aurocs(vectors.__getitem__, list(vectors), counts, codes, kernel=kernel,
                           device=torch.device("cpu"), max_cells=cells) for cells in (1, 500, 20_000, 10**9)]
    for other in results[1:]:
        for name in vectors:
            np.testing.assert_array_equal(other[name], results[0][name])


def test_weighted_auroc_agrees_with_sklearn():
    rng = np.random.default_rng(2)
    y, vectors = _vectors(rng, "single_label", 200, 2, 3, True)
    codes = np.arange(200)
    counts = cluster_counts(rng, 200, 8)
    got = draw_aurocs(vectors.__getitem__, list(vectors), counts, codes, kernel="numpy")
    for name, metrics in vectors.items():
        scores = metrics._proba[:, 1]
        for b in range(len(counts)):
            expected = roc_auc_score(y, scores, sample_weight=counts[b])
            assert got[name][b] == pytest.approx(expected, rel=1e-12)


def test_non_integer_weights_are_refused():
    rng = np.random.default_rng(0)
    _, vectors = _vectors(rng, "single_label", 20, 2, 1, False)
    with pytest.raises(ValueError, match="integer"):
        draw_aurocs(vectors.__getitem__, list(vectors), np.full((2, 20), 0.5), np.arange(20), kernel="numpy")


ENCODERS = (EncoderTruth("a", 1.2), EncoderTruth("b", 1.6, 0.8), EncoderTruth("c", 0.9, 1.1, 0.1, 0.1))
DESIGN = Design(ENCODERS, n_cases=150, seeds=(0, 1, 2), tasks=("t1", "t2", "t3"), task_classes=(2, 4, 3),
                multi_label_tasks=("t3",), fractions=(0.1, 0.5, 1.0), perturbations=("noise", "blur"), severities=(1, 5))


def test_case_bootstrap_engines_agree_on_every_draw_interval_and_tier():
    records, stored = simulate(DESIGN, np.random.default_rng(0))
    axis_scores = compute_axes(records, predictions=stored)
    config = CRSConfig(n_boot=80, seed=4)
    reference = case_bootstrap(records, stored, axis_scores, "a", config, engine="reference")
    batched = case_bootstrap(records, stored, axis_scores, "a", config)
    assert set(reference.results) == set(batched.results)
    for scope, result in reference.results.items():
        np.testing.assert_array_equal(batched.results[scope].draws, result.draws)
        assert batched.results[scope].leading_tier == result.leading_tier
    np.testing.assert_array_equal(batched.auroc_draws, reference.auroc_draws)
    assert batched.axis_intervals.equals(reference.axis_intervals)


def test_unknown_engine_is_refused():
    records, stored = simulate(DESIGN, np.random.default_rng(0))
    with pytest.raises(ValueError, match="engine"):
        case_bootstrap(records, stored, compute_axes(records), "a", CRSConfig(n_boot=2), engine="fast")


def test_the_settings_name_exactly_the_engines_of_the_table():
    """The engine names a suite may write are the table's names (and auto): one list of engines."""
    from typing import get_args

    from crsbench.crs.statistics_settings import StatisticsSettings
    from crsbench.scoring.case_bootstrap import ENGINES
    from crsbench.scoring.task_draws import AUROC_ENGINES

    names = set(get_args(StatisticsSettings.model_fields["bootstrap_engine"].annotation))
    assert names == set(ENGINES) == {"auto", *AUROC_ENGINES}
