"""The chance-corrected axis formulas of PROTOCOL section 6, as pure batched numpy.

Every function broadcasts over any leading dimensions (bootstrap draws, seeds, encoders), so the
point estimate, the seed bootstrap and the case bootstrap all go through this one implementation.
AUROC 0.5 is chance: an encoder whose probe predicts the class prior sits at 0 on both ratio axes
(docs/crs.md, "Axes").
"""

from __future__ import annotations

import numpy as np

CHANCE_AUROC = 0.5


def _fraction_grid(fractions) -> np.ndarray:
    grid = np.asarray(fractions, dtype=float)
    if grid.ndim != 1 or grid.size < 2:
        raise ValueError(f"need at least two label fractions, got {grid.tolist()}")
    if np.any(np.diff(grid) <= 0) or grid[-1] != 1.0 or grid[0] <= 0:
        raise ValueError(f"label fractions must be ascending in (0, 1] and end at 1.0, got {grid.tolist()}")
    return grid


def _positive_delta(delta: float) -> float:
    if not (np.isfinite(delta) and delta > 0):
        raise ValueError(f"delta is {delta}: the chance margin must be finite and > 0")
    return float(delta)


def not_assessable(auroc_clean, delta: float) -> np.ndarray:
    """True where the clean AUROC at 100% labels is less than `delta` above chance.

    Such an encoder carries too little signal for a retained share of it to mean anything; the
    ratio axes score it 0 and every output flags it.
    """
    return np.asarray(np.asarray(auroc_clean, dtype=float) - CHANCE_AUROC < _positive_delta(delta))


def _above_chance_denominator(auroc_clean: np.ndarray, delta: float) -> np.ndarray:
    return np.maximum(auroc_clean - CHANCE_AUROC, delta)


def label_efficiency(auroc_by_fraction, fractions, delta: float) -> np.ndarray:
    """Chance-corrected label efficiency, shape auroc_by_fraction.shape[:-1], in [0, 1].

    Area under max(AUROC(f) - 0.5, 0) against log10(f) (trapezoids), divided by the width of the
    log-fraction range and by max(AUROC(100%) - 0.5, delta), clipped to [0, 1]; 0 where the encoder
    is not assessable. `auroc_by_fraction[..., F]` follows `fractions` (ascending, last = 1.0).
    """
    delta = _positive_delta(delta)
    grid = _fraction_grid(fractions)
    curve = np.asarray(auroc_by_fraction, dtype=float)
    if curve.shape[-1] != grid.size:
        raise ValueError(f"auroc_by_fraction has {curve.shape[-1]} fractions, the grid {grid.size}")
    log_f = np.log10(grid)
    lift = np.maximum(curve - CHANCE_AUROC, 0.0)
    area = (0.5 * (lift[..., 1:] + lift[..., :-1]) * np.diff(log_f)).sum(axis=-1)
    full = curve[..., -1]
    value = np.clip(area / (log_f[-1] - log_f[0]) / _above_chance_denominator(full, delta), 0.0, 1.0)
    return np.where(not_assessable(full, delta), 0.0, value)


def retention(auroc_condition, auroc_clean, delta: float) -> np.ndarray:
    """clip((AUROC_condition - 0.5) / max(AUROC_clean - 0.5, delta), 0, 1), elementwise (broadcast)."""
    delta = _positive_delta(delta)
    condition = np.asarray(auroc_condition, dtype=float)
    clean = np.asarray(auroc_clean, dtype=float)
    return np.clip((condition - CHANCE_AUROC) / _above_chance_denominator(clean, delta), 0.0, 1.0)


def robustness(auroc_pert, auroc_clean, delta: float, auroc_shift=None) -> np.ndarray:
    """Chance-corrected robustness, shape auroc_clean.shape, in [0, 1].

    Mean over the last axis of `auroc_pert[..., P]` (perturbations x severities) of the retention
    above; where `auroc_shift[...]` is given, averaged half and half with the retention on the shift
    set (P == 0: the shift retention alone). 0 where the encoder is not assessable.
    """
    clean = np.asarray(auroc_clean, dtype=float)
    pert = np.asarray(auroc_pert, dtype=float)
    parts = []
    if pert.shape[-1] > 0:
        parts.append(retention(pert, clean[..., None], delta).mean(axis=-1))
    if auroc_shift is not None:
        parts.append(retention(auroc_shift, clean, delta))
    if not parts:
        raise ValueError("robustness needs perturbed AUROCs (P > 0) or a shift AUROC")
    value = sum(parts) / len(parts)
    return np.where(not_assessable(clean, delta), 0.0, value)


def smallest_sufficient_fraction(auroc_by_fraction, fractions, margin: float) -> np.ndarray:
    """The smallest label fraction f with AUROC(f) >= AUROC(100%) - margin (the sample-size answer).

    Shape auroc_by_fraction.shape[:-1]; always defined, since f = 1.0 qualifies. A fraction
    qualifies on its own AUROC; the curve need not stay within the margin above it.
    """
    if not (np.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin is {margin}: must be finite and >= 0")
    grid = _fraction_grid(fractions)
    curve = np.asarray(auroc_by_fraction, dtype=float)
    if curve.shape[-1] != grid.size:
        raise ValueError(f"auroc_by_fraction has {curve.shape[-1]} fractions, the grid {grid.size}")
    within = curve >= curve[..., -1:] - margin
    within[..., -1] = True
    return grid[np.argmax(within, axis=-1)]


def brier_skill(brier, brier_prior) -> np.ndarray:
    """1 - Brier / Brier of the prior predictor on the same test set (0: no better than the prior)."""
    brier = np.asarray(brier, dtype=float)
    prior = np.asarray(brier_prior, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(prior > 0, 1.0 - brier / np.where(prior > 0, prior, 1.0), np.nan)


def prior_brier_single_label(train_prior, test_counts) -> np.ndarray:
    """Brier score of predicting `train_prior` for every test case, in the convention of metrics.brier:
    the sum over classes for more than two classes, the positive column's alone for two.

    For a test set with class shares q: sum_c q_c (1 - p_c)^2 + (1 - q_c) p_c^2 = sum_c (p_c - q_c)^2
    + sum_c q_c (1 - q_c); with two classes both columns contribute the same, so half of it. Shapes
    broadcast over leading dims, classes last.
    """
    p = np.asarray(train_prior, dtype=float)
    counts = np.asarray(test_counts, dtype=float)
    q = counts / counts.sum(axis=-1, keepdims=True)
    summed = (q * (1.0 - p) ** 2 + (1.0 - q) * p**2).sum(axis=-1)
    return summed / 2 if p.shape[-1] == 2 else summed


def prior_brier_multi_label(train_prior, test_positives, test_counts) -> np.ndarray:
    """Per-label binary Brier of predicting each label's training prevalence, averaged over labels."""
    p = np.asarray(train_prior, dtype=float)
    q = np.asarray(test_positives, dtype=float) / np.asarray(test_counts, dtype=float)
    return (q * (1.0 - p) ** 2 + (1.0 - q) * p**2).mean(axis=-1)
