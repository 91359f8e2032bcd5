"""The published CRS components on skills u[..., E, A] (PROTOCOL section 7, item 3 and 4): pure numpy.

Every function broadcasts over leading dimensions (bootstrap draws), so the point and every draw go
through one implementation. Skills are in skill units (0 = no value, 1 = perfect, definition.py);
the components are reported in skill points (100 per skill unit), like the mean-of-skills CRS.

- Pareto relations with a tolerance `tol` per axis (skill units): e dominates f when it is nowhere
  worse by more than tol and somewhere better by more than tol (epsilon-dominance). Within the
  tolerance on every axis, or better on one axis and worse on another, the two are incomparable.
  The two dominance directions exclude each other, so the three relations partition the pairs.
- The Pareto front: the encoders no other encoder dominates.
- Profile balance: a weighted soft minimum of the skills, in points,
      balance = -100 tau log sum_a w_a exp(-u_a / tau),
  which lies between the worst axis (tau -> 0) and the weighted mean (tau -> infinity). Unlike a
  dispersion it rises with every axis, and an encoder at chance everywhere has balance 0, not a
  perfect one.
- Worst axis: 100 min_a u_a over the axes with positive weight, and which axis it is.
- The composite (`components_crs`): reference-relative, in points,
      CRS = c_D * dominance + c_B * (balance - balance_ref) + c_W * (worst - worst_ref),
      dominance = 100 sum_a w_a tol tanh((u_a - u_ref,a) / tol),
  dominance against the reference only (against the cohort it would depend on who else is scored),
  a smooth saturating count of the axes on which e clears the reference by about the tolerance, each
  worth tol (so |dominance| <= 100 tol). No step at the tolerance: d/dd_a = 100 w_a sech^2(d_a/tol),
  at most 100 w_a. Every term is 100-Lipschitz in e's profile (sup norm, skill units), so the
  composite moves by at most 100 (c_D + c_B + c_W) = 100 points per skill unit of the largest axis
  move (LIPSCHITZ_POINTS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SKILL_POINTS = 100.0
DEFAULT_TOLERANCE = 0.02  # skill units: 0.01 AUROC, 0.02 Brier skill
DEFAULT_BALANCE_TAU = 0.15  # skill units: the soft minimum's temperature (docs/crs.md: why)
COMPONENT_NAMES: tuple[str, ...] = ("dominance", "balance", "worst")
DEFAULT_COMPONENT_WEIGHTS: dict[str, float] = {"dominance": 1 / 3, "balance": 1 / 3, "worst": 1 / 3}
LIPSCHITZ_POINTS = SKILL_POINTS  # per skill unit of the largest move of e's profile, weights summing to 1

DOMINATES, INCOMPARABLE, DOMINATED = 1, 0, -1
RELATION_NAMES = {DOMINATES: "dominates", INCOMPARABLE: "incomparable", DOMINATED: "is dominated"}


def _weights(weights: np.ndarray | None, n_axes: int) -> np.ndarray:
    if weights is None:
        return np.full(n_axes, 1.0 / n_axes)
    return np.asarray(weights, dtype=float)


def relation(u_e: np.ndarray, u_f: np.ndarray, tol: float, weights: np.ndarray | None = None) -> np.ndarray:
    """+1 where e dominates f, -1 where f dominates e, 0 where incomparable; over the last axis (axes
    with weight 0 ignored). Broadcasts: (..., A) against (..., A) gives (...)."""
    d = np.asarray(u_e, dtype=float) - np.asarray(u_f, dtype=float)
    counted = _weights(weights, d.shape[-1]) > 0
    d = np.where(counted, d, 0.0)
    dominates = (d >= -tol).all(axis=-1) & (d > tol).any(axis=-1)
    dominated = (d <= tol).all(axis=-1) & (d < -tol).any(axis=-1)
    return dominates.astype(np.int8) - dominated.astype(np.int8)


def relation_matrix(u: np.ndarray, tol: float, weights: np.ndarray | None = None) -> np.ndarray:
    """(..., E, E): relation of row encoder e to column encoder f (0 on the diagonal)."""
    u = np.asarray(u, dtype=float)
    return relation(u[..., :, None, :], u[..., None, :, :], tol, weights)


def pareto_front(u: np.ndarray, tol: float, weights: np.ndarray | None = None) -> np.ndarray:
    """(..., E) bool: on the front, i.e. dominated by no other encoder of the cohort."""
    return ~(relation_matrix(u, tol, weights) == DOMINATED).any(axis=-1)


def balance(u: np.ndarray, tau: float = DEFAULT_BALANCE_TAU, weights: np.ndarray | None = None) -> np.ndarray:
    """(..., E): the weighted soft minimum of the skills in points, between the worst axis and the mean."""
    u = np.asarray(u, dtype=float)
    w = _weights(weights, u.shape[-1])[..., None, :]
    counted = w > 0
    low = np.where(counted, u, np.inf).min(axis=-1, keepdims=True)  # shift for a stable log-sum-exp
    terms = np.where(counted, w * np.exp(-(np.where(counted, u, low) - low) / tau), 0.0)
    return SKILL_POINTS * (low[..., 0] - tau * np.log(terms.sum(axis=-1)))


def worst_axis(u: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """((..., E) the lowest skill in points, (..., E) its axis index), over axes with positive weight
    (ties: the first axis)."""
    u = np.asarray(u, dtype=float)
    counted = _weights(weights, u.shape[-1])[..., None, :] > 0
    masked = np.where(counted, u, np.inf)
    index = masked.argmin(axis=-1)
    return SKILL_POINTS * np.take_along_axis(masked, index[..., None], axis=-1)[..., 0], index


def dominance(u: np.ndarray, ref: int, tol: float = DEFAULT_TOLERANCE, weights: np.ndarray | None = None) -> np.ndarray:
    """(..., E): 100 sum_a w_a tol tanh((u_a - u_ref,a) / tol), the smooth dominance over the reference
    (exactly 0 for the reference: tanh(0) = 0)."""
    u = np.asarray(u, dtype=float)
    w = _weights(weights, u.shape[-1])[..., None, :]
    d = u - u[..., ref : ref + 1, :]
    return SKILL_POINTS * np.where(w > 0, w * tol * np.tanh(d / tol), 0.0).sum(axis=-1)


@dataclass(frozen=True)
class Components:
    """The three components and the composite, each (..., E), in points; worst_index (..., E)."""

    crs: np.ndarray
    dominance: np.ndarray
    balance: np.ndarray
    worst: np.ndarray
    worst_index: np.ndarray


def component_weight_vector(weights: dict[str, float] | None) -> np.ndarray:
    """Component weights in COMPONENT_NAMES order, normalised; names left out keep the default."""
    values = {**DEFAULT_COMPONENT_WEIGHTS, **(weights or {})}
    unknown = sorted(set(values) - set(COMPONENT_NAMES))
    if unknown:
        raise ValueError(f"unknown component weight name(s) {unknown}; expected some of {list(COMPONENT_NAMES)}")
    array = np.array([float(values[n]) for n in COMPONENT_NAMES])
    if not np.all(np.isfinite(array) & (array >= 0)) or array.sum() <= 0:
        raise ValueError(f"component weights must be finite, >= 0 and not all 0, got {dict(zip(COMPONENT_NAMES, array))}")
    return array / array.sum()


def components(u: np.ndarray, ref: int, *, weights: np.ndarray | None = None,
               component_weights: Sequence[float] | np.ndarray | None = None,
               tol: float = DEFAULT_TOLERANCE, tau: float = DEFAULT_BALANCE_TAU) -> Components:
    """The components of skills u (..., E, A) and the reference-relative composite (the reference's is
    exactly 0, sign cleared). `weights` (..., A) the axis weights (sum 1); `component_weights` the
    (dominance, balance, worst) weights (sum 1)."""
    u = np.asarray(u, dtype=float)
    c = component_weight_vector(None) if component_weights is None else np.asarray(component_weights, dtype=float)
    dom = dominance(u, ref, tol, weights)
    bal = balance(u, tau, weights)
    worst, index = worst_axis(u, weights)

    def relative(x):  # x - x is exactly 0 for finite x
        return x - x[..., ref : ref + 1]

    # every term is exactly 0 for the reference; "+ 0.0" clears the sign of zero
    crs = c[..., 0:1] * dom + c[..., 1:2] * relative(bal) + c[..., 2:3] * relative(worst) + 0.0
    return Components(crs, dom, bal, worst, index)
