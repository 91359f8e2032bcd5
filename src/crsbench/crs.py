"""The Clinical Reliability Score (PROTOCOL section 7): pure functions, axis values in, scores out.

For encoders with axis values s[e, a], a reference ref, and pre-registered constants (docs/crs.md):

    u[e, a]   = (s[e, a] - L_a) / m_a          fixed scale: anchor L_a (no skill), scale m_a (the
                                               smallest difference that matters clinically)
    balance   = -tau * log(sum_a w_a exp(-u[e, a] / tau))   soft minimum, w the axis weights (sum 1)
    worst     = min_a u[e, a]                               over axes with positive weight
    dominance = +1 if s[e] >= s[ref] on every axis and s[e] >= s[ref] + m_a on one,
                -1 if the reference is so against e, 0 otherwise
    CRS       = sum_k c_k (component_k(e) - component_k(ref))   c the component weights (sum 1)

Every term of CRS(e) depends on e's profile, the reference's and the constants only: adding,
removing or cloning other encoders cannot move it (P6), and the reference scores exactly 0 (P3).

The array functions broadcast over leading dimensions (bootstrap draws, sensitivity draws); the
DataFrame functions are the one-table case.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

COMPONENTS: tuple[str, ...] = ("dominance", "balance", "worst_axis")
DEFAULT_TAU = 1.0
DEFAULT_DELTA = 0.05
DOMINANCE_ROUNDING = 1e-9  # in units of m_a
DEFAULT_N_BOOT = 10_000
DEFAULT_LEVEL = 0.95
INTERVAL_METHODS: tuple[str, ...] = ("percentile", "expanded")
DEFAULT_INTERVAL = "expanded"

# Pre-registered anchors (no-skill level) and scales (smallest difference that matters), per axis.
# The rationale of each number is in docs/crs.md, "Anchors and scales".
DEFAULT_ANCHORS: dict[str, float] = {
    "discrimination": 0.5,  # AUROC of a probe that predicts the class prior
    "calibration": 0.8,  # 1 - calibration error at 0.20: probabilities off by 20 points are of no clinical use
    "label_efficiency": 0.0,  # chance-corrected: no retained signal
    "robustness": 0.0,  # chance-corrected: no retained signal
}
DEFAULT_SCALES: dict[str, float] = {
    "discrimination": 0.02,  # 0.02 AUROC: the usual smallest clinically meaningful difference
    "calibration": 0.02,  # two points of calibration error
    "label_efficiency": 0.05,  # 5% of the above-chance signal kept at fewer labels
    "robustness": 0.05,  # 5% of the above-chance signal kept under acquisition change
}


def _check_axis_numbers(values: Optional[dict[str, float]], what: str, positive: bool) -> Optional[dict[str, float]]:
    for name, value in (values or {}).items():
        if not math.isfinite(value) or (positive and value <= 0):
            raise ValueError(f"{what} for {name!r} is {value}: must be finite{' and > 0' if positive else ''}")
    return values


class CRSConfig(BaseModel):
    """Every setting of the CRS and its statistics, validated once, taken whole by every scoring function.

    anchors / scales: L_a and m_a by axis name; names left out keep DEFAULT_ANCHORS / DEFAULT_SCALES.
    delta: the chance margin below which an encoder is not assessable on the ratio axes.
    Weights are mappings by name; names left out keep weight 1; all are normalised. n_boot=0 skips
    the bootstrap, n_weight_draws=0 the weight sensitivity. `seed` drives both.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    anchors: Optional[dict[str, float]] = Field(None, description="anchor L_a (no-skill level) by axis name")
    scales: Optional[dict[str, float]] = Field(None, description="scale m_a (smallest difference that matters) by axis")
    delta: float = Field(DEFAULT_DELTA, gt=0, lt=0.5, allow_inf_nan=False, description="chance margin on AUROC")
    component_weights: Optional[dict[str, float]] = Field(None, description="dominance, balance, worst_axis weights")
    axis_weights: Optional[dict[str, float]] = Field(None, description="weights by axis name")
    tau: float = Field(DEFAULT_TAU, gt=0, allow_inf_nan=False, description="soft-minimum temperature of balance, in u")
    n_boot: int = Field(DEFAULT_N_BOOT, ge=0, description="bootstrap draws")
    seed: int = Field(0, description="seed of the bootstrap and of the sensitivity draws")
    level: float = Field(DEFAULT_LEVEL, gt=0, lt=1, description="interval level")
    interval: Literal["percentile", "expanded"] = Field(DEFAULT_INTERVAL, description="bootstrap interval method")
    n_weight_draws: int = Field(1000, ge=0, description="draws of the weight, anchor and scale sensitivity")
    weight_concentration: float = Field(1.0, gt=0, allow_inf_nan=False, description="Dirichlet concentration")
    anchor_shift: float = Field(1.0, ge=0, allow_inf_nan=False, description="sensitivity: anchors move by up to this many m_a")
    scale_factor: float = Field(2.0, ge=1, allow_inf_nan=False, description="sensitivity: scales drawn in [m_a/f, m_a*f]")
    resample: Literal["cases", "seeds"] = Field(
        "cases", description="bootstrap: paired test-case clusters and seeds, or seeds only (ignores test-set uncertainty)"
    )

    @field_validator("anchors")
    @classmethod
    def _anchors(cls, anchors: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        return _check_axis_numbers(anchors, "anchor", positive=False)

    @field_validator("scales")
    @classmethod
    def _scales(cls, scales: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        return _check_axis_numbers(scales, "scale", positive=True)

    @field_validator("component_weights")
    @classmethod
    def _components(cls, weights: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        component_weight_vector(weights)
        return weights

    @field_validator("axis_weights")
    @classmethod
    def _axes(cls, weights: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        for name, weight in (weights or {}).items():
            if not (math.isfinite(weight) and weight >= 0):
                raise ValueError(f"axis weight for {name!r} is {weight}: weights must be finite and >= 0")
        return weights

    def anchor_vector(self, axes: Sequence[str]) -> np.ndarray:
        return _per_axis(axes, DEFAULT_ANCHORS, self.anchors, "anchor")

    def scale_vector(self, axes: Sequence[str]) -> np.ndarray:
        return _per_axis(axes, DEFAULT_SCALES, self.scales, "scale")

    def constants(self, axes: Sequence[str]) -> dict[str, dict[str, float]]:
        """The pre-registered constants for these axes, by name, as every output prints them."""
        return {
            "anchors": dict(zip(axes, map(float, self.anchor_vector(axes)))),
            "scales": dict(zip(axes, map(float, self.scale_vector(axes)))),
        }

    def chain(self, axes: Sequence[str]) -> "ChainSettings":
        """The validated, normalised arrays the array core takes, for these axes (in this order)."""
        return ChainSettings(
            anchors=self.anchor_vector(axes),
            scales=self.scale_vector(axes),
            axis_weights=axis_weight_vector(list(axes), self.axis_weights),
            component_weights=component_weight_vector(self.component_weights),
            tau=self.tau,
        )


def _per_axis(axes: Sequence[str], defaults: Mapping[str, float], given: Mapping[str, float] | None, what: str) -> np.ndarray:
    values = {**defaults, **(given or {})}
    absent = [a for a in axes if a not in values]
    if absent:
        raise ValueError(f"no {what} for axis/axes {absent}: set `{what}s` in the suite's crs block")
    return np.array([values[a] for a in axes], dtype=float)


@dataclass(frozen=True)
class ChainSettings:
    """A CRSConfig resolved for one axis list: anchors, scales and axis weights (..., A), components (..., 3).

    Leading dimensions broadcast against the draws of the values, so the sensitivity analysis can
    give every draw its own constants.
    """

    anchors: np.ndarray
    scales: np.ndarray
    axis_weights: np.ndarray
    component_weights: np.ndarray
    tau: float = DEFAULT_TAU

    def __post_init__(self) -> None:
        if not (np.isfinite(self.tau) and self.tau > 0):
            raise ValueError(f"tau is {self.tau}: the soft-minimum temperature must be finite and > 0")
        if not np.all(np.isfinite(self.scales) & (np.asarray(self.scales) > 0)):
            raise ValueError(f"scales must be finite and > 0, got {np.asarray(self.scales).tolist()}")


DEFAULT_CONFIG = CRSConfig()


# --------------------------------------------------------------------------- validation


def validate_axis_table(table: pd.DataFrame) -> None:
    """Reject what would make scores meaningless: no encoders, no axes, duplicates, NaN or infinity."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"axis table must be a pandas DataFrame, got {type(table).__name__}")
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise ValueError("axis table is empty: need at least one encoder (row) and one axis (column)")
    if table.index.has_duplicates:
        raise ValueError(f"axis table has duplicate encoder(s): {sorted(set(table.index[table.index.duplicated()]))}")
    if table.columns.has_duplicates:
        raise ValueError(f"axis table has duplicate axis column(s): {list(table.columns[table.columns.duplicated()])}")
    for axis in table.columns:
        try:
            column = pd.to_numeric(table[axis]).to_numpy(dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"axis {axis!r} is not numeric: {exc}") from None
        bad = ~np.isfinite(column)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"axis {axis!r} of encoder {table.index[i]!r} is {column[i]}: axis values must be finite "
                "(drop the axis or the encoder, or fix the records)"
            )


def reference_index(encoders: Sequence[str], reference: str) -> int:
    encoders = list(encoders)
    if reference not in encoders:
        raise ValueError(f"reference encoder {reference!r} is not in the cohort {encoders}")
    return encoders.index(reference)


def _checked_weights(names: Sequence[str], weights: Mapping[str, float] | None, what: str) -> np.ndarray:
    """Weights in `names` order; names left out keep the default weight 1; normalised to sum 1."""
    values = dict.fromkeys(names, 1.0)
    if weights is not None:
        unknown = sorted(set(weights) - set(names))
        if unknown:
            raise ValueError(f"unknown {what} weight name(s) {unknown}; expected some of {list(names)}")
        for name, weight in weights.items():
            weight = float(weight)
            if not np.isfinite(weight) or weight < 0:
                raise ValueError(f"{what} weight for {name!r} is {weight}: weights must be finite and >= 0")
            values[name] = weight
    array = np.array([values[n] for n in names], dtype=float)
    if array.sum() <= 0:
        raise ValueError(f"{what} weights are all zero: at least one must be positive")
    return array / array.sum()


def component_weight_vector(weights: Mapping[str, float] | None = None) -> np.ndarray:
    """(dominance, balance, worst_axis) weights summing to 1; default equal.

    Balance is the only component strictly increasing in every axis, so P1 (Pareto) and P5 (size
    matters) need it to carry weight; dominance and worst axis alone are flat over most moves.
    """
    vector = _checked_weights(COMPONENTS, weights, "component")
    if vector[1] == 0:
        raise ValueError(
            "component weights give balance zero: the CRS would no longer rank a Pareto-dominating "
            "encoder strictly higher, nor a larger deficit strictly lower; give balance a positive weight"
        )
    return vector


def axis_weight_vector(axes: Sequence[str], weights: Mapping[str, float] | None = None) -> np.ndarray:
    """Axis weights in `axes` order summing to 1; default equal. A zero weight drops the axis."""
    return _checked_weights(list(axes), weights, "axis")


# --------------------------------------------------------------------------- array core (broadcasting)


def scaled_values(values: np.ndarray, anchors: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """u = (s - L) / m on (..., E, A); anchors and scales (..., A) broadcast over encoders."""
    anchors = np.asarray(anchors, dtype=float)[..., None, :]
    scales = np.asarray(scales, dtype=float)[..., None, :]
    return (np.asarray(values, dtype=float) - anchors) / scales


def _axis_mask(axis_weights: np.ndarray) -> np.ndarray:
    return np.asarray(axis_weights) > 0


def dominance_vs_reference(values: np.ndarray, ref: int, scales: np.ndarray, axis_mask: np.ndarray) -> np.ndarray:
    """(..., E) in {-1, 0, +1}: e against the reference with tolerance m_a, on the axes in the mask.

    +1: e >= ref on every axis and e >= ref + m_a on one; -1: the same with the roles swapped.
    Non-decreasing in every axis of e, which P1 and P4 need.
    """
    values = np.asarray(values, dtype=float)
    step = (values - values[..., ref : ref + 1, :]) / np.asarray(scales, dtype=float)[..., None, :]
    mask = np.broadcast_to(np.asarray(axis_mask)[..., None, :], step.shape)
    # a difference of exactly m_a counts ((0.82 - 0.80) / 0.02 is 0.999... in floating point)
    reach = 1.0 - DOMINANCE_ROUNDING
    ahead = ((step >= 0) | ~mask).all(axis=-1) & ((step >= reach) & mask).any(axis=-1)
    behind = ((step <= 0) | ~mask).all(axis=-1) & ((step <= -reach) & mask).any(axis=-1)
    return ahead.astype(float) - behind.astype(float)


def _weighted_logsumexp(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """log(sum_a w_a exp(x_a)) over the last axis, stable; axes with w_a == 0 are ignored."""
    weights = np.broadcast_to(weights, x.shape)
    positive = weights > 0
    peak = np.where(positive, x, -np.inf).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        total = np.where(positive, weights * np.exp(x - peak), 0.0).sum(axis=-1)
    return np.log(total) + peak[..., 0]


def soft_minimum(scaled: np.ndarray, axis_weights: np.ndarray, tau: float = DEFAULT_TAU) -> np.ndarray:
    """-tau * log(sum_a w_a exp(-u_a / tau)) over the last axis, shape (..., E).

    Between the minimum and the weighted mean of u, strictly increasing in every u_a with positive
    weight, and, for a fixed mean, larger for an even profile.
    """
    weights = np.asarray(axis_weights, dtype=float)[..., None, :]
    return -tau * _weighted_logsumexp(-scaled / tau, weights)


def worst_axis(scaled: np.ndarray, axis_mask: np.ndarray) -> np.ndarray:
    mask = np.broadcast_to(np.asarray(axis_mask)[..., None, :], scaled.shape)
    return np.where(mask, scaled, np.inf).min(axis=-1)


@dataclass(frozen=True)
class CRSBatch:
    """The CRS and its components, each (..., E) and relative to the reference (its entries are 0).

    crs = c_dom * dominance + c_bal * balance + c_worst * worst. `scaled` is u (..., E, A) on the
    fixed scale (absolute, not relative); `balance_own` and `worst_own` are the components before
    the reference's are subtracted.
    """

    crs: np.ndarray
    balance: np.ndarray
    worst: np.ndarray
    dominance: np.ndarray
    scaled: np.ndarray
    balance_own: np.ndarray
    worst_own: np.ndarray


def _minus_reference(component: np.ndarray, ref: int) -> np.ndarray:
    # x - x is exactly 0 for finite x, so the reference's entry is exactly 0; "+ 0.0" clears -0.0
    return component - component[..., ref : ref + 1] + 0.0


def crs_chain(values: np.ndarray, ref: int, chain: ChainSettings) -> CRSBatch:
    """The whole CRS on axis values (..., E, A) with resolved constants (ChainSettings)."""
    values = np.asarray(values, dtype=float)
    if values.ndim < 2:
        raise ValueError(f"values must have shape (..., encoders, axes), got {values.shape}")
    if not 0 <= ref < values.shape[-2]:
        raise ValueError(f"reference index {ref} outside 0..{values.shape[-2] - 1}")
    if np.shape(chain.anchors)[-1] != values.shape[-1]:
        raise ValueError(f"{values.shape[-1]} axes in the values, {np.shape(chain.anchors)[-1]} in the settings")
    mask = _axis_mask(chain.axis_weights)
    scaled = scaled_values(values, chain.anchors, chain.scales)
    balance_own = soft_minimum(scaled, chain.axis_weights, chain.tau)
    worst_own = worst_axis(scaled, mask)
    dominance = dominance_vs_reference(values, ref, chain.scales, mask)
    balance, worst = _minus_reference(balance_own, ref), _minus_reference(worst_own, ref)
    c = np.asarray(chain.component_weights, dtype=float)[..., None, :]
    crs = c[..., 0] * dominance + c[..., 1] * balance + c[..., 2] * worst
    crs = _minus_reference(crs, ref)  # exact 0 for the reference even when weights broadcast oddly
    return CRSBatch(crs, balance, worst, dominance, scaled, balance_own, worst_own)


def crs_batch(axis_values: np.ndarray, ref: int, config: "CRSConfig", axes: Sequence[str]) -> CRSBatch:
    """Section 7 on axis values (..., E, A), axes in the order `axes`, constants from `config`.

    The reference's CRS is exactly 0; every other encoder's depends on its own row, the
    reference's row and the constants only.
    """
    return crs_chain(axis_values, ref, config.chain(axes))


# --------------------------------------------------------------------------- DataFrame level


def crs_table(table: pd.DataFrame, reference: str, config: "CRSConfig" = None) -> CRSBatch:
    """`crs_batch` on a table (one row per encoder, one column per axis), values (E, A)."""
    validate_axis_table(table)
    config = DEFAULT_CONFIG if config is None else config
    return crs_batch(table.to_numpy(dtype=float), reference_index(table.index, reference), config, list(table.columns))


def crs_scores(table: pd.DataFrame, reference: str, config: "CRSConfig" = None) -> pd.DataFrame:
    """Scores per encoder: dominance, balance, worst_axis (each minus the reference's) and crs."""
    result = crs_table(table, reference, config)
    return pd.DataFrame(
        {"dominance": result.dominance, "balance": result.balance, "worst_axis": result.worst, "crs": result.crs},
        index=table.index,
    )


def scaled_profile(table: pd.DataFrame, config: "CRSConfig" = None) -> pd.DataFrame:
    """u = (s - L_a) / m_a per encoder and axis (independent of the reference)."""
    validate_axis_table(table)
    config = DEFAULT_CONFIG if config is None else config
    axes = list(table.columns)
    u = scaled_values(table.to_numpy(dtype=float), config.anchor_vector(axes), config.scale_vector(axes))
    return pd.DataFrame(u, index=table.index, columns=table.columns)
