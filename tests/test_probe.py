import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.preprocessing import StandardScaler

from crsbench.probe import ProbeConfig, Standardiser, fit_probe


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


def test_projection_onto_training_rows_is_exact():
    x, y = _blobs(30, 120, 2, seed=1)
    standardiser = Standardiser.fit(x)
    assert standardiser.basis is not None and standardiser.basis.shape[1] <= 30
    z_full = (x - standardiser.mean) / standardiser.scale
    z_projected = standardiser.transform(x)
    # inner products between training rows survive the projection: the loss cannot tell them apart
    np.testing.assert_allclose(z_projected @ z_projected.T, z_full @ z_full.T, atol=1e-8)


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
