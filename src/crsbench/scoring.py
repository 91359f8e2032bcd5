"""Records in, a complete CRS report out: the one entry point the CLI and the Python API call.

    report = score_records(records, "resnet50", CRSConfig(n_boot=2000))   # axes, CRS, bootstrap, ...
    crsbench.report.write_score_report(report, "out/scores")            # CSV + Parquet + JSON
    rich.print(crsbench.report.scores_table(report))                     # the terminal view

`score_records` is a composition of small stages; each returns (result, notes), and the notes are
kept in stage order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from crsbench.axes import AXES, AxisScores, compute_axes, seed_standard_error
from crsbench.crs import COMPONENTS, DEFAULT_CONFIG, CRSArrays, CRSConfig, crs_arrays
from crsbench.records import aggregate_seeds
from crsbench.stats import (
    CASE_RESAMPLING_UNAVAILABLE,
    BootstrapResult,
    competition_ranks,
    paired_seed_bootstrap,
    rank_agreement,
    weight_sensitivity,
)
from crsbench.errors import DataError

Notes = list[str]

SCORE_COLUMNS: tuple[str, ...] = (
    *AXES,
    *COMPONENTS,
    "crs",
    "ci_low",
    "ci_high",
    "p_rank1",
    "in_leading_tier",
    "auroc_rank",
    "crs_rank",
)


@dataclass(frozen=True)
class ScoreReport:
    """Every table the CRS stage produces, indexed by encoder where that makes sense.

    scores: one row per encoder, sorted by crs_rank, columns SCORE_COLUMNS (an axis that is missing
    is NaN there and listed in `axes_missing` with its reason; the CRS uses `axes_used` only).
    """

    scores: pd.DataFrame
    axes: pd.DataFrame
    axes_by_task: pd.DataFrame
    axes_by_seed: pd.DataFrame
    profile: pd.DataFrame
    spread: pd.DataFrame
    rank_distribution: pd.DataFrame
    pairwise: pd.DataFrame
    leading_tier_table: pd.DataFrame
    rank_agreement: pd.DataFrame
    reversed_pairs: pd.DataFrame
    weight_sensitivity: pd.DataFrame
    seed_summary: pd.DataFrame
    reference: str
    axes_used: tuple[str, ...]
    axes_missing: dict[str, str]
    leading_tier: tuple[str, ...]
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by file stem, as `write_score_report` writes them."""
        return {
            "scores": self.scores,
            "axes": self.axes,
            "axes_by_task": self.axes_by_task,
            "axes_by_seed": self.axes_by_seed,
            "profile": self.profile,
            "spread": self.spread,
            "rank_distribution": self.rank_distribution,
            "pairwise": self.pairwise,
            "leading_tier": self.leading_tier_table,
            "rank_agreement": self.rank_agreement,
            "reversed_pairs": self.reversed_pairs,
            "weight_sensitivity": self.weight_sensitivity,
            "seed_summary": self.seed_summary,
        }

    def summary(self) -> dict[str, Any]:
        """The non-tabular facts: reference, axes used and missing, tier, notes, settings."""
        return {
            "reference": self.reference,
            "axes_used": list(self.axes_used),
            "axes_missing": dict(self.axes_missing),
            "leading_tier": list(self.leading_tier),
            "top": self.scores.index[0] if len(self.scores) else None,
            "rank_agreement": self.rank_agreement.to_dict(orient="records")[0] if len(self.rank_agreement) else {},
            "notes": list(self.notes),
            "settings": dict(self.settings),
        }


# --------------------------------------------------------------------------- stages


def default_reference(encoders: list[str]) -> str:
    """The first encoder alphabetically: deterministic when the caller (the suite) names none."""
    return sorted(encoders)[0]


def _ranks(series: pd.Series) -> pd.Series:
    return pd.Series(competition_ranks(series.to_numpy(dtype=float)[None, :])[0], index=series.index)


def axes_stage(records: pd.DataFrame) -> tuple[AxisScores, Notes]:
    axis_scores = compute_axes(records)
    return axis_scores, list(axis_scores.notes)


def reference_stage(encoders: list[str], reference: str | None) -> tuple[str, Notes]:
    if reference is None:
        reference = default_reference(encoders)
        return reference, [f"reference not given: using {reference!r}, the first encoder alphabetically"]
    if reference not in encoders:
        raise ValueError(f"reference encoder {reference!r} is not in the records' cohort {encoders}")
    return reference, []


def config_stage(config: CRSConfig, axis_scores: AxisScores) -> tuple[CRSConfig, Notes]:
    """The config restricted to the available axes: weights for a missing axis are dropped with a note."""
    notes: Notes = []
    used = axis_scores.axes
    weights = config.axis_weights
    if weights is not None:
        unknown = sorted(set(weights) - set(AXES))
        if unknown:
            raise ValueError(f"unknown axis weight name(s) {unknown}; expected some of {list(AXES)}")
        dropped = sorted(set(weights) - set(used))
        if dropped:
            notes.append(f"axis weight(s) for {dropped} ignored: the axis is missing")
        config = config.model_copy(update={"axis_weights": {a: w for a, w in weights.items() if a in used}})
    config.chain(used)  # rejects weights that leave no axis
    if axis_scores.missing:
        notes.append(f"CRS computed on {len(used)} axes {list(used)}; missing: {axis_scores.missing}")
    return config, notes


@dataclass(frozen=True)
class PointScores:
    scores: pd.DataFrame  # axes and the three components and CRS, per encoder
    chain: CRSArrays
    noise: pd.Series  # seed standard error per used axis


def point_stage(axis_scores: AxisScores, reference: str, config: CRSConfig) -> tuple[PointScores, Notes]:
    used = list(axis_scores.axes)
    ones = np.ones((1, len(axis_scores.seeds)))
    noise = pd.Series(seed_standard_error(axis_scores.cube, axis_scores.task_mask, ones)[0], index=used)
    chain = crs_arrays(axis_scores.table[used], reference, config, noise_se=noise)
    scores = axis_scores.table[list(AXES)].copy()
    for component in COMPONENTS:
        scores[component] = getattr(chain, component)[0]
    scores["crs"] = chain.crs[0]
    return PointScores(scores, chain, noise), []


def _seed_count_notes(n_seeds: int, interval: str) -> Notes:
    if n_seeds < 2:
        return ["one seed only: every bootstrap draw is the same, intervals have zero width"]
    if interval == "percentile" and n_seeds < 20:
        return [
            f"{n_seeds} seeds: plain percentile intervals from so few seeds are approximate and too "
            "narrow (about 82% coverage for a nominal 95% with 5 seeds; docs/crs.md, Coverage); "
            "interval='expanded' widens them"
        ]
    if n_seeds < 10:
        return [
            f"{n_seeds} seeds: intervals are approximate (a nominal 95% expanded interval covered "
            "about 91% with 5 seeds in simulation; docs/crs.md, Coverage)"
        ]
    return []


def bootstrap_stage(axis_scores: AxisScores, reference: str, config: CRSConfig) -> tuple[BootstrapResult | None, Notes]:
    if config.n_boot == 0:
        if config.resample_cases:
            raise DataError(CASE_RESAMPLING_UNAVAILABLE)
        return None, ["bootstrap skipped (n_boot=0): no intervals, no leading tier"]
    notes = _seed_count_notes(len(axis_scores.seeds), config.interval)
    return paired_seed_bootstrap(axis_scores, reference, config), notes


def with_intervals(scores: pd.DataFrame, boot: BootstrapResult | None) -> pd.DataFrame:
    scores = scores.copy()
    if boot is None:
        for column in ("ci_low", "ci_high", "p_rank1"):
            scores[column] = np.nan
        scores["in_leading_tier"] = pd.array([pd.NA] * len(scores), dtype="boolean")
        return scores
    for column in ("ci_low", "ci_high", "p_rank1"):
        scores[column] = boot.intervals[column]
    scores["in_leading_tier"] = boot.tier["in_leading_tier"].astype("boolean")
    return scores


@dataclass(frozen=True)
class Agreement:
    scores: pd.DataFrame  # with auroc_rank and crs_rank, in SCORE_COLUMNS order, best first
    table: pd.DataFrame
    reversed_pairs: pd.DataFrame


def agreement_stage(scores: pd.DataFrame, used: tuple[str, ...]) -> tuple[Agreement, Notes]:
    scores = scores.copy()
    notes: Notes = []
    if "discrimination" in used:
        scores["auroc_rank"] = _ranks(scores["discrimination"])
        agreement = rank_agreement(scores["discrimination"], scores["crs"])
        table, reversed_pairs = agreement.summary(), agreement.reversed_pairs
    else:
        scores["auroc_rank"] = np.nan
        table, reversed_pairs = pd.DataFrame(), pd.DataFrame()
        notes.append("no discrimination axis: AUROC-vs-CRS agreement not computed")
    scores["crs_rank"] = _ranks(scores["crs"])
    scores = scores[list(SCORE_COLUMNS)].sort_values(["crs_rank", "crs"], ascending=[True, False], kind="stable")
    return Agreement(scores, table, reversed_pairs), notes


def sensitivity_stage(axis_scores: AxisScores, reference: str, config: CRSConfig, noise: pd.Series) -> tuple[pd.DataFrame, Notes]:
    if config.n_weight_draws == 0:
        return pd.DataFrame(), []
    table = axis_scores.table[list(axis_scores.axes)]
    return weight_sensitivity(table, reference, config, noise_se=noise), []


def settings_of(config: CRSConfig, reference: str, axis_scores: AxisScores) -> dict[str, Any]:
    chain = config.chain(axis_scores.axes)
    return {
        "reference": reference,
        "component_weights": dict(zip(COMPONENTS, map(float, chain.component_weights))),
        "axis_weights": dict(zip(axis_scores.axes, map(float, chain.axis_weights))),
        "tau": config.tau,
        "noise_floor": config.noise_floor,
        "n_boot": config.n_boot,
        "seed": config.seed,
        "level": config.level,
        "interval": config.interval,
        "n_seeds": len(axis_scores.seeds),
        "seeds": list(axis_scores.seeds),
        "tasks": list(axis_scores.tasks),
        "n_weight_draws": config.n_weight_draws,
        "weight_concentration": config.weight_concentration,
        "resample_cases": config.resample_cases,
    }


# --------------------------------------------------------------------------- the entry point


def score_records(records: pd.DataFrame, reference: str | None = None, config: CRSConfig = DEFAULT_CONFIG) -> ScoreReport:
    """Axes, CRS, paired-seed bootstrap, AUROC-vs-CRS agreement and weight sensitivity from records.

    reference: an encoder name; None picks the first encoder alphabetically (the CLI passes the
    suite's reference). `config` holds the weights, tau, noise floor and the bootstrap and
    sensitivity settings (crs.CRSConfig). Records of several grids are refused (records.one_grid).
    """
    notes: Notes = []

    def keep(stage_result):
        result, stage_notes = stage_result
        notes.extend(stage_notes)
        return result

    axis_scores = keep(axes_stage(records))
    reference = keep(reference_stage(list(axis_scores.encoders), reference))
    config = keep(config_stage(config, axis_scores))
    point = keep(point_stage(axis_scores, reference, config))
    boot = keep(bootstrap_stage(axis_scores, reference, config))
    agreement = keep(agreement_stage(with_intervals(point.scores, boot), axis_scores.axes))
    sensitivity = keep(sensitivity_stage(axis_scores, reference, config, point.noise))
    return _assemble(axis_scores, reference, config, point, boot, agreement, sensitivity, records, notes)


def _assemble(axis_scores, reference, config, point, boot, agreement, sensitivity, records, notes) -> ScoreReport:
    used = list(axis_scores.axes)
    index = pd.Index(list(axis_scores.encoders), name="encoder")
    spread = pd.DataFrame(
        {"spread": point.chain.spread[0], "noise_se": point.noise.to_numpy()}, index=pd.Index(used, name="axis")
    )
    return ScoreReport(
        scores=agreement.scores,
        axes=axis_scores.table,
        axes_by_task=axis_scores.per_task,
        axes_by_seed=axis_scores.per_seed,
        profile=pd.DataFrame(point.chain.scaled[0], index=index, columns=used),
        spread=spread,
        rank_distribution=boot.rank_distribution if boot else pd.DataFrame(),
        pairwise=boot.pairwise if boot else pd.DataFrame(),
        leading_tier_table=boot.tier if boot else pd.DataFrame(),
        rank_agreement=agreement.table,
        reversed_pairs=agreement.reversed_pairs,
        weight_sensitivity=sensitivity,
        seed_summary=aggregate_seeds(records),
        reference=reference,
        axes_used=tuple(used),
        axes_missing=dict(axis_scores.missing),
        leading_tier=boot.leading_tier if boot else (),
        notes=tuple(notes),
        settings=settings_of(config, reference, axis_scores),
    )
