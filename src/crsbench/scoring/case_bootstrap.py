"""The paired hierarchical bootstrap of PROTOCOL section 8: test cases and seeds resampled together.

One draw is
- per task, multinomial counts over the clusters of its test set (patients, lesions or images; the
  case itself when the dataset has none), shared by every encoder, seed, label fraction and
  perturbed copy of the same case; the shift set has its own cluster counts;
- seed counts drawn with replacement, shared by every encoder and task (seeds fix the label
  subsets every encoder sees, so they are paired).
Every metric is recomputed under the case weights (weighted_metrics), then the whole chain: per
(encoder, task, seed) the four axes (axis_math), seed means under the seed counts, the CRS per
task and on the cross-task means (crs.crs_batch), ranks. Draw 0 is the unit-weight point
estimate, so the point and the draws go through one code path.

Summaries: percentile intervals per encoder (CRS) and per axis; rank distribution; P(rank 1);
pairwise P(CRS e > CRS f); a simultaneous leading tier (leading_tier).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.crs import axis_math
from crsbench.scoring.axes import AxisScores, training_prior
from crsbench.scoring.bootstrap_batched import draw_aurocs
from crsbench.scoring.bootstrap_linear import draw_aurocs_linear
from crsbench.scoring.refits import (RefitSpread, cross_task_terms, refit_axes, refit_rng, spread_from_axes,
                                    task_refit_draws, whole_curve)
from crsbench.crs.definition import CRSConfig, crs_batch, reference_index
from crsbench.errors import DataError
from crsbench.results.predictions import Predictions
from crsbench.results.record_set import Records, validated
from crsbench.scoring.statistics import OVERALL, BootstrapResult, competition_ranks
from crsbench.metrics.weighted import WeightedMetrics, case_major

CASE_LABEL = "paired case-and-seed bootstrap (test-set clusters and seeds resampled)"
REFIT_LABEL = ("paired case, seed and training-sample bootstrap (test-set clusters and seeds resampled, "
               "{k} paired refits per task at 100 % labels)")
INTERVAL_METHOD = "percentile"
MAX_CELLS = 4_000_000  # draws x cases held at once per weight matrix
SHIFT_PREFIX = "shift:"  # precomputed AUROCs on the shift set, apart from the same hash on the test set
# batched: every AUROC of a task for all draws at once, exactly (bootstrap_batched); reference: the same
# values one vector at a time; linearised: the AUROC draws by one matrix product, the degenerate second-order
# term of the Mann-Whitney statistic dropped (bootstrap_linear); auto: batched while its work is at most
# EXACT_LIMIT column-case-draws (about 2.5 CPU-minutes), linearised beyond.
ENGINES = ("auto", "batched", "reference", "linearised")
EXACT_LIMIT = 2e10


# --------------------------------------------------------------------------- the simultaneous tier


def leading_tier(point: np.ndarray, draws: np.ndarray, level: float) -> pd.DataFrame:
    """A simultaneous confidence set for the best encoder, from the N - 1 differences to the top.

    top = argmax of the point CRS. For every other encoder e, D_e = CRS_top - CRS_e with bootstrap
    standard error se_e. Multiplicity is controlled by the max statistic: q is the `level` quantile
    over draws of max_e (D*_e - D_e) / se_e, and the simultaneous lower bounds D_e - q se_e hold
    for all e at once with probability `level`. e leaves the tier only when its bound is above 0;
    an encoder whose difference has no spread (se_e = 0) leaves it when D_e > 0.
    Columns: diff, se, diff_low (simultaneous lower bound), in_leading_tier.
    """
    top = int(np.argmax(point))
    diff = point[top] - point
    diff_draws = draws[:, [top]] - draws
    se = diff_draws.std(axis=0, ddof=1) if len(draws) > 1 else np.zeros_like(diff)
    spread = se > 0
    spread[top] = False
    if spread.any():
        studentised = (diff_draws[:, spread] - diff[spread]) / se[spread]
        q = float(np.quantile(studentised.max(axis=1), level))
    else:
        q = 0.0
    low = np.where(spread, diff - q * se, diff)
    keep = np.where(spread, low <= 0, diff <= 0)
    keep[top] = True
    return pd.DataFrame({"diff": diff, "se": se, "diff_low": low, "in_leading_tier": keep})


def summarise(encoders: Sequence[str], draws: np.ndarray, *, reference: int, level: float, n_seeds: int) -> BootstrapResult:
    """Intervals, rank distribution, pairwise probabilities and the tier; row 0 of `draws` is the point."""
    encoders = list(encoders)
    point, draws = draws[0], draws[1:]
    n = len(encoders)
    index = pd.Index(encoders, name="encoder")
    alpha = 1.0 - level
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
    low[reference] = high[reference] = np.nan  # CRS 0 by definition: shown as "reference"
    ranks = competition_ranks(draws)
    rank_probability = np.stack([(ranks == r).mean(axis=0) for r in range(1, n + 1)], axis=1)
    intervals = pd.DataFrame({"crs": point, "ci_low": low, "ci_high": high, "p_rank1": rank_probability[:, 0]}, index=index)
    greater = (draws[:, :, None] > draws[:, None, :]).mean(axis=0)
    np.fill_diagonal(greater, np.nan)
    tier = leading_tier(point, draws, level).set_index(index)
    return BootstrapResult(
        encoders=tuple(encoders),
        intervals=intervals,
        rank_distribution=pd.DataFrame(rank_probability, index=index, columns=[f"rank_{r}" for r in range(1, n + 1)]),
        pairwise=pd.DataFrame(greater, index=index, columns=pd.Index(encoders, name="versus")),
        tier=tier,
        leading_tier=tuple(e for e, keep in zip(encoders, tier["in_leading_tier"]) if keep),
        top=encoders[int(np.argmax(point))],
        draws=draws,
        n_boot=int(draws.shape[0]),
        n_seeds=int(n_seeds),
        level=float(level),
        method=INTERVAL_METHOD,
    )


# --------------------------------------------------------------------------- draws


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


class _Vectors:
    """WeightedMetrics per probability hash of one test set, built on first use."""

    def __init__(self, stored: Predictions, test_set: str, task_type: str):
        self.stored, self.cases, self.task_type = stored, stored.case_set(test_set), task_type
        self._metrics: dict[str, WeightedMetrics] = {}
        self._priors: dict[tuple[float, ...], WeightedMetrics] = {}

    def build(self, digest: str) -> WeightedMetrics:
        """The vector's WeightedMetrics, not kept."""
        probs = self.stored.probabilities(digest).astype(np.float64)
        if self.task_type != "multi_label":
            probs /= probs.sum(axis=1, keepdims=True)  # float32 rounding: rows sum to 1 again
        return WeightedMetrics(self.task_type, self.cases.labels, probs)

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
    return np.stack(layers, axis=-1)


# --------------------------------------------------------------------------- the bootstrap


@dataclass(frozen=True)
class CaseBootstrap:
    """The paired case-and-seed bootstrap per scope ("overall" and each task).

    results: BootstrapResult per scope (draws exclude the point). axis_intervals: per scope,
    encoder and axis, the point value and its percentile interval, and the difference to the reference
    with its paired interval. auroc_draws: (B, N) cross-task
    discrimination per draw, for the rank statistics.
    """

    results: dict[str, BootstrapResult]
    auroc_draws: np.ndarray
    axis_intervals: pd.DataFrame
    pair_intervals: pd.DataFrame = field(default_factory=pd.DataFrame)  # pair_rows, every scope
    label: str = CASE_LABEL
    method: str = INTERVAL_METHOD
    engine: str = "batched"  # the engine that ran (auto resolved)
    exact_work: float = 0.0  # column-case-draws of the exact AUROC draws, what auto compared with EXACT_LIMIT
    smallest_set: int = 0  # cases of the smallest test or shift set the AUROC draws read
    axis_draws: np.ndarray | None = None  # (B, E, A) cross-task axis values per draw (no point): the components'
    # the narrower intervals of these fitted probes (test cases and seeds only), per scope; the same as
    # `results` when no refits were stored
    fitted_probes: dict[str, BootstrapResult] = field(default_factory=dict)
    refits: dict[str, int] = field(default_factory=dict)  # task -> refits drawn; empty: training samples not included
    refit_notes: tuple[str, ...] = ()

    @property
    def overall(self) -> BootstrapResult:
        return self.results[OVERALL]

    @property
    def training_samples(self) -> bool:
        """Whether the intervals include the spread over training samples (every task had its refits)."""
        return bool(self.refits) and len(self.refits) == len(self.results) - 1


def case_bootstrap(
    records: pd.DataFrame, stored: Predictions, axis_scores: AxisScores, reference: str, config: CRSConfig,
    engine: str | None = None,
) -> CaseBootstrap:
    """Paired hierarchical bootstrap of the CRS (module docstring): config.n_boot draws from config.seed.

    engine (default config.bootstrap_engine): "batched" computes every AUROC of a task for all draws at
    once (bootstrap_batched; on the GPU when there is one); "reference" one prediction vector and one
    chunk of draws at a time. Both read the same draws and give the same values, bit for bit
    (tests/scoring/test_bootstrap_batched.py). "linearised" computes the AUROC draws by a matrix product
    (bootstrap_linear: exact at the point, its error a small fraction of the bootstrap spread that shrinks
    with the cases); "auto" takes "batched" while exact_work(...) <= EXACT_LIMIT, else "linearised"."""
    if config.n_boot < 1:
        raise ValueError(f"n_boot is {config.n_boot}: need at least one draw")
    engine = engine or config.bootstrap_engine
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    records = Records.of(records)  # validated once; plan_tasks and the task types reuse it
    plans = plan_tasks(records, stored, axis_scores)
    task_types = _task_types(records.frame)
    work, smallest = exact_work(plans, stored, task_types, config.n_boot + 1)
    if engine == "auto":
        engine = "batched" if work <= EXACT_LIMIT else "linearised"
    encoders = list(axis_scores.encoders)
    ref = reference_index(encoders, reference)
    n_enc, n_seeds, n_draws = len(encoders), len(axis_scores.seeds), config.n_boot + 1
    rng = np.random.default_rng(config.seed)
    seed_counts = np.vstack([np.ones(n_seeds), rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), config.n_boot)])

    per_task: dict[str, np.ndarray] = {}
    for plan in plans:
        cases = stored.case_set(plan.test_set)
        codes, n_clusters = cases.cluster_codes()
        counts = np.vstack([np.ones(n_clusters), cluster_counts(rng, n_clusters, config.n_boot)])
        shift_codes = shift_counts = None
        if plan.shift_set is not None:
            shift_codes, n_shift = stored.case_set(plan.shift_set).cluster_codes()
            shift_counts = np.vstack([np.ones(n_shift), cluster_counts(rng, n_shift, config.n_boot)])
        values = np.empty((n_draws, n_enc, len(plan.axes)))
        vectors: dict[str, _Vectors] = {}
        precomputed: dict[str, np.ndarray] = {}
        if engine in ("batched", "linearised"):
            precomputed = _auroc_draws_of_test_and_shift(plan, stored, task_types[plan.task], counts, codes,
                                                         shift_counts, shift_codes,
                                                         draw_aurocs_linear if engine == "linearised" else draw_aurocs)
        chunk = max(1, MAX_CELLS // max(len(codes), 1))
        for start in range(0, n_draws, chunk):
            part = slice(start, start + chunk)
            cube = task_axis_draws(
                plan, stored, task_types[plan.task], counts[part][:, codes],
                shift_counts[part][:, shift_codes] if shift_counts is not None else None,
                n_enc, n_seeds, vectors, {d: v[part] for d, v in precomputed.items()},
            )
            c = seed_counts[part]
            values[part] = np.einsum("bs,besa->bea", c, cube) / c.sum(axis=1)[:, None, None]
        per_task[plan.task] = values

    spread = training_spread(records, axis_scores)
    inclusive = spread.present and config.target == "training-samples"
    # the pairs are of the intervals shown, so the fitted probes' own summary needs none when refits are drawn
    fitted, rows, pairs, overall = _summaries(per_task, plans, axis_scores, encoders, ref, config, n_seeds,
                                              with_pairs=not inclusive)
    results = fitted
    if inclusive:
        per_task, overall = _with_refit_terms(per_task, plans, axis_scores, spread, n_draws, config.seed)
        results, rows, pairs, overall = _summaries(per_task, plans, axis_scores, encoders, ref, config, n_seeds,
                                                   overall=overall)
    auroc = overall[1:, :, axis_scores.axes.index("discrimination")] if "discrimination" in axis_scores.axes else \
        np.full((config.n_boot, n_enc), np.nan)
    label = REFIT_LABEL.format(k="/".join(str(k) for k in sorted(set(spread.refits.values())))) if inclusive else CASE_LABEL
    return CaseBootstrap(results, auroc, pd.DataFrame(rows), pd.DataFrame(pairs), label=label, engine=engine,
                         exact_work=work, smallest_set=smallest, axis_draws=overall[1:], fitted_probes=fitted,
                         refits=dict(spread.refits) if inclusive else {}, refit_notes=spread.notes)


def _with_refit_terms(per_task: dict[str, np.ndarray], plans: list[TaskPlan], axis_scores: AxisScores,
                      spread: RefitSpread, n_draws: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Each task's draws with its refit term (its own t), and the cross-task draws with theirs: the tasks' t
    terms summed where at most one task has refits, else one Satterthwaite-mixed term (refits.cross_task_terms).
    None: the cross-task draws are the tasks' mean as usual."""
    stream = refit_rng(seed)
    drawn = {t: task_refit_draws(spread.deviations[t], n_draws, stream) for t in per_task if t in spread.deviations}
    with_terms = {t: v + drawn[t][0] if t in drawn else v for t, v in per_task.items()}
    if len(drawn) < 2:
        return with_terms, None
    uniforms = stream.random(n_draws)
    counted = [plan for plan in plans if plan.task in drawn]

    def weighted(values: dict[str, np.ndarray], plan: TaskPlan) -> np.ndarray:  # as the cross-task mean takes it
        return _cross_task(values, [plan], axis_scores)

    normal = [weighted({p.task: drawn[p.task][1]}, p) for p in counted]
    deviations = [weighted({p.task: spread.deviations[p.task]}, p) for p in counted]
    return with_terms, _cross_task(per_task, plans, axis_scores) + cross_task_terms(normal, deviations, uniforms)


def _summaries(per_task: dict[str, np.ndarray], plans: list[TaskPlan], axis_scores: AxisScores, encoders: list[str],
               ref: int, config: CRSConfig, n_seeds: int, with_pairs: bool = True, overall: np.ndarray | None = None
               ) -> tuple[dict[str, BootstrapResult], list[dict], list[dict], np.ndarray]:
    """Per scope the CRS summaries, the axis interval rows, the paired rows of every ordered pair (when
    with_pairs), and the cross-task axis draws (B, E, A): the tasks' mean unless `overall` is given."""
    results, rows, pairs = {}, [], []
    for plan in plans:
        draws = crs_batch(per_task[plan.task], ref, config, plan.axes).crs
        results[plan.task] = summarise(encoders, draws, reference=ref, level=config.level, n_seeds=n_seeds)
        rows += _axis_rows(plan.task, encoders, plan.axes, per_task[plan.task], config.level, ref)
        if with_pairs:
            pairs += pair_rows(plan.task, encoders, [*plan.axes, "crs"], np.concatenate(
                [per_task[plan.task], draws[:, :, None]], axis=-1), config.level)
    overall = _cross_task(per_task, plans, axis_scores) if overall is None else overall
    overall_crs = crs_batch(overall, ref, config, axis_scores.axes).crs
    results[OVERALL] = summarise(encoders, overall_crs, reference=ref, level=config.level, n_seeds=n_seeds)
    rows += _axis_rows(OVERALL, encoders, axis_scores.axes, overall, config.level, ref)
    if with_pairs:
        pairs += pair_rows(OVERALL, encoders, [*axis_scores.axes, "crs"],
                           np.concatenate([overall, overall_crs[:, :, None]], axis=-1), config.level)
    return results, rows, pairs, overall


def training_spread(records: Records, axis_scores: AxisScores) -> RefitSpread:
    """Per task, the refits' point axes with the label-efficiency curve moved by the refit (whole_curve), and
    their deviations from the refits' mean (scoring/refits.py)."""
    by_task, notes = refit_axes(records, axis_scores)
    names = {task: axis_scores.task_values(t)[1] for t, task in enumerate(axis_scores.tasks)}
    return spread_from_axes({task: whole_curve(a, names[task]) for task, a in by_task.items()}, notes)


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


def _task_types(records: pd.DataFrame) -> dict[str, str]:
    if "task_type" not in records.columns or records["task_type"].isna().any():
        raise DataError("records lack task_type: the case-level bootstrap needs it to recompute metrics")
    return records.groupby("task")["task_type"].first().to_dict()


def _cross_task(per_task: dict[str, np.ndarray], plans: list[TaskPlan], axis_scores: AxisScores) -> np.ndarray:
    """Mean of each axis over the tasks that count towards it, per draw: (B, E, A)."""
    first = next(iter(per_task.values()))
    total = np.zeros((first.shape[0], first.shape[1], len(axis_scores.axes)))
    for plan in plans:
        for k, axis in enumerate(plan.axes):
            total[..., axis_scores.axes.index(axis)] += per_task[plan.task][..., k]
    coverage = axis_scores.task_mask.sum(axis=0)
    return total / coverage


def _axis_rows(scope: str, encoders: list[str], axes: Sequence[str], values: np.ndarray, level: float,
               ref: int) -> list[dict]:
    """Each encoder's axis value with its percentile interval, and its difference to the reference with the
    paired interval (the same draws for both encoders, so what they share cancels)."""
    alpha = 1.0 - level
    quantiles = [alpha / 2, 1 - alpha / 2]
    low, high = np.quantile(values[1:], quantiles, axis=0)
    differences = values - values[:, ref:ref + 1, :]
    diff_low, diff_high = np.quantile(differences[1:], quantiles, axis=0)
    return [
        {"scope": scope, "encoder": e, "axis": a, "value": values[0, i, k], "ci_low": low[i, k], "ci_high": high[i, k],
         "diff": differences[0, i, k], "diff_low": diff_low[i, k], "diff_high": diff_high[i, k]}
        for i, e in enumerate(encoders)
        for k, a in enumerate(axes)
    ]


def pair_rows(scope: str, encoders: list[str], names: Sequence[str], values: np.ndarray, level: float) -> list[dict]:
    """Every ordered pair's paired difference e - f of each axis (and the CRS), row 0 of `values` (B, E, A)
    the point: the difference at the point, its percentile interval over the same draws for both, and
    P(e > f) over the draws (a tie counts for neither)."""
    alpha = 1.0 - level
    out = []
    for i, e in enumerate(encoders):
        differences = values[:, i:i + 1, :] - values  # (B, E, A): e minus each f on the same draw
        low, high = np.quantile(differences[1:], [alpha / 2, 1 - alpha / 2], axis=0)
        greater = (differences[1:] > 0).mean(axis=0)
        out += [{"scope": scope, "axis": a, "encoder": e, "versus": f, "diff": differences[0, j, k],
                 "diff_low": low[j, k], "diff_high": high[j, k], "p_greater": greater[j, k]}
                for j, f in enumerate(encoders) if j != i for k, a in enumerate(names)]
    return out
