"""The axis formulas of PROTOCOL section 6, as pure batched numpy.

Every function broadcasts over any leading dimensions (bootstrap draws, seeds, encoders), so the
point estimate, the seed bootstrap and the case bootstrap all go through this one implementation.
AUROC 0.5 is chance: an encoder whose probe predicts the class prior sits at the anchor of every
AUROC-based axis, and a Brier skill of 0 is the prior predictor's (docs/crs.md, "Axes").
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

    A flag shown beside the axes: such an encoder carries too little signal for its retentions to
    mean anything. It changes no score (the score is continuous there).
    """
    return np.asarray(np.asarray(auroc_clean, dtype=float) - CHANCE_AUROC < _positive_delta(delta))


def _above_chance_denominator(auroc_clean: np.ndarray, delta: float) -> np.ndarray:
    return np.maximum(auroc_clean - CHANCE_AUROC, delta)


def label_efficiency(auroc_by_fraction, fractions) -> np.ndarray:
    """Label efficiency: the clean AUROC averaged over the label-fraction grid on a log scale.

    The trapezoid area under AUROC(f) against log10(f), divided by the log width, shape
    auroc_by_fraction.shape[:-1]; `auroc_by_fraction[..., F]` follows `fractions` (ascending,
    last = 1.0). In AUROC units, so it shares discrimination's anchor (0.5, chance) and span (0.5 to
    perfect). No ratio to the encoder's own AUROC (a flat curve at 0.55 is worth 0.55, not "all of
    its signal kept") and no clipping, so it is linear in the AUROCs: continuous, and unbiased where
    they are (docs/crs.md, "Axes").
    """
    grid = _fraction_grid(fractions)
    curve = np.asarray(auroc_by_fraction, dtype=float)
    if curve.shape[-1] != grid.size:
        raise ValueError(f"auroc_by_fraction has {curve.shape[-1]} fractions, the grid {grid.size}")
    log_f = np.log10(grid)
    area = (0.5 * (curve[..., 1:] + curve[..., :-1]) * np.diff(log_f)).sum(axis=-1)
    return area / (log_f[-1] - log_f[0])


def retention(auroc_condition, auroc_clean, delta: float) -> np.ndarray:
    """clip((AUROC_condition - 0.5) / max(AUROC_clean - 0.5, delta), 0, 1), elementwise (broadcast).

    The share of the above-chance signal kept under a condition: shown beside robustness, not scored.
    """
    delta = _positive_delta(delta)
    condition = np.asarray(auroc_condition, dtype=float)
    clean = np.asarray(auroc_clean, dtype=float)
    return np.clip((condition - CHANCE_AUROC) / _above_chance_denominator(clean, delta), 0.0, 1.0)


def robustness(auroc_pert, auroc_shift=None) -> np.ndarray:
    """Robustness: the AUROC the encoder keeps under acquisition change, in AUROC units.

    Mean over the last axis of `auroc_pert[..., P]` (perturbations x severities); where
    `auroc_shift[...]` is given, averaged half and half with the AUROC on the shift set (P == 0: the
    shift AUROC alone). Linear in the AUROCs like label_efficiency, for the same reasons.
    """
    pert = np.asarray(auroc_pert, dtype=float)
    parts = []
    if pert.shape[-1] > 0:
        parts.append(pert.mean(axis=-1))
    if auroc_shift is not None:
        parts.append(np.asarray(auroc_shift, dtype=float))
    if not parts:
        raise ValueError("robustness needs perturbed AUROCs (P > 0) or a shift AUROC")
    return sum(parts) / len(parts)


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
    """Brier score of predicting `train_prior` for every test case, in the convention of metrics.classification.brier:
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
