"""Linear probes on frozen embeddings: standardise on the training subset, L2 logistic regression,
regularisation chosen on validation log-loss (a proper scoring rule, so calibration is not traded
for AUROC). Multinomial for single-label and ordinal tasks, one sigmoid per label for multi-label.

`fit_probe` is a pure function of arrays, so fits can be batched or moved to another executor.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

import numpy as np

from crsbench.datasets.base import sha256_of

DEFAULT_C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)


@dataclass(frozen=True)
class ProbeConfig:
    c_grid: tuple[float, ...] = DEFAULT_C_GRID
    max_iter: int = 1000
    tol: float = 1e-4

    def fingerprint(self) -> str:
        return sha256_of("probe", json.dumps([list(self.c_grid), self.max_iter, self.tol]))[:16]


@dataclass
class Standardiser:
    """Standardises on the training subset, then projects onto the span of its rows.

    With an L2 penalty and an unpenalised intercept the optimal weights lie in the span of the
    training rows (representer theorem), so fitting in that basis gives the same probabilities
    exactly while the problem shrinks from d to at most n dimensions: at 1% labels, from 1280 to ~10.
    """

    mean: np.ndarray
    scale: np.ndarray
    basis: np.ndarray | None = None  # [d, r] orthonormal, None when projecting would not shrink it

    @classmethod
    def fit(cls, x: np.ndarray) -> "Standardiser":
        x = x.astype(np.float64)
        mean = x.mean(axis=0)
        scale = x.std(axis=0)
        # a feature constant on the training subset carries no signal; leave it unscaled
        scale = np.where(scale > 1e-8, scale, 1.0)
        z = (x - mean) / scale
        basis = None
        if len(z) < z.shape[1]:
            _, singular, vt = np.linalg.svd(z, full_matrices=False)
            rank = int(np.sum(singular > singular[0] * 1e-10)) if len(singular) and singular[0] > 0 else 0
            basis = vt[: max(rank, 1)].T
        return cls(mean, scale, basis)

    def transform(self, x: np.ndarray) -> np.ndarray:
        z = (x.astype(np.float64) - self.mean) / self.scale
        return z if self.basis is None else z @ self.basis


@dataclass
class FittedProbe:
    task_type: str
    n_classes: int
    standardiser: Standardiser
    models: list  # one multinomial model, or one binary model per label
    chosen_c: list[float]
    val_nll: float
    class_columns: list = field(default_factory=list)

    @property
    def summary_c(self) -> float:
        return float(np.nanmedian(self.chosen_c)) if np.isfinite(self.chosen_c).any() else float("nan")

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        z = self.standardiser.transform(x)
        if self.task_type == "multi_label":
            return np.column_stack([_positive_proba(m, z) for m in self.models])
        return _full_proba(self.models[0], z, self.n_classes)


def _positive_proba(model, z: np.ndarray) -> np.ndarray:
    if isinstance(model, float):  # a label with a single class in training: its prevalence
        return np.full(len(z), model)
    return model.predict_proba(z)[:, 1]


def _full_proba(model, z: np.ndarray, n_classes: int) -> np.ndarray:
    proba = np.zeros((len(z), n_classes))
    proba[:, model.classes_.astype(int)] = model.predict_proba(z)
    return proba


def _log_loss(y: np.ndarray, proba: np.ndarray) -> float:
    p = np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def _binary_log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def _fit_path(z: np.ndarray, y: np.ndarray, z_val: np.ndarray, score, config: ProbeConfig):
    """Fit along the C grid from strong to weak regularisation, warm-starting each fit."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    best = (np.inf, None, None)
    model = LogisticRegression(C=config.c_grid[0], max_iter=config.max_iter, tol=config.tol, warm_start=True)
    for c in sorted(config.c_grid):
        model.set_params(C=c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(z, y)
        loss = score(model, z_val)
        if loss < best[0] - 1e-12:
            best = (loss, c, _frozen_copy(model))
    return best


def _frozen_copy(model):
    import copy

    return copy.deepcopy(model)


def fit_probe(
    task_type: str,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    n_classes: int,
    config: ProbeConfig = ProbeConfig(),
) -> FittedProbe:
    standardiser = Standardiser.fit(x_train)
    z, z_val = standardiser.transform(x_train), standardiser.transform(x_val)
    if task_type == "multi_label":
        return _fit_multi_label(z, y_train, z_val, y_val, n_classes, standardiser, config)
    y_train = y_train.astype(int)
    y_val = y_val.astype(int)
    loss, c, model = _fit_path(
        z, y_train, z_val, lambda m, zv: _log_loss(y_val, _full_proba(m, zv, n_classes)), config
    )
    return FittedProbe(task_type, n_classes, standardiser, [model], [c], loss)


def _fit_multi_label(z, y, z_val, y_val, n_classes, standardiser, config) -> FittedProbe:
    models, chosen, losses = [], [], []
    for j in range(n_classes):
        seen, seen_val = ~np.isnan(y[:, j]), ~np.isnan(y_val[:, j])
        yj, yj_val = y[seen, j].astype(int), y_val[seen_val, j].astype(int)
        if len(np.unique(yj)) < 2:
            prevalence = float(yj.mean()) if len(yj) else 0.5
            models.append(prevalence)
            chosen.append(float("nan"))
            continue
        loss, c, model = _fit_path(
            z[seen], yj, z_val[seen_val], lambda m, zv, yv=yj_val: _binary_log_loss(yv, m.predict_proba(zv)[:, 1]), config
        )
        models.append(model)
        chosen.append(c)
        losses.append(loss)
    return FittedProbe("multi_label", n_classes, standardiser, models, chosen, float(np.mean(losses)) if losses else float("nan"))
