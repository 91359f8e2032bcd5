"""The value a score is: `ScoreReport`, the facts of the run and seven frozen parts, each always present.

Built once by scoring.score.score_records; read by every output (report/, selection/, bundles/) by
attribute, never with a default (tests/structure/test_typed_read_side.py). Which table lives where:
docs/crs.md, section 9.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from crsbench.scoring.axes import AXES
from crsbench.scoring.component_tables import ComponentTables, components_summary
from crsbench.scoring.refits import fitted_probes_summary
from crsbench.scoring.settings import ScoreSettings
from crsbench.scoring.subgroups import LABEL_COLUMNS, TABLE_COLUMNS, WORST_COLUMNS, flagged, thresholds


@dataclass(frozen=True)
class PointTables:
    """The point estimates. scores: the cross-task summary, one row per encoder, sorted by crs_rank,
    columns scoring.score.SCORE_COLUMNS (the reference's interval is NaN: its CRS is 0 by definition, shown
    as "reference"); scores_by_task: one row per (task, encoder), tasks in order, best CRS first within a task; the axes
    across tasks, per task and per seed; profile: u, the skill per axis; the records' seed means; how the
    ranking moves with the weights (empty when no weight draws ran)."""

    scores: pd.DataFrame
    scores_by_task: pd.DataFrame
    axes: pd.DataFrame
    axes_by_task: pd.DataFrame
    axes_by_seed: pd.DataFrame
    profile: pd.DataFrame
    seed_summary: pd.DataFrame
    weight_sensitivity: pd.DataFrame


@dataclass(frozen=True)
class IntervalTables:
    """What the bootstrap says of the spread; every table empty and `label` None when no bootstrap ran.

    label: which bootstrap ran; target: what the intervals and the tier are about, one sentence
    (refits.target_sentence), which every output shows. axis_intervals (case bootstrap): per scope, encoder
    and axis; pair_intervals (case bootstrap): each ordered pair's paired difference per scope and axis (and
    "crs"), P(e > f). fitted_probes: these fitted probes' narrower summaries where the intervals include
    training samples. gap_variance: the leading gap's variance by source (gap_variance; {} without a case
    bootstrap)."""

    label: str | None
    target: str
    rank_distribution: pd.DataFrame
    axis_intervals: pd.DataFrame
    pair_intervals: pd.DataFrame
    fitted_probes: pd.DataFrame
    gap_variance: dict


@dataclass(frozen=True)
class TierTables:
    """The pairwise relations and the leading tier (one rule: bootstrap_summary.leading_tier): P(CRS row >
    CRS column), the tier table across tasks, the tier's members across tasks and per task."""

    pairwise: pd.DataFrame
    table: pd.DataFrame
    members: tuple[str, ...]
    members_by_task: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class RankAgreement:
    """AUROC rank against CRS rank on the cohort without floor baselines, and the pairs they order apart."""

    table: pd.DataFrame
    reversed_pairs: pd.DataFrame


@dataclass(frozen=True)
class Evidence:
    """What each axis rests on per task (axis_evidence.axis_evidence) and the cases per class of each set."""

    axis_evidence: pd.DataFrame
    class_counts: pd.DataFrame


@dataclass(frozen=True)
class SubgroupTables:
    """Discrimination and calibration per patient subgroup (scoring/subgroups.py; docs/subgroups.md); every
    table empty and `target` "" when no test set of the run carries attributes.

    target: what the subgroup intervals cover, one line every output shows; thresholds: the cases and the
    positives and negatives per label below which a subgroup is not assessable. table: per task, set,
    attribute, subgroup and encoder (subgroups.TABLE_COLUMNS); worst: the worst subgroup and the gap per
    task, set, attribute and encoder, with their bias estimates (WORST_COLUMNS); labels: the per-label AUROC
    of multi-label tasks (LABEL_COLUMNS)."""

    target: str
    thresholds: dict
    table: pd.DataFrame
    worst: pd.DataFrame
    labels: pd.DataFrame


@dataclass(frozen=True)
class ScoreReport:
    """Every result of the CRS stage, built once by `score_records`: the facts of the run (reference, axes
    used, missing and partial, floor baselines, notes, settings) and seven parts, each always present (its
    tables empty where a run has none). `inputs_key` is the fingerprint of what this value was computed from
    (scoring.inputs.inputs_key), "" when not known: `report` reuses a stored value only when it equals the
    fingerprint of what it would score.
    """

    reference: str
    axes_used: tuple[str, ...]
    axes_missing: dict[str, str]
    axes_partial: dict[str, int]
    baselines: tuple[str, ...]
    notes: tuple[str, ...]
    settings: ScoreSettings
    inputs_key: str
    point: PointTables
    intervals: IntervalTables
    tier: TierTables
    agreement: RankAgreement
    components: ComponentTables
    evidence: Evidence
    subgroups: SubgroupTables

    @property
    def shown_axes(self) -> tuple[str, ...]:
        """The axis columns every table shows: the four, then the optional subgroup axis where it was asked for."""
        return (*AXES, *(a for a in self.axes_used if a not in AXES))

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by file stem, as `write_score_report` writes them."""
        point = self.point
        return {
            "scores_by_task": point.scores_by_task,
            "scores": point.scores,
            "axes": point.axes,
            "axes_by_task": point.axes_by_task,
            "axes_by_seed": point.axes_by_seed,
            "profile": point.profile,
            "rank_distribution": self.intervals.rank_distribution,
            "pairwise": self.tier.pairwise,
            "leading_tier": self.tier.table,
            "rank_agreement": self.agreement.table,
            "reversed_pairs": self.agreement.reversed_pairs,
            "weight_sensitivity": point.weight_sensitivity,
            "seed_summary": point.seed_summary,
            "axis_intervals": self.intervals.axis_intervals,
            "axis_evidence": self.evidence.axis_evidence,
            "class_counts": self.evidence.class_counts,
            "components": self.components.components,
            "pareto_pairs": self.components.pareto_pairs,
            "definitions": self.components.definitions,
            "disagreements": self.components.disagreements,
            "rank_agreement_by_definition": self.components.agreement,
            "subgroups": self.subgroups.table,
            "subgroup_worst": self.subgroups.worst,
            "subgroup_labels": self.subgroups.labels,
        }

    def summary(self) -> dict[str, Any]:
        """The non-tabular facts: reference, constants, axes used, missing and partial, tiers, notes."""
        scores, agreement, parts = self.point.scores, self.agreement.table, self.components
        return {
            "reference": self.reference,
            "axes_used": list(self.axes_used),
            "axes_missing": dict(self.axes_missing),
            "axes_partial": dict(self.axes_partial),
            "baselines": list(self.baselines),
            "interval": self.intervals.label,
            "interval_target": self.intervals.target,
            "fitted_probes": fitted_probes_summary(self.intervals.fitted_probes),
            "leading_gap_variance": dict(self.intervals.gap_variance),
            "leading_tier": list(self.tier.members),
            "leading_tier_by_task": {t: list(v) for t, v in self.tier.members_by_task.items()},
            "top": scores.index[0] if len(scores) else None,
            "rank_agreement": agreement.to_dict(orient="records")[0] if len(agreement) else {},
            "notes": list(self.notes),
            "settings": dict(self.settings),
            "subgroups": subgroup_summary(self.subgroups),
            **components_summary(parts.components, parts.pareto_pairs, parts.definitions, parts.disagreements,
                                  self.settings.definition, parts.agreement),
        }


def subgroup_summary(part: SubgroupTables) -> dict[str, Any]:
    """What summary.json says of the subgroups: the target, thresholds, the worst subgroup per encoder and
    attribute, and each difference to the rest whose interval excludes 0."""
    if part.table.empty:
        return {}
    excluding = flagged(part.table)
    keep = ["task", "set", "attribute", "subgroup", "encoder", "diff", "diff_low", "diff_high"]
    return {"target": part.target, "thresholds": dict(part.thresholds),
            "not_assessable": int((~part.table["assessable"].astype(bool)).sum()),
            "worst": part.worst.to_dict(orient="records"),
            "differences_excluding_zero": excluding[keep].to_dict(orient="records")}


def empty_subgroups(target: str = "") -> SubgroupTables:
    return SubgroupTables(target, thresholds(), pd.DataFrame(columns=list(TABLE_COLUMNS)),
                          pd.DataFrame(columns=list(WORST_COLUMNS)), pd.DataFrame(columns=list(LABEL_COLUMNS)))


PART_TYPES: dict[str, type] = {"point": PointTables, "intervals": IntervalTables, "tier": TierTables,
                               "agreement": RankAgreement, "components": ComponentTables, "evidence": Evidence,
                               "subgroups": SubgroupTables}
PARTS: tuple[str, ...] = tuple(PART_TYPES)
