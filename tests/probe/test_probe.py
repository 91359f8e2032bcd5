import dataclasses

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.preprocessing import StandardScaler

from crsbench.probe.linear import ProbeConfig, Standardiser, fit_probe


def _blobs(n, d, k, seed, signal=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    centres = rng.normal(size=(k, d)) * signal
    return centres[y] + rng.normal(size=(n, d)), y


@pytest.mark.parametrize("n,d", [(40, 200), (300, 50)])
def test_multinomial_probe_matches_sklearn_at_chosen_c(n, d):
    x, y = _blobs(n + 200, d, 3, seed=n, signal=0.3)
    x_tr, y_tr, x_val, y_val = x[:n], y[:n], x[n:], y[n:]
    config = ProbeConfig(c_grid=(1e-3, 1e-2, 1e-1, 1.0), tol=1e-8, max_iter=5000)
    probe = fit_probe("single_label", x_tr, y_tr, x_val, y_val, 3, config)

    scaler = StandardScaler().fit(x_tr)
    losses = {}
    for c in config.c_grid:
        reference = LogisticRegression(C=c, tol=1e-8, max_iter=5000).fit(scaler.transform(x_tr), y_tr)
        losses[c] = (log_loss(y_val, reference.predict_proba(scaler.transform(x_val)), labels=[0, 1, 2]), reference)
    best_c = min(losses, key=lambda c: losses[c][0])
    assert probe.chosen_c == [best_c]
    assert probe.val_nll == pytest.approx(losses[best_c][0], abs=1e-4)
    expected = losses[best_c][1].predict_proba(scaler.transform(x_val))
    np.testing.assert_allclose(probe.predict_proba(x_val), expected, atol=2e-4)


@pytest.mark.parametrize(
    "n_train,d,k",
    [(30, 300, 2), (90, 100, 3)],
    ids=["row-span basis, n far below d", "feature basis, n just below d"],
)
def test_fit_with_fewer_rows_than_features_matches_sklearn_in_full_dimension(n_train, d, k):
    # representer theorem: with d > n the optimum lies in the training rows' span, so solving there is exact;
    # with n just under d the feature basis is the cheaper one, its second-moment matrix rank-deficient
    x, y = _blobs(2 * n_train, d, k, seed=1, signal=0.3)
    x_tr, y_tr, x_val, y_val = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    probe = fit_probe("single_label", x_tr, y_tr, x_val, y_val, k, ProbeConfig(c_grid=(0.01, 1.0), tol=1e-8, max_iter=5000), device="cpu")
    assert probe.converged and probe.grad_norm <= 1e-8
    scaler = StandardScaler().fit(x_tr)
    reference = LogisticRegression(C=probe.chosen_c[0], tol=1e-10, max_iter=10000).fit(scaler.transform(x_tr), y_tr)
    np.testing.assert_allclose(probe.predict_proba(x_val), reference.predict_proba(scaler.transform(x_val)), atol=1e-5)


@pytest.mark.parametrize("link", ["softmax", "sigmoid"])
def test_gradient_check_in_chunks_equals_the_gradient_in_one_piece(link, monkeypatch):
    import crsbench.probe.linear as probe_module

    rng = np.random.default_rng(6)
    n, d, m = 50, 7, 3
    z = rng.normal(size=(n, d)).astype(np.float32)
    coef, intercept = rng.normal(size=(d, m)), rng.normal(size=m)
    targets = np.eye(m)[rng.integers(0, m, n)] if link == "softmax" else (rng.random((n, m)) < 0.4).astype(float)
    weights = np.full((n, 1 if link == "softmax" else m), 1.0 / n)
    l2 = np.array([0.3]) if link == "softmax" else np.array([0.1, 0.2, 0.3])
    logits = z.astype(np.float64) @ coef + intercept
    if link == "softmax":
        proba = np.exp(logits - logits.max(1, keepdims=True))
        proba /= proba.sum(1, keepdims=True)
    else:
        proba = 1 / (1 + np.exp(-logits))
    residual = (proba - targets) * weights
    expected = max(np.abs(z.T.astype(np.float64) @ residual + l2 * coef).max(), np.abs(residual.sum(0)).max())
    monkeypatch.setattr(probe_module, "CHECK_ROWS", 7)  # 50 rows in 8 chunks, the last one short
    assert probe_module._checked_gradient(z, targets, weights, l2, coef, intercept, link) == pytest.approx(expected, rel=1e-12)


def test_float32_engine_at_default_tolerance_matches_converged_sklearn():
    x, y = _blobs(900, 64, 4, seed=7, signal=0.4)
    x = x.astype(np.float32)
    probe = fit_probe("single_label", x[:600], y[:600], x[600:], y[600:], 4, ProbeConfig(), device="cpu")
    assert probe.converged and probe.grad_norm <= 1e-4
    scaler = StandardScaler().fit(x[:600].astype(np.float64))
    reference = LogisticRegression(C=probe.chosen_c[0], tol=1e-10, max_iter=10000)
    reference.fit(scaler.transform(x[:600].astype(np.float64)), y[:600])
    expected = reference.predict_proba(scaler.transform(x[600:].astype(np.float64)))
    np.testing.assert_allclose(probe.predict_proba(x[600:]), expected, atol=1e-3)


def test_non_convergence_is_reported_not_hidden():
    x, y = _blobs(300, 40, 3, seed=2, signal=0.5)
    probe = fit_probe("single_label", x[:200], y[:200], x[200:], y[200:], 3, ProbeConfig(c_grid=(10.0,), max_iter=2, tol=1e-6), device="cpu")
    assert not probe.converged
    assert probe.grad_norm > 1e-6


def test_single_class_training_subset_is_a_clear_error():
    x = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="two classes"):
        fit_probe("single_label", x, np.zeros(10, int), x, np.zeros(10, int), 2, device="cpu")


def test_constant_feature_is_left_unscaled():
    x = np.ones((20, 3))
    x[:, 0] = np.arange(20)
    standardiser = Standardiser.fit(x)
    assert np.all(np.isfinite(standardiser.transform(x)))


def test_multi_label_probe_honours_mask_and_matches_per_label_sklearn():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 20))
    y = (x[:, :3] + rng.normal(size=(400, 3)) > 0.5).astype(np.float32)
    y_masked = y.copy()
    y_masked[rng.random(y.shape) < 0.2] = np.nan
    config = ProbeConfig(c_grid=(0.01, 0.1, 1.0), tol=1e-8, max_iter=5000)
    probe = fit_probe("multi_label", x[:250], y_masked[:250], x[250:], y_masked[250:], 3, config)
    proba = probe.predict_proba(x[250:])
    assert proba.shape == (150, 3)
    scaler = StandardScaler().fit(x[:250])
    for j in range(3):
        seen = ~np.isnan(y_masked[:250, j])
        reference = LogisticRegression(C=probe.chosen_c[j], tol=1e-8, max_iter=5000)
        reference.fit(scaler.transform(x[:250][seen]), y_masked[:250][seen, j].astype(int))
        np.testing.assert_allclose(proba[:, j], reference.predict_proba(scaler.transform(x[250:]))[:, 1], atol=1e-4)


def test_label_with_one_class_in_training_predicts_its_prevalence():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 5))
    y = np.zeros((60, 2), np.float32)
    y[:, 0] = x[:, 0] > 0
    probe = fit_probe("multi_label", x[:40], y[:40], x[40:], y[40:], 2, ProbeConfig(c_grid=(1.0,)))
    assert np.all(probe.predict_proba(x[40:])[:, 1] == 0.0)


def test_probe_fingerprint_names_the_solver(monkeypatch):
    # records of a different solver must not share keys with this one's
    import crsbench.probe.linear as probe_module

    before = ProbeConfig().fingerprint()
    monkeypatch.setattr(probe_module, "SOLVER", "another-solver")
    assert ProbeConfig().fingerprint() != before


@pytest.mark.parametrize("link", ["softmax", "sigmoid"])
def test_gradient_check_in_float32_is_within_1e_7_of_float64(link):
    # the check runs in the solver's precision; at the default tolerance (1e-4) that is float32, which must
    # leave the verdict "converged" untouched: measured here on a weakly regularised fit of 6,000 rows
    import torch

    import crsbench.probe.linear as probe_module

    x, y = _blobs(6000, 96, 4, seed=8, signal=0.3)
    probe = fit_probe("single_label", x[:5000], y[:5000], x[5000:], y[5000:], 4, ProbeConfig(c_grid=(10.0,)), device="cpu")
    z = probe.standardiser.transform(x[:5000], np.float32)
    n = len(z)
    if link == "softmax":
        targets, weights, l2, coef, intercept = np.eye(4)[y[:5000]], np.full(n, 1 / n), 1 / (10.0 * n), probe.coef, probe.intercept
    else:  # the same coefficients read as four independent sigmoid problems
        targets, weights = np.eye(4)[y[:5000]], np.full((n, 4), 1 / n)
        l2, coef, intercept = np.full(4, 1 / (10.0 * n)), probe.coef, probe.intercept
    in_64 = probe_module._checked_gradient(z, targets, weights, l2, coef, intercept, link, torch.float64)
    in_32 = probe_module._checked_gradient(z, targets, weights, l2, coef, intercept, link, torch.float32)
    assert abs(in_32 - in_64) <= 1e-7


@pytest.mark.parametrize("classes", [2, 3])
def test_the_validation_temperature_minimises_validation_log_loss(classes):
    """Checked against scikit-learn's log_loss on a dense grid of temperatures."""
    from sklearn.metrics import log_loss

    from crsbench.probe.linear import ProbeConfig, fit_probe

    rng = np.random.default_rng(classes)
    x = rng.normal(size=(500, 12))
    y = np.digitize(x[:, 0] + 0.7 * rng.normal(size=500), np.linspace(-0.6, 0.6, classes - 1))
    probe = fit_probe("single_label", x[:350], y[:350], x[350:], y[350:], classes, ProbeConfig())
    logits = probe.standardiser.transform(x[350:]) @ probe.coef + probe.intercept

    def loss(t):
        tempered = dataclasses.replace(probe, temperature=t)
        return log_loss(y[350:], tempered.predict_proba(x[350:], tempered=True), labels=range(classes))

    grid = np.exp(np.linspace(np.log(0.2), np.log(5), 400))
    best = grid[np.argmin([loss(t) for t in grid])]
    assert probe.temperature == pytest.approx(best, rel=0.02)
    assert loss(probe.temperature) <= loss(1.0) + 1e-12
    assert logits.shape[0] == 150
    # the untempered probabilities are unchanged by the temperature
    np.testing.assert_array_equal(probe.predict_proba(x[350:]), dataclasses.replace(probe, temperature=3.0).predict_proba(x[350:]))


@pytest.mark.parametrize("offset, spread", [(0.0, 1.0), (1e3, 1e-2)])
def test_the_folded_standardiser_gives_the_logits_of_standardising_first(offset, spread):
    """Logits come from the raw rows times coef / scale: equal to standardising first, even where a large
    offset and a small spread make the two terms of the fold cancel."""
    x, y = _blobs(400, 16, 3, seed=4)
    x = offset + spread * x
    probe = fit_probe("single_label", x[:300], y[:300], x[300:350], y[300:350], 3, ProbeConfig())
    rows = x[350:].astype(np.float32)  # embeddings arrive as float32
    standardised_first = probe.standardiser.transform(rows) @ probe.coef + probe.intercept
    scale = max(1.0, np.abs(standardised_first).max())
    np.testing.assert_allclose(probe.logits(rows), standardised_first, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(probe.predict_proba(rows).sum(1), 1.0)
