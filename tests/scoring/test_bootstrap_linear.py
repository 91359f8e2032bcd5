"""The linearised AUROC draws (bootstrap_linear) against the exact ones and against scikit-learn.

What is exact: the point (draw 0), the decomposition itself (exact draw minus linearised draw is the
dropped degenerate term R(w) / P(w), computed here by brute force over every pair), the columns drawn
exactly for a rare class. What is approximate, and by how much: the draws' error against the exact
engine, as a share of the bootstrap spread, bounded by 3/sqrt(cases) and shrinking with the cases.
The intervals' coverage against a known truth is in tests/simulation/test_bootstrap_simulation.py.
"""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.crs.definition import CRSConfig
from crsbench.metrics.weighted import BinaryAUROC, WeightedMetrics
from crsbench.scoring import case_bootstrap as case_bootstrap_module
from crsbench.scoring.axes import compute_axes
from crsbench.scoring.bootstrap_batched import draw_aurocs, numpy_columns
from crsbench.scoring.bootstrap_linear import EXACT_BELOW, draw_aurocs_linear, linear_columns, placement_values
from crsbench.scoring.case_bootstrap import case_bootstrap
from crsbench.simulation.cohort import Design, EncoderTruth, simulate
from crsbench.scoring.task_draws import cluster_counts


def _column(rng, n, positives, separation=1.0, decimals=None):
    y = np.zeros(n, dtype=int)
    y[rng.choice(n, positives, replace=False)] = 1
    scores = rng.normal(separation * y, 1.0)
    if decimals is not None:  # ties within and across the classes
        scores = np.round(scores, decimals)
    return y, scores, BinaryAUROC(scores, y)


def _draws(rng, n, n_draws):
    return np.vstack([np.ones(n, dtype=np.int64), cluster_counts(rng, n, n_draws)])


@pytest.mark.parametrize("decimals", [None, 1, 0])
def test_placement_values_give_sklearns_auroc_and_balance(decimals):
    rng = np.random.default_rng(decimals or 7)
    y, scores, column = _column(rng, 300, 90, decimals=decimals)
    f, c, auroc = placement_values(column)
    assert auroc == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
    assert f.mean() == pytest.approx(auroc, abs=1e-12)  # the mean place of a positive is the AUROC
    assert c.sum() == pytest.approx(0.0, abs=1e-9)
    assert ((f >= 0) & (f <= 1)).all()
    # each negative's share by brute force: positives above it, ties half
    pos, neg = scores[column.positives], scores[column.negatives]
    above = (pos[None, :] > neg[:, None]).sum(axis=1) + 0.5 * (pos[None, :] == neg[:, None]).sum(axis=1)
    np.testing.assert_allclose(c, above - auroc * len(pos), atol=1e-9)


@pytest.mark.parametrize("decimals", [None, 1])
def test_exact_minus_linearised_is_the_dropped_degenerate_term(decimals):
    """A(w) - A_lin(w) = R(w) / P(w), R(w) = sum_ij (w_i - 1) w_j (h_ij - F_i) / Q(w): the one term dropped."""
    rng = np.random.default_rng(3)
    n = 80
    y, scores, column = _column(rng, n, 35, decimals=decimals)
    counts = _draws(rng, n, 40)
    exact = numpy_columns([column], counts.T)[0]
    linear = linear_columns([column], counts, np.arange(n), exact_below=0)[0]
    f, _, _ = placement_values(column)
    pos, neg = scores[column.positives], scores[column.negatives]
    h = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    w_pos, w_neg = counts[:, column.positives].astype(float), counts[:, column.negatives].astype(float)
    dropped = np.einsum("bi,bj,ij->b", w_pos - 1, w_neg, h - f[:, None]) / w_neg.sum(axis=1) / w_pos.sum(axis=1)
    inside = (linear > 0) & (linear < 1)  # not clipped
    np.testing.assert_allclose((exact - linear)[inside], dropped[inside], atol=1e-6)
    assert exact[0] == linear[0]  # the point, exactly
    assert np.abs(dropped[1:]).max() > 0  # the term is there to drop: the test can fail


def _error_share(n, positives, seed=0, draws=300):
    rng = np.random.default_rng(seed)
    _, _, column = _column(rng, n, positives, separation=1.5)
    counts = _draws(rng, n, draws)
    exact = numpy_columns([column], counts.T)[0]
    linear = linear_columns([column], counts, np.arange(n))[0]
    return float(np.sqrt(np.mean((linear - exact) ** 2)) / exact[1:].std())


def test_the_error_is_a_small_share_of_the_spread_that_shrinks_with_the_cases():
    """rms(linearised - exact) / sd(exact) <= 3 / sqrt(n) from 30 cases a side; measured 1.1-2.6 / sqrt(n)."""
    shares = {}
    for n in (300, 1200, 4800):
        for positives in (EXACT_BELOW, n // 10, n // 2):
            shares[n, positives] = _error_share(n, positives)
            assert shares[n, positives] <= 3.0 / np.sqrt(n), (n, positives, shares[n, positives])
    assert shares[4800, 480] < shares[300, 30]


def test_a_rare_class_is_drawn_exactly():
    rng = np.random.default_rng(4)
    n = 400
    _, _, rare = _column(rng, n, EXACT_BELOW - 1)
    _, _, common = _column(rng, n, 200)
    counts = _draws(rng, n, 50)
    got = linear_columns([rare, common], counts, np.arange(n))
    np.testing.assert_array_equal(got[0], numpy_columns([rare], counts.T)[0])
    assert not np.array_equal(got[1], numpy_columns([common], counts.T)[0])  # linearised, so not bit-equal


@pytest.mark.parametrize("task_type, k", [("single_label", 2), ("single_label", 5), ("ordinal", 4), ("multi_label", 3)])
def test_macro_draws_follow_the_exact_engine_with_clusters_and_masks(task_type, k):
    rng = np.random.default_rng(9)
    n, n_clusters = 1500, 700
    if task_type == "multi_label":
        y = (rng.random((n, k)) < 0.3).astype(float)
        y[rng.random((n, k)) < 0.1] = np.nan
        vectors = {f"v{i}": WeightedMetrics(task_type, y, np.clip(0.3 + 0.3 * np.nan_to_num(y) + rng.normal(0, 0.3, (n, k)), 0, 1))
                   for i in range(3)}
    else:
        y = rng.integers(0, k, size=n)
        vectors = {}
        for i in range(3):
            logits = rng.normal(size=(n, k))
            logits[np.arange(n), y] += 1.2
            vectors[f"v{i}"] = WeightedMetrics(task_type, y, np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))
    codes = rng.integers(0, n_clusters, size=n)
    counts = _draws(rng, n_clusters, 200)
    exact = draw_aurocs(vectors.__getitem__, list(vectors), counts, codes, kernel="numpy")
    linear = draw_aurocs_linear(vectors.__getitem__, list(vectors), counts, codes, max_columns=2)  # groups of 2
    for name in vectors:
        assert linear[name][0] == pytest.approx(exact[name][0], abs=1e-12)
        share = np.sqrt(np.mean((linear[name] - exact[name]) ** 2)) / exact[name][1:].std()
        assert share < 3.0 / np.sqrt(n), (name, share)


def test_non_integer_counts_are_refused():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 50)
    vectors = {"v": WeightedMetrics("single_label", y, np.column_stack([0.75 - y * 0.5, y * 0.5 + 0.25]))}
    with pytest.raises(ValueError, match="integer"):
        draw_aurocs_linear(vectors.__getitem__, ["v"], np.full((2, 50), 0.5), np.arange(50))


ENCODERS = (EncoderTruth("a", 1.2), EncoderTruth("b", 1.6, 0.8), EncoderTruth("c", 0.9, 1.1, 0.1, 0.1))
DESIGN = Design(ENCODERS, n_cases=600, seeds=(0, 1, 2), tasks=("t1", "t2"), task_classes=(2, 3),
                fractions=(0.1, 0.5, 1.0), perturbations=("noise",), severities=(1, 5))


@pytest.fixture(scope="module")
def cohort():
    records, stored = simulate(DESIGN, np.random.default_rng(0))
    return records, stored, compute_axes(records, predictions=stored)


def test_case_bootstrap_linearised_agrees_with_the_exact_engine(cohort):
    records, stored, axis_scores = cohort
    config = CRSConfig(n_boot=400, seed=2)
    exact = case_bootstrap(records, stored, axis_scores, "a", config, engine="batched")
    linear = case_bootstrap(records, stored, axis_scores, "a", config, engine="linearised")
    assert (exact.engine, linear.engine) == ("batched", "linearised")
    for scope, result in exact.results.items():
        other = linear.results[scope]
        point = result.intervals["crs"]
        np.testing.assert_allclose(other.intervals["crs"], point, atol=1e-9)  # the point is exact
        width = (result.intervals["ci_high"] - result.intervals["ci_low"]).dropna()
        for bound in ("ci_low", "ci_high"):
            gap = (other.intervals[bound] - result.intervals[bound]).dropna().abs()
            assert (gap <= 0.05 * width).all(), (scope, bound, gap.to_dict(), width.to_dict())
        assert other.leading_tier == result.leading_tier


def test_auto_takes_the_exact_engine_while_it_is_cheap_and_says_when_it_does_not(cohort, monkeypatch):
    from crsbench.scoring.score import score_records

    records, stored, axis_scores = cohort
    config = CRSConfig(n_boot=50, n_weight_draws=0)
    assert case_bootstrap(records, stored, axis_scores, "a", config).engine == "batched"
    monkeypatch.setattr(case_bootstrap_module, "EXACT_LIMIT", 0.0)
    chosen = case_bootstrap(records, stored, axis_scores, "a", config)
    assert chosen.engine == "linearised" and chosen.exact_work > 0
    forced = case_bootstrap(records, stored, axis_scores, "a", config.model_copy(update={"bootstrap_engine": "batched"}))
    assert forced.engine == "batched"
    report = score_records(records, "a", config, predictions=stored)
    note = next(note for note in report.notes if "linearised engine" in note)
    assert "bootstrap_engine: batched" in note
    assert f"at most about {3 / np.sqrt(DESIGN.n_cases):.0%} of the bootstrap spread" in note  # 3/sqrt(600): 12 %
    assert f"({DESIGN.n_cases:,} cases;" in note


def test_a_vector_with_a_rare_class_gets_that_column_exactly_and_the_rest_linearised():
    rng = np.random.default_rng(12)
    n = 800
    y = np.zeros(n, dtype=int)
    y[:EXACT_BELOW - 5] = 1  # a rare positive class: the binary vector is drawn exactly
    y[EXACT_BELOW - 5: 400] = 2
    binary = WeightedMetrics("single_label", (y == 1).astype(int),
                             np.column_stack([1 - (p := np.clip(0.2 + 0.5 * (y == 1) + rng.normal(0, 0.2, n), 0, 1)), p]))
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), y] += 1.5
    three = WeightedMetrics("single_label", y, np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))
    vectors = {"binary": binary, "three": three}
    counts = _draws(rng, n, 120)
    exact = draw_aurocs(vectors.__getitem__, list(vectors), counts, np.arange(n), kernel="numpy")
    linear = draw_aurocs_linear(vectors.__getitem__, list(vectors), counts, np.arange(n), max_columns=3)
    np.testing.assert_array_equal(linear["binary"], exact["binary"])
    expected = np.nanmean(np.stack([numpy_columns([c], counts.T)[0] if min(len(c.positives), len(c.negatives)) < EXACT_BELOW
                                    else linear_columns([c], counts, np.arange(n))[0] for c in three.auroc_columns]), axis=0)
    np.testing.assert_allclose(linear["three"], expected, atol=1e-12)


def test_the_torch_product_equals_numpys_to_float32_rounding_on_cpu_tensors():
    """The GPU path of the linearised engine, run on CPU tensors: the same draws as the numpy product but
    for the order of float32 sums (relative 1e-6 of the per-cluster sums)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    n, n_clusters = 900, 400
    columns = [_column(rng, n, positives, decimals=decimals)[2] for positives, decimals in ((300, None), (120, 1), (40, None))]
    codes = rng.integers(0, n_clusters, size=n)
    counts = _draws(rng, n_clusters, 150)
    on_numpy = linear_columns(columns, counts, codes)
    on_torch = linear_columns(columns, counts, codes, device=torch.device("cpu"))
    np.testing.assert_allclose(on_torch, on_numpy, rtol=0, atol=1e-6)
    assert on_torch[:, 0] == pytest.approx(on_numpy[:, 0], abs=0)  # draw 0, the point, exact on both
    # the same by the engine's entry point, the torch kernel asked for by name
    y = rng.integers(0, 3, size=n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), y] += 1.0
    vectors = {"v": WeightedMetrics("single_label", y, np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True))}
    numpy_draws = draw_aurocs_linear(vectors.__getitem__, ["v"], counts, codes, kernel="numpy")["v"]
    torch_draws = draw_aurocs_linear(vectors.__getitem__, ["v"], counts, codes, kernel="torch")["v"]
    np.testing.assert_allclose(torch_draws, numpy_draws, rtol=0, atol=1e-6)


def test_the_linearised_product_takes_the_device_the_exact_engine_would(monkeypatch):
    torch = pytest.importorskip("torch")
    from crsbench.core import hardware
    from crsbench.scoring import bootstrap_batched, bootstrap_linear

    resolve = bootstrap_batched.resolve_kernel  # the one resolver both engines call
    assert bootstrap_linear.resolve_kernel is resolve
    monkeypatch.setattr(hardware, "scoring_device", lambda: None)  # no GPU
    assert resolve(None, None) == ("numpy", None)
    assert resolve("torch", None) == ("torch", torch.device("cpu"))
    monkeypatch.setattr(hardware, "scoring_device", lambda: torch.device("cuda"))  # a GPU seen
    assert resolve(None, None) == ("torch", torch.device("cuda"))
    assert resolve("numpy", None)[0] == "numpy"
    with pytest.raises(ValueError, match="kernel must be one of"):
        bootstrap_linear.linear_columns([], np.ones((1, 1)), np.zeros(1, dtype=int), kernel="jax")
