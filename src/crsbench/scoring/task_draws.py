"""One task's share of the paired case-and-seed bootstrap (scoring/case_bootstrap.py): which prediction
vectors its axes read (plan_tasks), and their axis values under each draw's case weights (task_axis_values).

A task's draws are multinomial counts over the clusters of its test set (its shift set has its own),
shared by every encoder, seed, label fraction and perturbed copy of the same case. Every metric is
recomputed under those weights (metrics/weighted.py), the AUROCs of a task for all draws at once by the
batched or linearised engine (bootstrap_batched, bootstrap_linear), then the four axes (axis_math).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.crs import axis_math
from crsbench.crs.definition import SUBGROUP_AXIS
from crsbench.errors import DataError
from crsbench.metrics.weighted import WeightedMetrics, case_major
from crsbench.results.predictions import Predictions
from crsbench.results.record_set import Records, validated
from crsbench.scoring.axes import AxisScores, training_prior
from crsbench.scoring.bootstrap_batched import draw_aurocs
from crsbench.scoring.bootstrap_linear import draw_aurocs_linear
from crsbench.scoring.subgroup_axis import worst_auroc
from crsbench.scoring.subgroups import scored_probabilities

MAX_CELLS = 4_000_000  # draws x cases held at once per weight matrix
# The engines by name (the settings' `bootstrap_engine`, "auto" aside): the function that computes every AUROC
# draw of a set at once, or None for the reference engine, one vector and one chunk of draws at a time.
AUROC_ENGINES = {"batched": draw_aurocs, "linearised": draw_aurocs_linear, "reference": None}
SHIFT_PREFIX = "shift:"  # precomputed AUROCs on the shift set, apart from the same hash on the test set


def cluster_counts(rng: np.random.Generator, n_clusters: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_clusters): how often each cluster is drawn in a resample of n_clusters."""
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_draws)


@dataclass
class TaskPlan:
    """What one task's per-draw axes need: the prediction vector per record, by grid position."""

    task: str
    axes: tuple[str, ...]
    test_set: str
    shift_set: str | None
    full: dict[tuple[int, int], str]  # (encoder, seed) -> probability hash, clean at 100%
    prior: dict[tuple[int, int], tuple[float, ...]] = field(default_factory=dict)  # (encoder, seed) -> training prior
    fractions: list[float] = field(default_factory=list)
    curve: dict[tuple[int, int, int], str] = field(default_factory=dict)  # (e, s, fraction index) -> hash
    perturbed: list[tuple[str, int]] = field(default_factory=list)
    pert: dict[tuple[int, int, int], str] = field(default_factory=dict)  # (e, s, condition index) -> hash
    shift: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    subgroup_masks: tuple[np.ndarray, ...] = ()  # the optional subgroup axis's subgroups (scoring/subgroup_axis.py)


def _common_grid(frame: pd.DataFrame, columns: list[str], units: int) -> list[tuple]:
    """Values of `columns` present for every (encoder, seed) unit, sorted."""
    keys = frame[columns].apply(tuple, axis=1)
    per_unit = keys.groupby([frame["encoder"], frame["seed"]]).agg(set)
    if len(per_unit) < units:
        return []
    return sorted(set.intersection(*per_unit.tolist()))


def plan_tasks(records: Records | pd.DataFrame, stored: Predictions, axis_scores: AxisScores) -> list[TaskPlan]:
    """Map the records the axes used to their prediction files; DataError when some are missing."""
    rec = validated(records)
    rec = rec[rec["encoder"].isin(axis_scores.encoders) & rec["task"].isin(axis_scores.tasks)
              & rec["seed"].isin(axis_scores.seeds) & rec["auroc"].notna()]
    rec = rec.merge(stored.index[["record_key", "test_set", "probs"]], on="record_key", how="left")
    enc = {e: i for i, e in enumerate(axis_scores.encoders)}
    seed = {s: i for i, s in enumerate(axis_scores.seeds)}
    units = len(enc) * len(seed)
    plans = []
    for t, task in enumerate(axis_scores.tasks):
        axes = tuple(a for a, k in zip(axis_scores.axes, axis_scores.task_mask[t]) if k)
        rows = rec[rec["task"] == task]
        clean = rows[rows["condition_kind"] == "clean"]
        full = clean[clean["fraction"] == 1.0]
        needed = [full]
        plan = TaskPlan(task, axes, "", None, {})
        if SUBGROUP_AXIS in axes:
            plan.subgroup_masks = axis_scores.worst_subgroups.masks[task]
        if "label_efficiency" in axes:
            plan.fractions = [f for (f,) in _common_grid(clean, ["fraction"], units)]
            needed.append(clean[clean["fraction"].isin(plan.fractions)])
        if "robustness" in axes:
            at_full = rows[rows["fraction"] == 1.0]
            pert = at_full[at_full["condition_kind"] == "perturbation"]
            plan.perturbed = _common_grid(pert, ["condition", "severity"], units) if len(pert) else []
            keys = pert[["condition", "severity"]].apply(tuple, axis=1) if len(pert) else pd.Series(dtype=object)
            needed.append(pert[keys.isin(plan.perturbed)] if len(pert) else pert)
            needed.append(at_full[at_full["condition_kind"] == "shift"])
        used = pd.concat(needed).drop_duplicates("record_key")
        if used["probs"].isna().any():
            first = used[used["probs"].isna()].iloc[0]
            raise DataError(
                f"record {first['record_key']} ({first['encoder']}, {task}, seed {first['seed']}, "
                f"{first['condition']}) has no stored predictions: the case-level bootstrap needs every record's"
            )
        test_sets = set(used.loc[used["condition_kind"] != "shift", "test_set"])
        if len(test_sets) != 1:
            raise DataError(f"task {task!r}: records scored on {len(test_sets)} different test sets; expected one")
        plan.test_set = test_sets.pop()
        shift_sets = set(used.loc[used["condition_kind"] == "shift", "test_set"])
        plan.shift_set = shift_sets.pop() if len(shift_sets) == 1 else None
        for row in used.itertuples():
            e, s = enc[row.encoder], seed[row.seed]
            if row.condition_kind == "clean":
                if row.fraction == 1.0:
                    plan.full[(e, s)] = row.probs
                    prior = training_prior(row._asdict())
                    if "calibration" in axes and prior is None:
                        raise DataError(f"record {row.record_key} ({row.encoder}, {task}, seed {row.seed}) has no "
                                        "training class counts: the calibration axis (Brier skill) needs them")
                    plan.prior[(e, s)] = tuple(prior) if prior is not None else ()
                if row.fraction in plan.fractions:
                    plan.curve[(e, s, plan.fractions.index(row.fraction))] = row.probs
            elif row.condition_kind == "perturbation":
                plan.pert[(e, s, plan.perturbed.index((row.condition, row.severity)))] = row.probs
            elif plan.shift_set is not None:
                plan.shift.setdefault((e, s), []).append(row.probs)
        plans.append(plan)
    return plans


def task_types_of(records: pd.DataFrame) -> dict[str, str]:
    if "task_type" not in records.columns or records["task_type"].isna().any():
        raise DataError("records lack task_type: the case-level bootstrap needs it to recompute metrics")
    return records.groupby("task")["task_type"].first().to_dict()


class _Vectors:
    """WeightedMetrics per probability hash of one test set, built on first use."""

    def __init__(self, stored: Predictions, test_set: str, task_type: str):
        self.stored, self.cases, self.task_type = stored, stored.case_set(test_set), task_type
        self._metrics: dict[str, WeightedMetrics] = {}
        self._priors: dict[tuple[float, ...], WeightedMetrics] = {}

    def probabilities(self, digest: str) -> np.ndarray:
        """The vector as the axes read it: float64, single-label rows summing to 1 again after float32 rounding."""
        return scored_probabilities(self.stored.probabilities(digest), self.task_type)

    def build(self, digest: str) -> WeightedMetrics:
        """The vector's WeightedMetrics, not kept."""
        return WeightedMetrics(self.task_type, self.cases.labels, self.probabilities(digest))

    def get(self, digest: str) -> WeightedMetrics:
        if digest not in self._metrics:
            self._metrics[digest] = self.build(digest)
        return self._metrics[digest]

    def prior(self, prevalence: tuple[float, ...]) -> WeightedMetrics:
        """The prior predictor's metrics: every case predicted the training prevalence."""
        if prevalence not in self._priors:
            probs = np.tile(np.asarray(prevalence, dtype=np.float64), (len(self.cases.labels), 1))
            self._priors[prevalence] = WeightedMetrics(self.task_type, self.cases.labels, probs)
        return self._priors[prevalence]


def _grid(shape, mapping: dict, values: dict[str, np.ndarray], n: int) -> np.ndarray:
    out = np.empty((n, *shape))
    for position, digest in mapping.items():
        out[(slice(None), *position)] = values[digest]
    return out


def task_digests(plan: TaskPlan) -> tuple[list[str], list[str]]:
    """The probability hashes whose AUROC the task's axes read: on its test set, and on its shift set."""
    test = list(plan.full.values())
    if "label_efficiency" in plan.axes:
        test += plan.curve.values()
    if "robustness" in plan.axes:
        test += plan.pert.values()
    shift = [d for ds in plan.shift.values() for d in ds] if "robustness" in plan.axes else []
    return list(dict.fromkeys(test)), list(dict.fromkeys(shift))


def task_axis_draws(plan: TaskPlan, stored: Predictions, task_type: str, weights: np.ndarray,
                    shift_weights: np.ndarray | None, n_enc: int, n_seeds: int,
                    vectors: dict[str, _Vectors], precomputed: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Axis values (B, E, S, A_task) of one task under case weights (B, n) (and shift weights).

    precomputed: AUROC (B,) per probability hash for these draws (draw_aurocs; shift-set ones keyed
    SHIFT_PREFIX + hash), used in place of computing them here; the result is the same."""
    test = vectors.setdefault(plan.test_set, _Vectors(stored, plan.test_set, task_type))
    b = len(weights)
    weights = case_major(weights)  # once per chunk: every vector gathers rows of it
    shift_weights = case_major(shift_weights) if shift_weights is not None else None
    auroc: dict[str, np.ndarray] = dict(precomputed or {})

    def aurocs(digests, vecs, w):
        for digest in set(digests):
            if digest not in auroc:
                auroc[digest] = vecs.get(digest).auroc(w)

    aurocs(plan.full.values(), test, weights)
    clean = _grid((n_enc, n_seeds), plan.full, auroc, b)
    layers = []
    for axis in plan.axes:
        if axis == "discrimination":
            layers.append(clean)
        elif axis == "calibration":
            brier = {d: test.get(d).brier(weights) for d in set(plan.full.values())}
            prior_brier = {p: test.prior(p).brier(weights) for p in set(plan.prior.values())}
            skill = np.empty((b, n_enc, n_seeds))
            for (e, s), digest in plan.full.items():
                skill[:, e, s] = axis_math.brier_skill(brier[digest], prior_brier[plan.prior[(e, s)]])
            layers.append(skill)
        elif axis == "label_efficiency":
            aurocs(plan.curve.values(), test, weights)
            curve = _grid((n_enc, n_seeds, len(plan.fractions)), plan.curve, auroc, b)
            layers.append(axis_math.label_efficiency(curve, plan.fractions))
        elif axis == "robustness":
            aurocs(plan.pert.values(), test, weights)
            pert = _grid((n_enc, n_seeds, len(plan.perturbed)), plan.pert, auroc, b)
            shift = None
            if plan.shift:
                shift_vectors = vectors.setdefault(plan.shift_set, _Vectors(stored, plan.shift_set, task_type))
                shift_auroc = {}
                for digest in {d for ds in plan.shift.values() for d in ds}:
                    shift_auroc[digest] = auroc.get(SHIFT_PREFIX + digest)
                    if shift_auroc[digest] is None:
                        shift_auroc[digest] = shift_vectors.get(digest).auroc(shift_weights)
                shift = np.empty((b, n_enc, n_seeds))
                for (e, s), digests in plan.shift.items():
                    shift[:, e, s] = np.mean([shift_auroc[d] for d in digests], axis=0)
            layers.append(axis_math.robustness(pert, shift))
        elif axis == SUBGROUP_AXIS:
            worst = {d: worst_auroc(task_type, test.cases.labels, test.probabilities(d), plan.subgroup_masks, weights)
                     for d in set(plan.full.values())}
            layers.append(_grid((n_enc, n_seeds), plan.full, worst, b))
    return np.stack(layers, axis=-1)


def exact_work(plans: Sequence[TaskPlan], stored: Predictions, task_types: dict[str, str],
               n_draws: int) -> tuple[float, int]:
    """(column-case-draws the exact AUROC draws take, cases of the smallest set they read): per task, the
    vectors read x their AUROC columns x the cases of their test (or shift) set x the draws. Read from the
    prediction files' shapes only."""
    total, smallest = 0.0, 0
    for plan in plans:
        test_digests, shift_digests = task_digests(plan)
        for digests, test_set in ((test_digests, plan.test_set), (shift_digests, plan.shift_set)):
            if not digests or test_set is None:
                continue
            n_cases, width = stored.probabilities(digests[0]).shape
            columns = 1 if width == 2 and task_types[plan.task] != "multi_label" else width
            total += float(len(digests)) * columns * n_cases * n_draws
            smallest = n_cases if not smallest else min(smallest, n_cases)
    return total, smallest


def _auroc_draws_of_test_and_shift(plan: TaskPlan, stored: Predictions, task_type: str, counts: np.ndarray,
                                   codes: np.ndarray, shift_counts: np.ndarray | None, shift_codes: np.ndarray | None,
                                   draw=draw_aurocs) -> dict[str, np.ndarray]:
    """AUROC (n_draws,) per probability hash the task reads on its test set and, keyed SHIFT_PREFIX + hash,
    on its shift set, every draw at once (by `draw`: the exact
    draw_aurocs or draw_aurocs_linear). Rank statistics are built per group of vectors and dropped (only
    the few clean 100% vectors stay cached, for the Brier)."""
    test_digests, shift_digests = task_digests(plan)
    test = _Vectors(stored, plan.test_set, task_type)
    out = draw(test.build, test_digests, counts, codes)
    if shift_digests and shift_counts is not None:
        shift = _Vectors(stored, plan.shift_set, task_type)
        shifted = draw(shift.build, shift_digests, shift_counts, shift_codes)
        out.update({SHIFT_PREFIX + d: v for d, v in shifted.items()})
    return out


@dataclass(frozen=True)
class TaskCounts:
    """One task's draws: cluster counts (n_draws, n_clusters) of its test set, row 0 the point (all ones), and the
    cluster index per case; the same of its shift set (None without one)."""

    counts: np.ndarray
    codes: np.ndarray
    shift_counts: np.ndarray | None
    shift_codes: np.ndarray | None

    def __iter__(self):
        return iter((self.counts, self.codes, self.shift_counts, self.shift_codes))

    def weights(self, role: str) -> np.ndarray:
        """Case weights (n_draws, n_cases) of the test set ("test") or the shift set ("shift")."""
        if role == "shift":
            return self.shift_counts[:, self.shift_codes]
        return self.counts[:, self.codes]


def task_counts(plan: TaskPlan, stored: Predictions, rng: np.random.Generator, n_draws: int) -> TaskCounts:
    """The task's cluster counts, drawn from rng: its test set's, then its shift set's. Replaying rng from the
    state it had before this call gives the same counts (the subgroup stage reads the task's draws so)."""
    codes, n_clusters = stored.case_set(plan.test_set).cluster_codes()
    counts = np.vstack([np.ones(n_clusters), cluster_counts(rng, n_clusters, n_draws - 1)])
    shift_codes = shift_counts = None
    if plan.shift_set is not None:
        shift_codes, n_shift = stored.case_set(plan.shift_set).cluster_codes()
        shift_counts = np.vstack([np.ones(n_shift), cluster_counts(rng, n_shift, n_draws - 1)])
    return TaskCounts(counts, codes, shift_counts, shift_codes)


def replayed_counts(plan: TaskPlan, stored: Predictions, state: dict, n_draws: int) -> TaskCounts:
    """The counts task_counts drew from a generator in `state` (its bit generator's state before the draw)."""
    rng = np.random.default_rng()  # the bootstrap's generator is a default_rng too: the state fits it
    rng.bit_generator.state = state
    return task_counts(plan, stored, rng, n_draws)


def task_axis_values(plan: TaskPlan, stored: Predictions, task_type: str, rng: np.random.Generator,
                     seed_counts: np.ndarray, n_enc: int, engine: str) -> np.ndarray:
    """The task's axis values (B + 1, E, A_task) per draw, row 0 the point (unit weights), seeds averaged under
    seed_counts (B + 1, S). The task's cluster counts are drawn from rng here: its test set's, then its shift
    set's, so the draws of every task follow from one stream in the order of the plans.

    engine: "batched" or "linearised" compute every AUROC draw of the task at once (draw_aurocs,
    draw_aurocs_linear); "reference" one vector and one chunk of draws at a time."""
    n_draws, n_seeds = seed_counts.shape
    counts, codes, shift_counts, shift_codes = task_counts(plan, stored, rng, n_draws)
    values = np.empty((n_draws, n_enc, len(plan.axes)))
    vectors: dict[str, _Vectors] = {}
    precomputed: dict[str, np.ndarray] = {}
    all_at_once = AUROC_ENGINES[engine]
    if all_at_once is not None:
        precomputed = _auroc_draws_of_test_and_shift(plan, stored, task_type, counts, codes, shift_counts, shift_codes,
                                                     all_at_once)
    chunk = max(1, MAX_CELLS // max(len(codes), 1))
    for start in range(0, n_draws, chunk):
        part = slice(start, start + chunk)
        cube = task_axis_draws(
            plan, stored, task_type, counts[part][:, codes],
            shift_counts[part][:, shift_codes] if shift_counts is not None else None,
            n_enc, n_seeds, vectors, {d: v[part] for d, v in precomputed.items()},
        )
        c = seed_counts[part]
        values[part] = np.einsum("bs,besa->bea", c, cube) / c.sum(axis=1)[:, None, None]
    return values
