"""The Clinical Reliability Score (PROTOCOL section 7): pure functions, axis values in, scores out.

For encoders with axis values s[e, a], a reference ref, and constants fixed by the axes' definitions
(docs/crs.md):

    u[e, a]  = (s[e, a] - L_a) / m_a           commensurate skill: L_a the axis's "no value" level
                                               (chance, or the prior predictor), m_a its span from
                                               there to a perfect value, so u = 0 is no value and
                                               u = 1 perfect on every axis
    skill(e) = 100 * sum_a w_a u[e, a]         w the axis weights (sum 1), in skill points
    CRS(e)   = skill(e) - skill(ref)

A compensatory mean, not a soft minimum: each axis moves the verdict by its weight times its change
in skill, whatever its range, and the point estimate is linear in the axis estimates, so it inherits
their (near) unbiasedness instead of a soft minimum's noise-dependent downward pull. skill(e)
depends on e's profile and the constants only, so the order of the encoders is the same under every
reference (P13), adding, removing or cloning others cannot move a score (P6), and the reference
scores exactly 0 (P3).

The array functions broadcast over leading dimensions (bootstrap draws, sensitivity draws); the
DataFrame functions are the one-table case.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Optional, Self

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from crsbench.crs import components as comp
from crsbench.crs.statistics_settings import StatisticsSettings

COMPONENTS: tuple[str, ...] = ("skill",)
SKILL_POINTS = 100.0  # the CRS in skill points: 1 point = 0.01 of the span from no value to perfect
DEFAULT_DELTA = 0.05
DEFAULT_MARGIN = 0.02  # AUROC: the sample-size answer's tolerance
# which function of the skills ranks (docs/crs.md section 2): the weighted mean, or the published components
DEFINITIONS: tuple[str, ...] = ("mean_of_skills", "components")
DEFAULT_DEFINITION = "mean_of_skills"

# The "no value" level of each axis and its span to a perfect value (docs/crs.md, section 2).
# the optional fifth axis (off unless the crs block names `subgroup_axis`): the AUROC of the worst assessable
# subgroup of the attributes named, a skill against chance like discrimination (docs/crs.md, docs/subgroups.md)
SUBGROUP_AXIS = "worst_subgroup"
DEFAULT_ANCHORS: dict[str, float] = {
    "discrimination": 0.5,  # AUROC of a probe that predicts the class prior
    "calibration": 0.0,  # Brier skill of the prior predictor
    "label_efficiency": 0.5,  # log-fraction-averaged AUROC at chance
    "robustness": 0.5,  # AUROC at chance under every perturbation and the shift
    SUBGROUP_AXIS: 0.5,  # the worst subgroup's AUROC at chance
}
DEFAULT_SCALES: dict[str, float] = {
    "discrimination": 0.5,  # AUROC 0.5 -> 1.0
    "calibration": 1.0,  # Brier skill 0 -> 1
    "label_efficiency": 0.5,
    "robustness": 0.5,
    SUBGROUP_AXIS: 0.5,
}
MAX_SUBGROUP_ATTRIBUTES = 16


def _check_axis_numbers(values: Optional[dict[str, float]], what: str, positive: bool) -> Optional[dict[str, float]]:
    for name, value in (values or {}).items():
        if not math.isfinite(value) or (positive and value <= 0):
            raise ValueError(f"{what} for {name!r} is {value}: must be finite{' and > 0' if positive else ''}")
    return values


class CRSDefinition(BaseModel):
    """What the score is, validated once: the axes' constants, their weights, which CRS ranks and the
    components' constants. Every function of the score itself (crs_batch, crs_table, the components) takes
    this and nothing about how its uncertainty is estimated (crs.statistics_settings.StatisticsSettings).

    anchors / scales: L_a and the span m_a by axis name; names left out keep DEFAULT_ANCHORS /
    DEFAULT_SCALES (changing a span changes how much that axis can move the verdict: use the axis
    weights for that). delta: the chance margin of the "not assessable" flag (a display; it moves no
    score). margin: the AUROC tolerance of the sufficient fraction. Axis weights are a mapping by
    name; names left out keep weight 1; normalised.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    anchors: Optional[dict[str, float]] = Field(None, description="anchor L_a (no-value level) by axis name")
    scales: Optional[dict[str, float]] = Field(None, description="span m_a from the anchor to a perfect value, by axis")
    delta: float = Field(DEFAULT_DELTA, gt=0, lt=0.5, allow_inf_nan=False, description="chance margin of the flag")
    margin: float = Field(DEFAULT_MARGIN, gt=0, lt=0.5, allow_inf_nan=False, description="AUROC margin of the sufficient fraction")
    axis_weights: Optional[dict[str, float]] = Field(None, description="weights by axis name")
    definition: Literal["mean_of_skills", "components"] = Field(
        DEFAULT_DEFINITION, description="the CRS that ranks: the weighted mean of the skills, or the composite of "
        "dominance over the reference, profile balance and worst axis (docs/crs.md)"
    )
    component_weights: Optional[dict[str, float]] = Field(
        None, description="weights of dominance, balance and worst (the components definition); default equal"
    )
    tolerance: float = Field(comp.DEFAULT_TOLERANCE, gt=0, lt=1, allow_inf_nan=False,
                             description="per-axis tolerance of the Pareto relations, in skill units")
    balance_tau: float = Field(comp.DEFAULT_BALANCE_TAU, gt=0, allow_inf_nan=False,
                               description="temperature of the balance's soft minimum, in skill units")
    subgroup_axis: Optional[list[str]] = Field(
        None, description="the patient attributes whose worst assessable subgroup's AUROC is an optional fifth axis, "
        f"`{SUBGROUP_AXIS}` (absent: off, the published four axes)")

    @field_validator("subgroup_axis")
    @classmethod
    def _subgroup_axis(cls, attributes: Optional[list[str]]) -> Optional[list[str]]:
        if attributes is None:
            return None
        if not attributes or len(attributes) > MAX_SUBGROUP_ATTRIBUTES:
            raise ValueError(f"name 1 to {MAX_SUBGROUP_ATTRIBUTES} attributes (e.g. [sex, age_band]), or leave the key "
                             "out to keep the axis off")
        for name in attributes:
            if not name or len(name) > 64 or not name.isprintable() or name != name.strip():
                raise ValueError(f"attribute {name[:64]!r} is not a column name (1 to 64 printable characters)")
        twice = sorted({a for a in attributes if attributes.count(a) > 1})
        if twice:
            raise ValueError(f"attribute(s) {twice} named twice")
        return attributes

    @field_validator("component_weights")
    @classmethod
    def _components(cls, weights: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        comp.component_weight_vector(weights)
        return weights

    @field_validator("anchors")
    @classmethod
    def _anchors(cls, anchors: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        return _check_axis_numbers(anchors, "anchor", positive=False)

    @field_validator("scales")
    @classmethod
    def _scales(cls, scales: Optional[dict[str, float]]) -> Optional[dict[str, float]]:
        return _check_axis_numbers(scales, "scale", positive=True)

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
        """The constants for these axes, by name, as every output prints them."""
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
            definition=self.definition,
            component_weights=comp.component_weight_vector(self.component_weights),
            tolerance=self.tolerance,
            balance_tau=self.balance_tau,
        )

    def other_definition(self) -> Self:
        """The same settings under the definition that does not rank: what every output shows beside."""
        other = next(d for d in DEFINITIONS if d != self.definition)
        return self.model_copy(update={"definition": other})


class CRSConfig(StatisticsSettings, CRSDefinition):
    """A suite's `crs:` block as suites write it, flat: what the score is (CRSDefinition) and how its
    statistics are estimated (StatisticsSettings), validated once. Scoring takes it whole and hands each
    function the half it needs (`score_definition`, `statistics`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def score_definition(self) -> CRSDefinition:
        return CRSDefinition(**self.model_dump(include=set(CRSDefinition.model_fields)))

    @property
    def statistics(self) -> StatisticsSettings:
        return StatisticsSettings(**self.model_dump(include=set(StatisticsSettings.model_fields)))


def _per_axis(axes: Sequence[str], defaults: Mapping[str, float], given: Mapping[str, float] | None, what: str) -> np.ndarray:
    values = {**defaults, **(given or {})}
    absent = [a for a in axes if a not in values]
    if absent:
        raise ValueError(f"no {what} for axis/axes {absent}: set `{what}s` in the suite's crs block")
    return np.array([values[a] for a in axes], dtype=float)


@dataclass(frozen=True)
class ChainSettings:
    """A CRSDefinition resolved for one axis list: anchors, scales and axis weights, each (..., A).

    Leading dimensions broadcast against the draws of the values, so the sensitivity analysis can
    give every draw its own weights.
    """

    anchors: np.ndarray
    scales: np.ndarray
    axis_weights: np.ndarray
    definition: str = DEFAULT_DEFINITION
    component_weights: np.ndarray = field(default_factory=lambda: comp.component_weight_vector(None))
    tolerance: float = comp.DEFAULT_TOLERANCE
    balance_tau: float = comp.DEFAULT_BALANCE_TAU

    def __post_init__(self) -> None:
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


def axis_weight_vector(axes: Sequence[str], weights: Mapping[str, float] | None = None) -> np.ndarray:
    """Axis weights in `axes` order summing to 1; default equal. A zero weight drops the axis."""
    return _checked_weights(list(axes), weights, "axis")


# --------------------------------------------------------------------------- array core (broadcasting)


def scaled_values(values: np.ndarray, anchors: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """u = (s - L) / m on (..., E, A); anchors and scales (..., A) broadcast over encoders."""
    anchors = np.asarray(anchors, dtype=float)[..., None, :]
    scales = np.asarray(scales, dtype=float)[..., None, :]
    return (np.asarray(values, dtype=float) - anchors) / scales


@dataclass(frozen=True)
class CRSBatch:
    """The CRS (..., E), relative to the reference (its entries are exactly 0).

    `skill` is each encoder's own weighted mean skill in points (reference-free: the order of the
    encoders); `scaled` is u (..., E, A); `contribution` (..., E, A) is each axis's share of the CRS,
    100 w_a (u[e, a] - u[ref, a]), summing to the CRS over the axes.
    """

    crs: np.ndarray
    skill: np.ndarray
    scaled: np.ndarray
    contribution: np.ndarray


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
    scaled = scaled_values(values, chain.anchors, chain.scales)
    weights = np.asarray(chain.axis_weights, dtype=float)[..., None, :]
    # an axis with weight 0 is dropped, even where its value would be undefined
    weighted = np.where(weights > 0, SKILL_POINTS * weights * scaled, 0.0)
    skill = weighted.sum(axis=-1)
    contribution = weighted - weighted[..., ref : ref + 1, :] + 0.0
    if chain.definition == "components":
        crs = comp.components(scaled, ref, weights=chain.axis_weights, component_weights=chain.component_weights,
                              tol=chain.tolerance, tau=chain.balance_tau).crs
        return CRSBatch(crs, skill, scaled, contribution)
    return CRSBatch(_minus_reference(skill, ref), skill, scaled, contribution)


def crs_batch(axis_values: np.ndarray, ref: int, config: CRSDefinition, axes: Sequence[str]) -> CRSBatch:
    """Section 7 on axis values (..., E, A), axes in the order `axes`, constants from `config`.

    The reference's CRS is exactly 0; every other encoder's depends on its own row, the
    reference's row and the constants only.
    """
    return crs_chain(axis_values, ref, config.chain(axes))


# --------------------------------------------------------------------------- DataFrame level


def crs_table(table: pd.DataFrame, reference: str, config: CRSDefinition | None = None) -> CRSBatch:
    """`crs_batch` on a table (one row per encoder, one column per axis), values (E, A)."""
    validate_axis_table(table)
    config = DEFAULT_CONFIG if config is None else config
    return crs_batch(table.to_numpy(dtype=float), reference_index(table.index, reference), config, list(table.columns))


def crs_scores(table: pd.DataFrame, reference: str, config: CRSDefinition | None = None) -> pd.DataFrame:
    """Scores per encoder: its own skill (points, reference-free) and the CRS (minus the reference's)."""
    result = crs_table(table, reference, config)
    return pd.DataFrame({"skill": result.skill, "crs": result.crs}, index=table.index)


def scaled_profile(table: pd.DataFrame, config: CRSDefinition | None = None) -> pd.DataFrame:
    """u = (s - L_a) / m_a per encoder and axis (independent of the reference)."""
    validate_axis_table(table)
    config = DEFAULT_CONFIG if config is None else config
    axes = list(table.columns)
    u = scaled_values(table.to_numpy(dtype=float), config.anchor_vector(axes), config.scale_vector(axes))
    return pd.DataFrame(u, index=table.index, columns=table.columns)
