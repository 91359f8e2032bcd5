"""The Clinical Reliability Score: pure functions, axis table in, scores table out.

For a cohort of encoders with axis scores s[e, a] and a reference encoder ref (docs/crs.md):

    r[e, a]   = s[e, a] - s[ref, a]                             reference-relative profile
    spread[a] = max(mean_{e != ref} |r[e, a]|, noise_floor * SE[a])  mean distance from the reference,
                                                                  floored at the seed standard error
    u[e, a]   = r[e, a] / spread[a]             (0 where spread[a] == 0: every encoder ties the reference)
    dominance = (#encoders e Pareto-dominates - #encoders that dominate e) / (N - 1)
    balance   = -tau * log(sum_a w_a exp(-u[e, a] / tau))       w the axis weights, summing to 1
    worst     = min_a u[e, a]                                   over axes with positive weight
    CRS       = c_dom * dominance + c_bal * balance + c_worst * worst     c summing to 1

The spread is measured from the reference, not from the cohort's centre: that is what makes raising
one encoder's axis never lower its own scaled value u (docs/crs.md, "Why this normalisation").

The array functions take a leading batch axis (B draws) so the bootstrap and the weight sensitivity
reuse exactly this code; the DataFrame functions are the B = 1 case.
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
DEFAULT_NOISE_FLOOR = 1.0
DEFAULT_N_BOOT = 10_000
DEFAULT_LEVEL = 0.95
INTERVAL_METHODS: tuple[str, ...] = ("percentile", "expanded")
DEFAULT_INTERVAL = "expanded"


class CRSConfig(BaseModel):
    """Every setting of the CRS and its statistics, validated once, taken whole by every scoring function.

    Weights are mappings by name; names left out keep weight 1; all are normalised. n_boot=0 skips
    the bootstrap, n_weight_draws=0 the weight sensitivity. `seed` drives both.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    component_weights: Optional[dict[str, float]] = Field(None, description="dominance, balance, worst_axis weights")
    axis_weights: Optional[dict[str, float]] = Field(None, description="weights by axis name")
    tau: float = Field(DEFAULT_TAU, gt=0, allow_inf_nan=False, description="soft-minimum temperature of balance")
    noise_floor: float = Field(DEFAULT_NOISE_FLOOR, ge=0, allow_inf_nan=False, description="spread floor in seed SEs")
    n_boot: int = Field(DEFAULT_N_BOOT, ge=0, description="paired-seed bootstrap draws")
    seed: int = Field(0, description="seed of the bootstrap and of the weight draws")
    level: float = Field(DEFAULT_LEVEL, gt=0, lt=1, description="interval level")
    interval: Literal["percentile", "expanded"] = Field(DEFAULT_INTERVAL, description="bootstrap interval method")
    n_weight_draws: int = Field(1000, ge=0, description="Dirichlet weight draws of the sensitivity analysis")
    weight_concentration: float = Field(1.0, gt=0, allow_inf_nan=False, description="Dirichlet concentration")
    resample_cases: bool = Field(False, description="hierarchical case resampling (unavailable: raises)")

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

    def chain(self, axes: Sequence[str]) -> "ChainSettings":
        """The validated, normalised arrays the array core takes, for these axes (in this order)."""
        return ChainSettings(
            axis_weights=axis_weight_vector(list(axes), self.axis_weights),
            component_weights=component_weight_vector(self.component_weights),
            tau=self.tau,
            noise_floor=self.noise_floor,
        )


@dataclass(frozen=True)
class ChainSettings:
    """A CRSConfig resolved for one axis list: weight vectors (A,) and (3,), or batched (B, A), (B, 3)."""

    axis_weights: np.ndarray
    component_weights: np.ndarray
    tau: float = DEFAULT_TAU
    noise_floor: float = DEFAULT_NOISE_FLOOR

    def __post_init__(self) -> None:
        if not (np.isfinite(self.tau) and self.tau > 0):
            raise ValueError(f"tau is {self.tau}: the soft-minimum temperature must be finite and > 0")
        if not (np.isfinite(self.noise_floor) and self.noise_floor >= 0):
            raise ValueError(f"noise_floor is {self.noise_floor}: must be finite and >= 0")


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

    Worst-axis alone cannot separate an encoder from one it strictly dominates when both share the
    same worst axis value, so Pareto-consistency needs dominance or balance to carry weight.
    """
    vector = _checked_weights(COMPONENTS, weights, "component")
    if vector[0] == 0 and vector[1] == 0:
        raise ValueError(
            "component weights give dominance and balance both zero: the CRS would no longer rank a "
            "Pareto-dominating encoder strictly higher; give one of them a positive weight"
        )
    return vector


def axis_weight_vector(axes: Sequence[str], weights: Mapping[str, float] | None = None) -> np.ndarray:
    """Axis weights in `axes` order summing to 1; default equal. A zero weight drops the axis."""
    return _checked_weights(list(axes), weights, "axis")


# --------------------------------------------------------------------------- array core (batch first)


def relative_profile_array(values: np.ndarray, ref: int) -> np.ndarray:
    """r = s - s[ref] on (B, E, A); the reference's row is exactly zero (x - x == 0 for finite x)."""
    return values - values[:, ref : ref + 1, :]


def axis_spread_array(
    relative: np.ndarray,
    ref: int,
    noise_se: np.ndarray | None = None,
    noise_floor: float = DEFAULT_NOISE_FLOOR,
) -> np.ndarray:
    """spread (B, A) = max(mean |r| over the non-reference encoders, noise_floor * SE).

    Both terms are positively homogeneous in the axis scale and ignore shifts; the mean distance
    grows by only |dr| / (N - 1) when one encoder's |r| grows by |dr|, so that encoder's own
    u = r / spread still rises (docs/crs.md, "Why this normalisation").
    """
    distance = np.abs(np.delete(relative, ref, axis=1))  # (B, E-1, A)
    spread = np.zeros((relative.shape[0], relative.shape[2]))
    if distance.shape[1] > 0:
        # summing in sorted order makes the result bitwise independent of the encoders' order
        spread = np.sort(distance, axis=1).mean(axis=1)
    if noise_se is not None:
        spread = np.maximum(spread, noise_floor * np.broadcast_to(noise_se, spread.shape))
    return spread


def scaled_profile_array(relative: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """u = r / spread; an axis on which every encoder ties the reference (spread 0) scales to 0."""
    safe = np.where(spread > 0, spread, 1.0)[:, None, :]
    return np.where(spread[:, None, :] > 0, relative / safe, 0.0)


def _axis_mask(axis_weights: np.ndarray, batch: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(axis_weights) > 0, (batch, np.shape(axis_weights)[-1]))


def dominance_matrix_array(values: np.ndarray, axis_mask: np.ndarray) -> np.ndarray:
    """D[b, i, j]: encoder i Pareto-dominates j on the masked axes (>= on all, > on at least one)."""
    left, right = values[:, :, None, :], values[:, None, :, :]
    mask = axis_mask[:, None, None, :]
    at_least = ((left >= right) | ~mask).all(axis=-1)
    better = ((left > right) & mask).any(axis=-1)
    return at_least & better


def dominance_array(values: np.ndarray, axis_mask: np.ndarray) -> np.ndarray:
    """(share of the others e dominates) - (share of the others that dominate e), shape (B, E)."""
    n = values.shape[1]
    if n < 2:
        return np.zeros(values.shape[:2])
    dominates = dominance_matrix_array(values, axis_mask)
    return (dominates.sum(axis=2) - dominates.sum(axis=1)) / (n - 1)


def _weighted_logsumexp(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """log(sum_a w_a exp(x_a)) over the last axis, stable; axes with w_a == 0 are ignored."""
    positive = weights > 0
    peak = np.where(positive, x, -np.inf).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        total = np.where(positive, weights * np.exp(x - peak), 0.0).sum(axis=-1)
    return np.log(total) + peak[..., 0]


def balance_array(scaled: np.ndarray, axis_weights: np.ndarray, tau: float = DEFAULT_TAU) -> np.ndarray:
    """Soft minimum -tau * log(sum_a w_a exp(-u_a / tau)), shape (B, E).

    It lies between the weighted mean and the minimum of u, is strictly increasing in every u_a with
    positive weight, and (for a fixed mean) is larger for an even profile. Subtracting the same
    expression at u = 0 makes it exactly 0 for the reference even if the weights sum to 1 - ulp.
    """
    weights = np.broadcast_to(np.asarray(axis_weights, dtype=float)[..., None, :], scaled.shape)
    at_zero = _weighted_logsumexp(np.zeros_like(scaled), weights)
    # "+ 0.0" turns the reference's -0.0 into 0.0 for tidy tables
    return -tau * (_weighted_logsumexp(-scaled / tau, weights) - at_zero) + 0.0


def worst_axis_array(scaled: np.ndarray, axis_mask: np.ndarray) -> np.ndarray:
    return np.where(axis_mask[:, None, :], scaled, np.inf).min(axis=-1)


@dataclass(frozen=True)
class CRSArrays:
    """Every intermediate of the chain, batch first: (B, E) scores, (B, E, A) profiles, (B, A) spread."""

    crs: np.ndarray
    dominance: np.ndarray
    balance: np.ndarray
    worst_axis: np.ndarray
    relative: np.ndarray
    scaled: np.ndarray
    spread: np.ndarray


def crs_array(values: np.ndarray, ref: int, chain: ChainSettings, noise_se: np.ndarray | None = None) -> CRSArrays:
    """The whole CRS chain on axis values (B, E, A).

    `chain` holds the normalised weights ((A,) or (B, A) axis weights, (3,) or (B, 3) component
    weights), tau and the noise floor; `noise_se` is (A,) or (B, A) or None (no noise floor).
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 3:
        raise ValueError(f"values must have shape (draws, encoders, axes), got {values.shape}")
    if not 0 <= ref < values.shape[1]:
        raise ValueError(f"reference index {ref} outside 0..{values.shape[1] - 1}")
    batch = values.shape[0]
    mask = _axis_mask(chain.axis_weights, batch)
    relative = relative_profile_array(values, ref)
    spread = axis_spread_array(relative, ref, noise_se, chain.noise_floor)
    scaled = scaled_profile_array(relative, spread)
    dominance = dominance_array(values, mask)
    balance = balance_array(scaled, np.broadcast_to(chain.axis_weights, (batch, values.shape[2])), chain.tau)
    worst = worst_axis_array(scaled, mask)
    c = np.broadcast_to(np.asarray(chain.component_weights, dtype=float), (batch, 3))
    crs = c[:, 0:1] * dominance + c[:, 1:2] * balance + c[:, 2:3] * worst
    return CRSArrays(crs, dominance, balance, worst, relative, scaled, spread)


# --------------------------------------------------------------------------- DataFrame level


def _noise_vector(axes: Sequence[str], noise_se: Mapping[str, float] | pd.Series | None) -> np.ndarray | None:
    if noise_se is None:
        return None
    series = pd.Series(noise_se, dtype=float)
    absent = [a for a in axes if a not in series.index]
    if absent:
        raise ValueError(f"noise_se lacks axis/axes {absent}")
    vector = series.reindex(list(axes)).to_numpy(dtype=float)
    if not np.all(np.isfinite(vector) & (vector >= 0)):
        raise ValueError(f"noise_se must be finite and >= 0, got {dict(zip(axes, vector))}")
    return vector


def _as_batch(table: pd.DataFrame) -> np.ndarray:
    return table.to_numpy(dtype=float)[None, :, :]


def relative_profile(table: pd.DataFrame, reference: str) -> pd.DataFrame:
    """r = s - s[reference], per encoder and axis."""
    validate_axis_table(table)
    ref = reference_index(table.index, reference)
    return pd.DataFrame(relative_profile_array(_as_batch(table), ref)[0], index=table.index, columns=table.columns)


def crs_scores(
    table: pd.DataFrame,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    noise_se: Mapping[str, float] | pd.Series | None = None,
) -> pd.DataFrame:
    """Scores per encoder: dominance, balance, worst_axis, crs (index as in `table`).

    `table` has one row per encoder and one column per axis (larger is better). `noise_se` is the
    per-axis standard error of an encoder's axis mean (axes.seed_standard_error); None means no
    noise floor. The weights, tau and noise floor come from `config`.
    """
    result = crs_arrays(table, reference, config, noise_se=noise_se)
    return pd.DataFrame(
        {
            "dominance": result.dominance[0],
            "balance": result.balance[0],
            "worst_axis": result.worst_axis[0],
            "crs": result.crs[0],
        },
        index=table.index,
    )


def crs_arrays(
    table: pd.DataFrame,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    noise_se: Mapping[str, float] | pd.Series | None = None,
) -> CRSArrays:
    """`crs_scores` with every intermediate kept (B = 1), for reports that show r, u and spread."""
    validate_axis_table(table)
    ref = reference_index(table.index, reference)
    axes = list(table.columns)
    return crs_array(_as_batch(table), ref, config.chain(axes), _noise_vector(axes, noise_se))


def scaled_profile(
    table: pd.DataFrame,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    noise_se: Mapping[str, float] | pd.Series | None = None,
) -> tuple[pd.DataFrame, pd.Series]:
    """(u per encoder and axis, spread per axis)."""
    validate_axis_table(table)
    ref = reference_index(table.index, reference)
    relative = relative_profile_array(_as_batch(table), ref)
    spread = axis_spread_array(relative, ref, _noise_vector(list(table.columns), noise_se), config.noise_floor)
    scaled = scaled_profile_array(relative, spread)
    return (
        pd.DataFrame(scaled[0], index=table.index, columns=table.columns),
        pd.Series(spread[0], index=table.columns, name="spread"),
    )
