"""Records in, a complete CRS report out: the one entry point the CLI and the Python API call.

    report = score_records(records, "resnet50", CRSConfig(n_boot=2000), baselines=("raw-pixels",))
    crsbench.report.write_score_report(report, "out/scores")            # CSV + Parquet + JSON
    rich.print(crsbench.report.scores_table(report))                     # the terminal view

Per task first: every task gets its own axes, CRS, interval and tier (`scores_by_task`); the
cross-task summary (`scores`) scores the mean of each axis over the tasks that count towards it.
`score_records` is a composition of small stages; each returns (result, notes), kept in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.scoring.axis_evidence import axis_evidence, class_table
from crsbench.scoring.axes import AXES, BESIDE, CALIBRATION_AXIS, SUMMARY_EXTRAS, AxisScores, compute_axes
from crsbench.crs.definition import COMPONENTS, DEFAULT_CONFIG, SUBGROUP_AXIS, CRSConfig, CRSDefinition, crs_batch
from crsbench.results.record_set import Records, refits_for
from crsbench.scoring.case_bootstrap import CaseBootstrap, case_bootstrap
from crsbench.scoring.cohort_grid import Incomplete, grid_stage
from crsbench.scoring.component_tables import ComponentTables, agreement_by_definition, component_tables
from crsbench.scoring.gap_variance import leading_gap_variance
from crsbench.scoring.rank_agreement import rank_agreement, rank_agreement_intervals
from crsbench.scoring.refits import fitted_probe_table, target_sentence
from crsbench.results.predictions import Predictions
from crsbench.scoring.score_report import (Evidence, IntervalTables, PointTables, RankAgreement, ScoreReport,
                                          SubgroupTables, TierTables, empty_subgroups)
from crsbench.scoring.subgroup_inputs import subgroup_inputs
from crsbench.scoring.subgroup_refits import with_refits
from crsbench.scoring.subgroups import subgroup_tables, thresholds
from crsbench.scoring.task_draws import plan_tasks, task_types_of
from crsbench.scoring.settings import ScoreContext, ScoreSettings
from crsbench.scoring.bootstrap_summary import competition_ranks
from crsbench.scoring.statistics import SEED_ONLY_LABEL, SeedBootstrap, paired_seed_bootstrap, weight_sensitivity

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
    "is_reference",
    "baseline",
    *SUMMARY_EXTRAS,
    "n_not_assessable",
)

TASK_SCORE_COLUMNS: tuple[str, ...] = (
    "task",
    "encoder",
    *AXES,
    *sorted({c for beside in BESIDE.values() for c in beside}),
    "not_assessable",
    *COMPONENTS,
    "crs",
    "ci_low",
    "ci_high",
    "p_rank1",
    "in_leading_tier",
    "crs_rank",
    "is_reference",
    "baseline",
)




# --------------------------------------------------------------------------- stages

def default_reference(encoders: list[str]) -> str:
    """The first encoder alphabetically: deterministic when the caller (the suite) names none."""
    return sorted(encoders)[0]


def _ranks(values: pd.Series) -> pd.Series:
    return pd.Series(competition_ranks(values.to_numpy(dtype=float)[None, :])[0], index=values.index)


def axes_stage(records: pd.DataFrame, config: CRSConfig, predictions: Predictions | None = None
               ) -> tuple[AxisScores, Notes]:
    """The axes; with stored predictions the calibration axis reads the debiased error (a note says which)."""
    axis_scores = compute_axes(records, delta=config.delta, margin=config.margin, predictions=predictions,
                               subgroup_axis=config.subgroup_axis)
    notes = list(axis_scores.notes)
    for axis, n in axis_scores.partial_axes().items():
        notes.append(f"{axis} covers {n} of {len(axis_scores.tasks)} tasks: its cross-task value averages those only")
    return axis_scores, notes


def reference_stage(encoders: list[str], reference: str | None) -> tuple[str, Notes]:
    if reference is None:
        reference = default_reference(encoders)
        return reference, [f"reference not given: using {reference!r}, the first encoder alphabetically"]
    if reference not in encoders:
        raise ValueError(f"reference encoder {reference!r} is not in the records' cohort {encoders}")
    return reference, []


def baseline_stage(encoders: list[str], baselines: Sequence[str]) -> tuple[tuple[str, ...], Notes]:
    present = tuple(b for b in baselines if b in encoders)
    absent = sorted(set(baselines) - set(present))
    return present, [f"baseline(s) {absent} not in the records: ignored"] if absent else []


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
            notes.append(f"axis weight(s) for {', '.join(dropped)} ignored: the axis is missing")
        config = config.model_copy(update={"axis_weights": {a: w for a, w in weights.items() if a in used}})
    config.chain(used)  # rejects weights that leave no axis
    if axis_scores.missing:
        missing = "; ".join(f"{axis} ({reason})" for axis, reason in axis_scores.missing.items())
        notes.append(f"CRS computed on {len(used)} axes ({', '.join(used)}); missing: {missing}")
    return config, notes


def _scope_table(values: pd.DataFrame, axes: Sequence[str], reference: str, config: CRSDefinition) -> pd.DataFrame:
    """Axis values and the CRS with its components for one scope (a task, or the cross-task means)."""
    axes = list(axes)
    ref = list(values.index).index(reference)
    batch = crs_batch(values[axes].to_numpy(dtype=float), ref, config, axes)
    out = values.copy()
    out["skill"], out["crs"] = batch.skill, batch.crs
    out["crs_rank"] = _ranks(out["crs"])
    out["is_reference"] = out.index == reference
    return out


@dataclass(frozen=True)
class PointScores:
    overall: pd.DataFrame  # cross-task axes, extras, components and CRS, per encoder
    by_task: dict[str, pd.DataFrame]
    profile: pd.DataFrame  # u, the skill per axis, cross-task


def point_stage(axis_scores: AxisScores, reference: str, config: CRSDefinition) -> tuple[PointScores, Notes]:
    used = list(axis_scores.axes)
    overall = _scope_table(axis_scores.table, used, reference, config)
    per_task = axis_scores.per_task.set_index("encoder")
    by_task = {}
    for t, task in enumerate(axis_scores.tasks):
        keep = [a for a, k in zip(used, axis_scores.task_mask[t]) if k]
        by_task[task] = _scope_table(per_task[per_task["task"] == task], keep, reference, config)
    batch = crs_batch(axis_scores.table[used].to_numpy(dtype=float), 0, config, used)
    profile = pd.DataFrame(batch.scaled, index=axis_scores.table.index, columns=used)
    return PointScores(overall, by_task, profile), []


def _seed_count_notes(n_seeds: int, interval: str) -> Notes:
    if n_seeds < 2:
        return ["one seed only: every bootstrap draw is the same, intervals have zero width"]
    if interval == "percentile" and n_seeds < 20:
        return [f"{n_seeds} seeds: plain percentile intervals from so few seeds are too narrow; "
                "interval='expanded' widens them"]
    return []


def bootstrap_stage(
    records: pd.DataFrame, axis_scores: AxisScores, reference: str, config: CRSConfig, predictions: Predictions | None
) -> tuple[SeedBootstrap | CaseBootstrap | None, Notes]:
    """The paired case-and-seed bootstrap (default), or the seed-only one (config.resample="seeds", or
    records without stored predictions); every output names which (`label`)."""
    if config.n_boot == 0:
        return None, ["bootstrap skipped (n_boot=0): no intervals, no leading tier"]
    if config.resample == "cases" and predictions is not None:
        boot = case_bootstrap(records, predictions, axis_scores, reference, config)
        notes = [f"intervals and tiers: {boot.label}, {config.n_boot} draws, {boot.method} intervals; "
                 "leading tier simultaneous over the differences to the top (max statistic)", *boot.refit_notes]
        if boot.engine == "linearised":
            # the error bound measured against the exact draws: rms <= 3/sqrt(n) of the spread (docs/bootstrap.md)
            share = min(1.0, 3.0 / max(boot.smallest_set, 1) ** 0.5)
            notes.append(f"each draw's AUROCs by the linearised engine (one matrix product, the degenerate second-order "
                         f"term of the Mann-Whitney statistic dropped): its error is at most about {share:.0%} of "
                         f"the bootstrap spread on the smallest set here ({boot.smallest_set:,} cases; 3/sqrt(cases), "
                         f"measured against the exact draws); the exact draws would be {boot.exact_work:.1e} "
                         "column-case-draws; crs: {bootstrap_engine: batched} forces them")
        return boot, notes
    notes = [f"intervals and tiers: {SEED_ONLY_LABEL}"] + _seed_count_notes(len(axis_scores.seeds), config.interval)
    if config.resample == "cases":
        notes.insert(0, "no per-case predictions stored with these records: the case-level bootstrap cannot run, "
                        "falling back to the seed-only bootstrap")
    return paired_seed_bootstrap(axis_scores, reference, config), notes


def with_intervals(scores: pd.DataFrame, result) -> pd.DataFrame:
    scores = scores.copy()
    if result is None:
        for column in ("ci_low", "ci_high", "p_rank1"):
            scores[column] = np.nan
        scores["in_leading_tier"] = pd.array([pd.NA] * len(scores), dtype="boolean")
        return scores
    for column in ("ci_low", "ci_high", "p_rank1"):
        scores[column] = result.intervals[column].reindex(scores.index)
    scores["in_leading_tier"] = result.tier["in_leading_tier"].reindex(scores.index).astype("boolean")
    return scores


@dataclass(frozen=True)
class Agreement:
    table: pd.DataFrame
    reversed_pairs: pd.DataFrame
    auroc_rank: pd.Series


def agreement_stage(
    scores: pd.DataFrame, used: tuple[str, ...], baselines: tuple[str, ...], boot: SeedBootstrap | CaseBootstrap | None,
    config: CRSConfig, n_seeds: int,
) -> tuple[Agreement, Notes]:
    """AUROC vs CRS rank statistics on the cohort without floor baselines, with bootstrap intervals."""
    if "discrimination" not in used:
        return Agreement(pd.DataFrame(), pd.DataFrame(), pd.Series(np.nan, index=scores.index)), [
            "no discrimination axis: AUROC-vs-CRS agreement not computed"
        ]
    cohort = scores.drop(index=list(baselines))
    notes = [f"rank statistics on {len(cohort)} encoders, without the floor baseline(s) {', '.join(baselines)}"] if baselines else []
    agreement = rank_agreement(cohort["discrimination"], cohort["crs"])
    if boot is None:
        table, pairs = agreement.summary(), agreement.reversed_pairs
    else:
        table, pairs = rank_agreement_intervals(
            agreement, boot.overall.encoders, boot.auroc_draws, boot.overall.draws,
            n_seeds=n_seeds, level=config.level, method=boot.method,
        )
        table["interval"] = boot.label
    return Agreement(table, pairs, _ranks(cohort["discrimination"]).reindex(scores.index)), notes


def components_stage(axis_scores: AxisScores, reference: str, config: CRSConfig,
                     boot: SeedBootstrap | CaseBootstrap | None, baselines: tuple[str, ...]
                     ) -> tuple[ComponentTables, Notes]:
    """The components on the cross-task axes, both definitions and AUROC against each, with the bootstrap's
    axis draws when it ran."""
    draws = boot.axis_draws if boot is not None else None
    values = axis_scores.table[list(axis_scores.axes)]
    tables = component_tables(values, draws, reference, config)
    agreement = agreement_by_definition(values, draws, reference, config, baselines, n_seeds=len(axis_scores.seeds),
                                        method=config.interval if boot is None else boot.method)
    if boot is not None and len(agreement):
        agreement["interval"] = boot.label
    reversals = tables.disagreements[tables.disagreements["verdict"] == "reversal"] if len(tables.disagreements) else []
    note = (f"the two CRS definitions order {len(tables.disagreements)} pair(s) differently, {len(reversals)} of them "
            f"resolved both ways by the bootstrap (reversals); ranking by {config.definition}")
    return ComponentTables(tables.components, tables.pareto_pairs, tables.definitions, tables.disagreements,
                           agreement), [note]


def sensitivity_stage(axis_scores: AxisScores, reference: str, config: CRSConfig) -> tuple[pd.DataFrame, Notes]:
    if config.n_weight_draws == 0:
        return pd.DataFrame(), []
    sensitivity = weight_sensitivity(axis_scores.table[list(axis_scores.axes)], reference, config)
    moving = list(sensitivity.index[sensitivity["place_depends"]])
    what = "axis and component weights" if config.definition == "components" else "axis weights"
    note = (f"place depends on the {what} (5-95% rank range wider than one place): {', '.join(moving)}"
            if moving else f"no encoder's place depends on the {what}")
    return sensitivity, [note]


SUBGROUP_INTERVALS = ("subgroup intervals: the paired case-and-seed bootstrap's own draws, simultaneous at {level:.0%} "
                      "over every subgroup of an encoder's set (max statistic within each attribute, Bonferroni over "
                      "the attributes): a flag is family-wise per encoder and set, {families} such families here")
SUBGROUP_FITTED_ONLY = ("; they cover these fitted probes (test cases and seeds): the refits carry no per-subgroup "
                        "metrics (attributes added or changed after the run), so training samples are not included")
SUBGROUP_TRAINING = ("; they include training samples as the axes do (each refit's own per-subgroup metrics, on the "
                     "axes' refit draws)")
SUBGROUP_PARTLY = ("; they include training samples as the axes do, except for {which}: their refits carry no "
                   "per-subgroup metrics (attributes added or changed after the run), so these cover the fitted probes only")


def subgroup_target(level: float, families: int, training: bool, uncovered: Sequence[str], n_attributes: int) -> str:
    """The one line of what the subgroup intervals cover: training samples where the axes include them and the
    refits carry subgroup metrics, the fitted probes otherwise, naming the attributes without them."""
    line = SUBGROUP_INTERVALS.format(level=level, families=families)
    if not training:
        return line
    if not uncovered:
        return line + SUBGROUP_TRAINING
    if len(uncovered) == n_attributes:
        return line + SUBGROUP_FITTED_ONLY
    return line + SUBGROUP_PARTLY.format(which=", ".join(uncovered))


def subgroup_stage(records: Records, predictions: Predictions | None, axis_scores: AxisScores, reference: str,
                   config: CRSConfig, boot: SeedBootstrap | CaseBootstrap | None,
                   class_names: Mapping[str, Sequence[str]] | None) -> tuple[SubgroupTables, Notes]:
    """AUROC and Brier skill per subgroup of every stored attribute (scoring/subgroups.py), on the bootstrap's
    own draws; empty when no test set carries attributes or no per-case predictions are read."""
    if predictions is None or not predictions.subgroups:
        return empty_subgroups(), []
    cases = isinstance(boot, CaseBootstrap)
    plans = boot.plans if cases else tuple(plan_tasks(records, predictions, axis_scores))
    task_types = task_types_of(records.frame)
    n_draws = config.n_boot + 1 if cases else 1
    sets = subgroup_inputs(plans, predictions, task_types, boot.draw_states if cases else None, n_draws)
    if not sets:
        return empty_subgroups(), []
    uncovered: list[str] = []
    training = cases and bool(boot.refits)
    if training:
        sets, uncovered = with_refits(sets, records.refits, list(axis_scores.encoders), boot.spread.ids,
                                      boot.refit_draws)
    seed_counts = boot.seed_counts if cases else np.ones((1, len(axis_scores.seeds)))
    result = subgroup_tables(sets, list(axis_scores.encoders), reference, seed_counts,
                             {t: tuple(n) for t, n in (class_names or {}).items()}, config.level)
    if cases:
        families = result.table[result.table["assessable"].astype(bool)].drop_duplicates(["task", "set", "encoder"])
        target = subgroup_target(config.level, len(families), training, uncovered,
                                 sum(len(item.attributes) for item in sets))
    else:
        target = "subgroup values are points only: the case-and-seed bootstrap did not run"
    table = result.table
    unassessable = table.drop_duplicates(["task", "set", "attribute", "subgroup"])
    unassessable = unassessable[~unassessable["assessable"].astype(bool)]
    notes = []  # the target is the part's own line, shown under the subgroup tables
    if len(unassessable):
        limits = thresholds()
        notes.append(f"{len(unassessable)} subgroup(s) not assessable (fewer than {limits['min_cases']} cases or "
                     f"{limits['min_per_class']} positives or negatives of a label): shown with the reason, no number")
    return SubgroupTables(target, thresholds(), table, result.worst, result.labels), notes


def settings_of(config: CRSConfig, reference: str, axis_scores: AxisScores, baselines: tuple[str, ...],
                context: ScoreContext) -> ScoreSettings:
    chain = config.chain(axis_scores.axes)
    constants = config.constants(axis_scores.axes)
    return ScoreSettings(
        reference=reference,
        anchors=constants["anchors"],
        scales=constants["scales"],
        delta=config.delta,
        margin=config.margin,
        axis_weights=dict(zip(axis_scores.axes, map(float, chain.axis_weights))),
        axis_task_coverage=dict(axis_scores.coverage),
        baselines=tuple(baselines),
        n_boot=config.n_boot,
        seed=config.seed,
        level=config.level,
        interval=config.interval,
        n_seeds=len(axis_scores.seeds),
        seeds=tuple(axis_scores.seeds),
        tasks=tuple(axis_scores.tasks),
        n_weight_draws=config.n_weight_draws,
        weight_concentration=config.weight_concentration,
        resample=config.resample,
        calibration_axis=CALIBRATION_AXIS,
        definition=config.definition,
        components={"tolerance": config.tolerance, "balance_tau": config.balance_tau,
                    "component_weights": dict(zip(("dominance", "balance", "worst"), map(float, chain.component_weights)))},
        grid=None if context.grid is None else dict(context.grid),
        departures=tuple(context.departures),
        sources=tuple(dict(s) for s in context.sources),
    )


# --------------------------------------------------------------------------- the entry point


def score_records(
    records: Records | pd.DataFrame,
    reference: str | None = None,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    baselines: Sequence[str] = (),
    predictions: Predictions | None = None,
    incomplete: Incomplete = "refuse",
    class_names: Mapping[str, Sequence[str]] | None = None,
    context: ScoreContext = ScoreContext(),
) -> ScoreReport:
    """Axes, CRS per task and across tasks, the bootstrap, rank agreement and sensitivity.

    reference: an encoder name; None picks the first encoder alphabetically (the CLI passes the
    suite's reference). `config` holds the anchors, scales, weights and the bootstrap and
    sensitivity settings (crs.CRSConfig). `baselines` are floor baselines (the suite marks them):
    scored and shown, but left out of the rank statistics. `predictions` (api.predictions) lets the
    default paired case-and-seed bootstrap run; without them the seed-only bootstrap runs, labelled.
    Records of several grids are refused. So is an encoder with an incomplete grid (a task, seed, label
    fraction or condition the others have, or stored predictions when the others have theirs): a
    DataError names it and what it lacks, unless `incomplete="exclude"` leaves it out, with a note, and
    scores the others exactly as without it (grid_stage). `class_names` (task -> names) lets the axis
    evidence name classes (the records hold indices only). `context`: what the caller knows of the inputs
    (their fingerprint, notes to lead with, the results view, a comparison's sources), carried into the report.
    """
    notes: Notes = list(context.lead_notes)

    def keep(stage_result):
        result, stage_notes = stage_result
        notes.extend(stage_notes)
        return result

    given = Records.of(records)
    kept, predictions = keep(grid_stage(given.frame, predictions, incomplete))
    records = Records(kept, refits=refits_for(given.refits, kept))  # validated once, above; a subset stays valid
    axis_scores = keep(axes_stage(records, config, predictions))
    reference = keep(reference_stage(list(axis_scores.encoders), reference))
    baselines = keep(baseline_stage(list(axis_scores.encoders), baselines))
    config = keep(config_stage(config, axis_scores))
    point = keep(point_stage(axis_scores, reference, config.score_definition))
    boot = keep(bootstrap_stage(records, axis_scores, reference, config, predictions))
    overall = with_intervals(point.overall, boot.overall if boot else None)
    agreement = keep(agreement_stage(overall, axis_scores.axes, baselines, boot, config, len(axis_scores.seeds)))
    sensitivity = keep(sensitivity_stage(axis_scores, reference, config))
    parts = keep(components_stage(axis_scores, reference, config, boot, baselines))
    subgroups = keep(subgroup_stage(records, predictions, axis_scores, reference, config, boot, class_names))
    return ScoreReport(
        reference=reference,
        axes_used=tuple(axis_scores.axes),
        axes_missing=dict(axis_scores.missing),
        axes_partial=axis_scores.partial_axes(),
        baselines=tuple(baselines),
        notes=tuple(notes),
        settings=settings_of(config, reference, axis_scores, baselines, context),
        inputs_key=context.inputs_key,
        point=_point_tables(axis_scores, point, boot, overall, agreement, sensitivity, baselines, records),
        intervals=_interval_tables(axis_scores, reference, config, boot),
        tier=_tier_tables(axis_scores, boot),
        agreement=RankAgreement(agreement.table, agreement.reversed_pairs),
        components=parts,
        evidence=Evidence(axis_evidence(records, class_names), class_table(records, class_names)),
        subgroups=subgroups,
    )


def _with_axes(columns: Sequence[str], optional: Sequence[str]) -> list[str]:
    """A table's columns with the optional axes asked for placed after the four."""
    at = list(columns).index(AXES[-1]) + 1
    return [*columns[:at], *optional, *columns[at:]]


def _sorted_by_crs(table: pd.DataFrame) -> pd.DataFrame:
    return table.sort_values(["crs_rank", "crs"], ascending=[True, False], kind="stable")


def _point_tables(axis_scores: AxisScores, point: PointScores, boot: SeedBootstrap | CaseBootstrap | None,
                  overall: pd.DataFrame, agreement: Agreement, sensitivity: pd.DataFrame, baselines: tuple[str, ...],
                  records: Records) -> PointTables:
    overall = overall.copy()
    overall["auroc_rank"] = agreement.auroc_rank
    overall["baseline"] = overall.index.isin(baselines)
    optional = [SUBGROUP_AXIS] if SUBGROUP_AXIS in axis_scores.axes else []  # after the four, only when asked
    scores = _sorted_by_crs(overall.reindex(columns=_with_axes(SCORE_COLUMNS, optional)))
    scores.index.name = "encoder"
    frames = []
    for task, table in point.by_task.items():
        table = with_intervals(table, boot.results[task] if boot else None)
        table["baseline"] = table.index.isin(baselines)
        frames.append(_sorted_by_crs(table).reset_index().reindex(columns=_with_axes(TASK_SCORE_COLUMNS, optional)))
    return PointTables(
        scores=scores,
        scores_by_task=pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TASK_SCORE_COLUMNS),
        axes=axis_scores.table,
        axes_by_task=axis_scores.per_task,
        axes_by_seed=axis_scores.per_seed,
        profile=point.profile,
        seed_summary=records.seed_means(),
        weight_sensitivity=sensitivity,
    )


def _interval_tables(axis_scores: AxisScores, reference: str, config: CRSConfig,
                     boot: SeedBootstrap | CaseBootstrap | None) -> IntervalTables:
    cases = isinstance(boot, CaseBootstrap)
    return IntervalTables(
        label=boot.label if boot else None,
        target=target_sentence("none" if boot is None else "cases" if cases else "seeds",
                               boot.refits if cases else {}, config.target),
        rank_distribution=boot.overall.rank_distribution if boot else pd.DataFrame(),
        axis_intervals=boot.axis_intervals if cases else pd.DataFrame(),
        pair_intervals=boot.pair_intervals if cases else pd.DataFrame(),
        fitted_probes=fitted_probe_table(boot) if cases else pd.DataFrame(),
        gap_variance=leading_gap_variance(boot, axis_scores, reference, config) if cases else {},
    )


def _tier_tables(axis_scores: AxisScores, boot: SeedBootstrap | CaseBootstrap | None) -> TierTables:
    if boot is None:
        return TierTables(pd.DataFrame(), pd.DataFrame(), (), {})
    return TierTables(boot.overall.pairwise, boot.overall.tier, boot.overall.leading_tier,
                      {t: boot.results[t].leading_tier for t in axis_scores.tasks})
