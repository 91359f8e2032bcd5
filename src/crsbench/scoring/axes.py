"""The four reliability axes, computed from run records (docs/records.md).

Records in, tables out. Every axis is first computed per (encoder, task, seed), so that the paired
seed bootstrap can resample seeds; then averaged over seeds; then over tasks. An axis without the
records it needs is reported missing with a reason, never as zero (docs/crs.md, "Axes").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.crs import axis_math
from crsbench.crs.definition import DEFAULT_DELTA, DEFAULT_MARGIN, SUBGROUP_AXIS
from crsbench.metrics import calibration
from crsbench.results.record_set import Records, validated
from crsbench.scoring.subgroup_axis import MISSING_REASON, WorstSubgroups, worst_subgroup_values

AXES: tuple[str, ...] = ("discrimination", "calibration", "label_efficiency", "robustness")

MISSING_REASONS: dict[str, str] = {
    "discrimination": "no clean records at fraction 1.0",
    "calibration": "no clean records at fraction 1.0 with a Brier score and training class counts",
    "label_efficiency": "no clean records below fraction 1.0",
    "robustness": "no perturbation or shift records",
    SUBGROUP_AXIS: MISSING_REASON,
}

# The calibration axis is the Brier skill against the training prior, from the records' Brier score
# alone: one estimator for every record, with or without stored predictions, so estimators never
# mix. A proper score credits calibration together with discrimination, has no floor at which
# "smaller than this test set can measure" reads as perfect, and puts the prior predictor (perfectly
# calibrated, no information) at 0 (docs/crs.md, "Why these axes").
CALIBRATION_AXIS = "brier_skill"
CALIBRATION_NOTE = ("calibration axis: Brier skill against the training prior (1 - Brier / Brier of predicting "
                    "the training prevalence; 0 = the prior predictor, 1 = perfect); ECE and the debiased "
                    "calibration error are shown beside it")

# axis -> the per-task values shown beside it
BESIDE: dict[str, tuple[str, ...]] = {
    "discrimination": ("kappa_quadratic",),
    "calibration": ("ece", "ece_temperature_scaled", "calibration_error", "brier"),
    "label_efficiency": ("sufficient_fraction",),
    "robustness": ("perturbed_auroc",),
}


@dataclass(frozen=True)
class AxisScores:
    """Axis scores at every level of aggregation, plus the seed cube the bootstrap resamples.

    `cube[e, t, s, a]` is the value of available axis `axes[a]` for `encoders[e]`, `tasks[t]`,
    `seeds[s]`; `task_mask[t, a]` says whether task t counts towards axis a (it is complete for every
    encoder and seed). Cube entries outside the mask are 0, so weighted sums need no NaN handling.
    """

    per_seed: pd.DataFrame
    per_task: pd.DataFrame
    table: pd.DataFrame
    cube: np.ndarray
    task_mask: np.ndarray
    encoders: tuple[str, ...]
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    axes: tuple[str, ...]
    missing: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    coverage: dict[str, int] = field(default_factory=dict)  # tasks that count towards each axis
    delta: float = DEFAULT_DELTA
    # the optional subgroup axis's subgroups per task (scoring/subgroup_axis.py); None when it is off
    worst_subgroups: WorstSubgroups | None = None

    def partial_axes(self) -> dict[str, int]:
        """Axes that cover fewer tasks than the most-covered axis: flagged wherever they are shown."""
        most = max(self.coverage.values(), default=0)
        return {axis: n for axis, n in self.coverage.items() if n < most}

    def task_values(self, t: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """Seed cube (E, S, A_t) of task index t restricted to the axes that task counts towards."""
        keep = self.task_mask[t] > 0
        return self.cube[:, t][:, :, keep], tuple(a for a, k in zip(self.axes, keep) if k)


def normalise_records(records: Records | pd.DataFrame) -> pd.DataFrame:
    """Check the columns the axes need, coerce their types, reject records of several grids (once: a
    `Records` value is valid already)."""
    return validated(records)


# --------------------------------------------------------------------------- per-seed axes


def _units(rec: pd.DataFrame) -> pd.DataFrame:
    return rec[["encoder", "task", "seed"]].drop_duplicates()


def _full_clean(rec: pd.DataFrame) -> pd.DataFrame:
    return rec[(rec["condition_kind"] == "clean") & (rec["fraction"] == 1.0)]


def _index_ets(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame.set_index(["encoder", "task", "seed"])[column]


def _common_values(frame: pd.DataFrame, columns: list[str], units: pd.DataFrame) -> dict[str, set]:
    """Per task: the values of `columns` present for every (encoder, seed) unit of that task.

    `units` lists every (encoder, task, seed) in the records, so a unit with no rows at all empties
    the grid instead of being silently skipped (which would mix definitions across encoders).
    """
    keys = frame[columns].apply(tuple, axis=1) if len(frame) else pd.Series(dtype=object)
    have = keys.groupby([frame["encoder"], frame["task"], frame["seed"]]).agg(set).to_dict() if len(frame) else {}
    common: dict[str, set] = {}
    for task, group in units.groupby("task", sort=True):
        sets = [have.get((e, task, s), set()) for e, s in zip(group["encoder"], group["seed"])]
        common[task] = set.intersection(*sets) if sets else set()
    return common


def _label_efficiency(rec: pd.DataFrame, notes: list[str], margin: float) -> pd.DataFrame:
    """Label efficiency and the sample-size answer, per (encoder, task, seed).

    Each task uses the fraction grid common to every encoder and seed, so one definition holds
    across the cohort (axis_math.label_efficiency, axis_math.smallest_sufficient_fraction).
    """
    clean = rec[(rec["condition_kind"] == "clean") & rec["auroc"].notna()]
    grids = _common_values(clean, ["fraction"], _units(rec))
    pieces = []
    for task, grid in grids.items():
        fractions = sorted(f for (f,) in grid)
        if len(fractions) < 2 or fractions[-1] != 1.0:
            if len(set(clean.loc[clean["task"] == task, "fraction"])) > 1:
                notes.append(
                    f"label_efficiency: task {task!r} has no fraction grid below 1.0 common to every "
                    "encoder and seed; it does not count towards the axis"
                )
            continue
        sub = clean[(clean["task"] == task) & clean["fraction"].isin(fractions)]
        curves = sub.pivot_table(index=["encoder", "task", "seed"], columns="fraction", values="auroc")[fractions]
        values = curves.to_numpy(dtype=float)
        pieces.append(pd.DataFrame(
            {
                "label_efficiency": axis_math.label_efficiency(values, fractions),
                "sufficient_fraction": axis_math.smallest_sufficient_fraction(values, fractions, margin),
            },
            index=curves.index,
        ))
    return pd.concat(pieces) if pieces else pd.DataFrame(columns=["label_efficiency", "sufficient_fraction"])


def _condition_grid(rec: pd.DataFrame, kind: str, notes: list[str]) -> pd.DataFrame:
    """Rows of `kind` at fraction 1 restricted, per task, to the (condition, severity) grid every unit has."""
    rows = rec[(rec["condition_kind"] == kind) & (rec["fraction"] == 1.0) & rec["auroc"].notna()]
    if rows.empty:
        return rows
    grids = _common_values(rows, ["condition", "severity"], _units(rec))
    keys = rows[["condition", "severity"]].apply(tuple, axis=1)
    keep = pd.Series(False, index=rows.index)
    for task, grid in grids.items():
        in_task = rows["task"] == task
        present = set(keys[in_task])
        if grid != present and present:
            notes.append(
                f"robustness: task {task!r} uses the {len(grid)} {kind} condition(s) x severities common "
                f"to every encoder and seed, of {len(present)} present"
            )
        keep |= in_task & keys.isin(grid)
    return rows[keep]


def _robustness(rec: pd.DataFrame, clean_auroc: pd.Series, notes: list[str], delta: float) -> pd.DataFrame:
    """Robustness (axis_math.robustness: the AUROC level kept) with its parts and the two retentions."""
    pert = _condition_grid(rec, "perturbation", notes)
    shift = _condition_grid(rec, "shift", notes)
    keys = ["encoder", "task", "seed"]
    pert_wide = pert.pivot_table(index=keys, columns=["condition", "severity"], values="auroc") if len(pert) else None
    shift_auroc = shift.groupby(keys)["auroc"].mean() if len(shift) else pd.Series(dtype=float)
    units = sorted(set(pert_wide.index if pert_wide is not None else []) | set(shift_auroc.index))
    if not units:
        return pd.DataFrame(columns=["robustness", "perturbation_retention", "shift_retention", "perturbed_auroc", "shift_auroc"])
    index = pd.MultiIndex.from_tuples(units, names=keys)
    clean = clean_auroc.reindex(index).to_numpy(dtype=float)
    out = pd.DataFrame(index=index)
    out["perturbed_auroc"] = np.nan
    out["perturbation_retention"] = np.nan
    out["shift_auroc"] = shift_auroc.reindex(index)
    out["shift_retention"] = axis_math.retention(out["shift_auroc"].to_numpy(), clean, delta)
    if pert_wide is not None:
        for task, block in pert_wide.groupby(level="task"):
            block = block.dropna(axis=1, how="all")
            where = index.get_indexer(block.index)
            values = block.to_numpy(dtype=float)
            out.iloc[where, out.columns.get_loc("perturbed_auroc")] = values.mean(axis=1)
            out.iloc[where, out.columns.get_loc("perturbation_retention")] = axis_math.retention(
                values, clean[where, None], delta
            ).mean(axis=1)
    # half and half where both exist, else whichever part exists (axis_math.robustness)
    out["robustness"] = out[["perturbed_auroc", "shift_auroc"]].mean(axis=1, skipna=True).to_numpy()
    return out


def training_prior(row) -> np.ndarray | None:
    """The training labels' prevalence of a record (a mapping with positives_train and n_train), or None."""
    train = row.get("positives_train")  # a list: decoded where the records were loaded (Records.of)
    if train is None or not row.get("n_train"):
        return None
    return np.asarray(train, dtype=float) / row["n_train"]


def _brier_skill(full: pd.DataFrame) -> pd.Series:
    """1 - Brier / Brier of the prior predictor, the prior being the training labels' prevalence at 100%."""
    def prior_brier(row) -> float:
        prior, test = training_prior(row), row["positives_eval"]
        if prior is None or test is None or not row["n_eval"]:
            return np.nan
        if row.get("task_type") == "multi_label":
            return float(axis_math.prior_brier_multi_label(prior, test, row["n_eval"]))
        return float(axis_math.prior_brier_single_label(prior, test))

    if full.empty or "positives_train" not in full:
        return pd.Series(dtype=float)
    prior = full.apply(prior_brier, axis=1)
    skill = axis_math.brier_skill(full["brier"].to_numpy(dtype=float), prior.to_numpy(dtype=float))
    return pd.Series(skill, index=pd.MultiIndex.from_frame(full[["encoder", "task", "seed"]]))


SUMMARY_EXTRAS: tuple[str, ...] = ("ece", "brier", "nll", "perturbed_auroc")

PER_SEED_EXTRAS: tuple[str, ...] = (
    "kappa_quadratic",
    "ece",
    "ece_temperature_scaled",
    "calibration_error",
    "brier",
    "nll",
    "sufficient_fraction",
    "perturbed_auroc",
    "shift_auroc",
    "perturbation_retention",
    "shift_retention",
    "not_assessable",
)


def debiased_calibration_errors(records: pd.DataFrame, predictions) -> pd.Series | None:
    """calibration.calibration_error_debiased of every clean fraction-1.0 record, by record_key, from its
    stored per-case predictions (crsbench.results.predictions.Predictions); None when any of them has none.
    Shown beside the calibration axis; it is not the axis."""
    rec = validated(records)
    if predictions is None or not {"record_key", "task_type"} <= set(rec.columns):
        return None
    full = _full_clean(rec)
    full = full[full["ece"].notna()] if "ece" in full.columns else full
    located = full.merge(predictions.index[["record_key", "test_set", "probs"]], on="record_key", how="left")
    if full.empty or located["probs"].isna().any():
        return None
    errors, cache = {}, {}
    for row in located.itertuples():
        if (row.probs, row.test_set) not in cache:
            labels = predictions.case_set(row.test_set).labels
            probs = predictions.probabilities(row.probs).astype(np.float64)
            if row.task_type != "multi_label":
                probs /= probs.sum(axis=1, keepdims=True)  # float32 rounding: rows sum to 1 again
            cache[(row.probs, row.test_set)] = calibration.calibration_error_debiased(row.task_type, labels, probs)
        errors[row.record_key] = cache[(row.probs, row.test_set)]
    return pd.Series(errors, name="calibration_error", dtype=float)


def _optional(full: pd.DataFrame, values: pd.Series | None) -> pd.Series:
    """Values aligned with `full`'s rows (None: a column older records lack), numeric, by (encoder, task, seed)."""
    numeric = pd.Series(np.nan, index=full.index) if values is None else pd.to_numeric(values, errors="coerce")
    return _index_ets(full.assign(_value=numeric), "_value")


def per_seed_axes(records: pd.DataFrame, notes: list[str] | None = None, *, delta: float = DEFAULT_DELTA,
                  margin: float = DEFAULT_MARGIN,
                  calibration_errors: pd.Series | None = None) -> pd.DataFrame:
    """Axis values per (encoder, task, seed), NaN where the records for an axis are absent.

    Columns: encoder, task, seed, the four axes (PROTOCOL section 6, docs/crs.md), then
    PER_SEED_EXTRAS: quadratic kappa beside discrimination (ordinal tasks; NaN otherwise); ECE, ECE
    after the validation temperature, the debiased calibration error (`calibration_errors`, by
    record_key, NaN without stored predictions), Brier and NLL beside calibration; the smallest sufficient fraction
    beside label efficiency; the perturbed and shift AUROC levels and the two retentions beside
    robustness; whether the clean AUROC is less than `delta` above chance (a flag only).
    """
    notes = [] if notes is None else notes
    rec = normalise_records(records)
    full = _full_clean(rec)
    eta = rec[["encoder", "task", "seed"]].drop_duplicates().sort_values(["encoder", "task", "seed"])
    index = pd.MultiIndex.from_frame(eta)
    out = pd.DataFrame(index=index)
    clean_auroc = _index_ets(full, "auroc")
    out["discrimination"] = clean_auroc.reindex(index)
    out["calibration"] = _brier_skill(full).reindex(index)
    out["kappa_quadratic"] = _optional(full, full.get("kappa_quadratic")).reindex(index)
    out["ece"] = _index_ets(full, "ece").reindex(index)
    out["ece_temperature_scaled"] = _optional(full, full.get("ece_temperature_scaled")).reindex(index)
    errors = full["record_key"].map(calibration_errors) if calibration_errors is not None and "record_key" in full else None
    out["calibration_error"] = _optional(full, errors).reindex(index)
    out["brier"] = _index_ets(full, "brier").reindex(index)
    out["nll"] = _index_ets(full, "nll").reindex(index)
    for part in (_label_efficiency(rec, notes, margin), _robustness(rec, clean_auroc, notes, delta)):
        for column in part.columns:
            out[column] = part[column].reindex(index) if len(part) else np.nan
    out["not_assessable"] = axis_math.not_assessable(out["discrimination"].to_numpy(dtype=float), delta)
    columns = list(AXES) + list(PER_SEED_EXTRAS)
    return out[columns].reset_index()


# --------------------------------------------------------------------------- the seed cube


def seed_weighted_axis_values(cube: np.ndarray, task_mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Axis values (B, E, A) for B seed draws, each given as seed counts (B, S).

    A draw's seed-mean is the count-weighted mean over seeds (a seed drawn twice counts twice);
    the axis value is then the mean over the tasks in `task_mask`. With counts all ones this is the
    plain point estimate, so the point score and every bootstrap draw go through the same code.
    """
    counts = np.asarray(counts, dtype=float)
    n_seeds = counts.sum(axis=1, keepdims=True)  # (B, 1)
    seed_means = np.einsum("bs,etsa->beta", counts, cube) / n_seeds[:, :, None, None]
    weights = task_mask / task_mask.sum(axis=0, keepdims=True)  # (T, A), columns sum to 1
    return np.einsum("beta,ta->bea", seed_means, weights)


# --------------------------------------------------------------------------- assembling


def _cohort(per_seed: pd.DataFrame, notes: list[str]) -> tuple[list[str], list[str], list[int]]:
    """Encoders, the tasks every encoder has, and the seeds every (encoder, task) has, at fraction 1."""
    has_clean = per_seed[per_seed["discrimination"].notna()]
    encoders = sorted(per_seed["encoder"].unique())
    if has_clean.empty:
        raise ValueError(f"cannot score: {MISSING_REASONS['discrimination']}")
    tasks = []
    for task in sorted(per_seed["task"].unique()):
        have = set(has_clean.loc[has_clean["task"] == task, "encoder"])
        if have == set(encoders):
            tasks.append(task)
        else:
            notes.append(f"task {task!r} dropped: encoder(s) {', '.join(sorted(set(encoders) - have))} lack it")
    if not tasks:
        raise ValueError("cannot score: no task has clean fraction-1.0 records for every encoder")
    seed_sets = [
        set(group["seed"]) for _, group in has_clean[has_clean["task"].isin(tasks)].groupby(["encoder", "task"])
    ]
    seeds = sorted(set.intersection(*seed_sets))
    every = sorted(set.union(*seed_sets))
    if not seeds:
        raise ValueError("cannot score: no seed is common to every encoder and task")
    if seeds != every:
        notes.append(f"seed(s) {', '.join(map(str, sorted(set(every) - set(seeds))))} dropped: not present for every encoder "
                     "and task")
    return encoders, tasks, seeds


def compute_axes(records: Records | pd.DataFrame, *, delta: float = DEFAULT_DELTA,
                 margin: float = DEFAULT_MARGIN, predictions=None, subgroup_axis: Sequence[str] | None = None) -> AxisScores:
    """All four axes from a records table: per seed, per task (seed-mean) and per encoder (task-mean); with
    `subgroup_axis` (attribute names) the optional fifth, read from the stored predictions (scoring/subgroup_axis.py).

    `delta` is the chance margin of the not-assessable flag, `margin` the AUROC margin of the
    sample-size answer. The cross-task value of an axis is the mean of its per-task values over the
    tasks that count towards it (`coverage`). With `predictions` (the stored per-case predictions
    of these records) the debiased calibration error is shown beside the calibration axis.
    """
    notes: list[str] = []
    records = Records.of(records)  # validated here once, for every step below
    calibration_errors = debiased_calibration_errors(records, predictions)
    notes.append(CALIBRATION_NOTE)
    per_seed = per_seed_axes(records, notes, delta=delta, margin=margin, calibration_errors=calibration_errors)
    names, worst_subgroups = AXES, None
    if subgroup_axis:
        names = (*AXES, SUBGROUP_AXIS)
        per_seed[SUBGROUP_AXIS] = np.nan
        if predictions is not None:
            values, worst_subgroups, axis_notes = worst_subgroup_values(records.frame, predictions, subgroup_axis)
            notes += axis_notes
            keys = pd.MultiIndex.from_frame(per_seed[["encoder", "task", "seed"]])
            per_seed[SUBGROUP_AXIS] = values.reindex(keys).to_numpy(dtype=float) if len(values) else np.nan
    encoders, tasks, seeds = _cohort(per_seed, notes)
    grid = pd.MultiIndex.from_product([encoders, tasks, seeds], names=["encoder", "task", "seed"])
    full = per_seed.set_index(["encoder", "task", "seed"]).reindex(grid)
    shape = (len(encoders), len(tasks), len(seeds))

    available, missing, masks, layers = [], {}, [], []
    for axis in names:
        values = full[axis].to_numpy(dtype=float).reshape(shape)
        complete = np.isfinite(values).all(axis=(0, 2))  # per task
        partial = np.isfinite(values).any(axis=(0, 2)) & ~complete
        for t in np.flatnonzero(partial):
            notes.append(f"{axis}: task {tasks[t]!r} dropped from the axis: not complete for every encoder and seed")
        if complete.any():
            available.append(axis)
            masks.append(complete)
            layers.append(np.where(complete[None, :, None], values, 0.0))
        else:
            missing[axis] = (
                MISSING_REASONS[axis] if not partial.any() else "records incomplete in every task (see notes)"
            )
            if axis == SUBGROUP_AXIS and predictions is None:
                missing[axis] = "no stored per-case predictions to read subgroups from"
    cube = np.stack(layers, axis=-1)
    task_mask = np.stack(masks, axis=-1).astype(float)

    per_task = _per_task_table(full, encoders, tasks, seeds, available, task_mask, delta, names)
    table = pd.DataFrame(
        seed_weighted_axis_values(cube, task_mask, np.ones((1, len(seeds))))[0],
        index=pd.Index(encoders, name="encoder"),
        columns=available,
    )
    table = table.reindex(columns=list(names))
    extras = per_task.groupby("encoder")[list(SUMMARY_EXTRAS)].mean()
    table = table.join(extras)
    table["n_not_assessable"] = per_task.groupby("encoder")["not_assessable"].sum().astype(int)
    coverage = {axis: int(task_mask[:, a].sum()) for a, axis in enumerate(available)}
    kept = per_seed["task"].isin(tasks) & per_seed["seed"].isin(seeds)
    return AxisScores(
        per_seed=per_seed[kept].reset_index(drop=True),
        per_task=per_task,
        table=table,
        cube=cube,
        task_mask=task_mask,
        encoders=tuple(encoders),
        tasks=tuple(tasks),
        seeds=tuple(int(s) for s in seeds),
        axes=tuple(available),
        missing=missing,
        notes=tuple(notes),
        coverage=coverage,
        delta=delta,
        worst_subgroups=worst_subgroups,
    )


def _per_task_table(full, encoders, tasks, seeds, available, task_mask, delta, names=AXES) -> pd.DataFrame:
    """Seed-means per (encoder, task); an axis a task does not count towards is NaN there.

    not_assessable is decided on the seed-mean clean AUROC, the value the table shows.
    """
    means = full.drop(columns=["not_assessable"]).groupby(level=["encoder", "task"]).mean(numeric_only=True)
    means["not_assessable"] = axis_math.not_assessable(means["discrimination"].to_numpy(dtype=float), delta)
    for a, axis in enumerate(available):
        unused = [t for i, t in enumerate(tasks) if not task_mask[i, a]]
        means.loc[means.index.get_level_values("task").isin(unused), axis] = np.nan
    for axis in names:
        if axis not in available:
            means[axis] = np.nan
    means["n_seeds"] = len(seeds)
    columns = list(names) + list(PER_SEED_EXTRAS) + ["n_seeds"]
    return means[columns].reset_index()
