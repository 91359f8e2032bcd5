"""The paired hierarchical bootstrap of PROTOCOL section 8: test cases and seeds resampled together.

One draw is
- per task, multinomial counts over the clusters of its test set (patients, lesions or images; the
  case itself when the dataset has none), shared by every encoder, seed, label fraction and
  perturbed copy of the same case; the shift set has its own cluster counts;
- seed counts drawn with replacement, shared by every encoder and task (seeds fix the label
  subsets every encoder sees, so they are paired).
Every metric is recomputed under the case weights, then per (encoder, task, seed) the four axes and their
seed means under the seed counts (scoring/task_draws.py); here the CRS per task and on the cross-task means
(crs.crs_batch), ranks and their summaries. Draw 0 is the unit-weight point
estimate, so the point and the draws go through one code path.

Summaries (scoring/bootstrap_summary.py, shared with the seed-only bootstrap): intervals per encoder (CRS)
and per axis, by the settings' interval method; rank distribution; P(rank 1); pairwise P(CRS e > CRS f);
the simultaneous leading tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.crs.definition import CRSConfig, crs_batch, reference_index
from crsbench.results.predictions import Predictions
from crsbench.results.record_set import Records
from crsbench.scoring.axes import AxisScores
from crsbench.scoring.refit_draws import RefitDraws, refit_draws
from crsbench.scoring.refits import RefitSpread, cross_task_terms, refit_axes, refit_rng, spread_from_axes, whole_curve
from crsbench.scoring.bootstrap_summary import BootstrapResult, bootstrap_interval, summarise
from crsbench.scoring.statistics import OVERALL
from crsbench.scoring.task_draws import AUROC_ENGINES, TaskPlan, exact_work, plan_tasks, task_axis_values, task_types_of

CASE_LABEL = "paired case-and-seed bootstrap (test-set clusters and seeds resampled)"
REFIT_LABEL = ("paired case, seed and training-sample bootstrap (test-set clusters and seeds resampled, "
               "{k} paired refits per task at 100 % labels)")
# batched: every AUROC of a task for all draws at once, exactly (bootstrap_batched); reference: the same
# values one vector at a time; linearised: the AUROC draws by one matrix product, the degenerate second-order
# term of the Mann-Whitney statistic dropped (bootstrap_linear); auto: batched while its work is at most
# EXACT_LIMIT column-case-draws (about 2.5 CPU-minutes), linearised beyond.
ENGINES = ("auto", *AUROC_ENGINES)
EXACT_LIMIT = 2e10


# --------------------------------------------------------------------------- the bootstrap


@dataclass(frozen=True)
class CaseBootstrap:
    """The paired case-and-seed bootstrap per scope ("overall" and each task).

    results: BootstrapResult per scope (draws exclude the point). axis_intervals: per scope,
    encoder and axis, the point value and its interval, and the difference to the reference
    with its paired interval. auroc_draws: (B, N) cross-task
    discrimination per draw, for the rank statistics.
    """

    results: dict[str, BootstrapResult]
    auroc_draws: np.ndarray
    axis_intervals: pd.DataFrame
    pair_intervals: pd.DataFrame  # pair_rows, every scope
    method: str  # the interval method (settings' `interval`)
    axis_draws: np.ndarray  # (B, E, A) cross-task axis values per draw (no point): the components'
    label: str = CASE_LABEL
    engine: str = "batched"  # the engine that ran (auto resolved)
    exact_work: float = 0.0  # column-case-draws of the exact AUROC draws, what auto compared with EXACT_LIMIT
    smallest_set: int = 0  # cases of the smallest test or shift set the AUROC draws read
    # the narrower intervals of these fitted probes (test cases and seeds only), per scope; the same as
    # `results` when no refits were stored
    fitted_probes: dict[str, BootstrapResult] = field(default_factory=dict)
    refits: dict[str, int] = field(default_factory=dict)  # task -> refits drawn; empty: training samples not included
    refit_notes: tuple[str, ...] = ()
    # what the subgroup stage needs to read the same draws: the task plans, the seed counts (B + 1, S), row 0
    # the point, and each task's generator state before its cluster counts (task_draws.replayed_counts)
    plans: tuple[TaskPlan, ...] = ()
    seed_counts: np.ndarray | None = None
    draw_states: dict[str, dict] = field(default_factory=dict)
    # where training samples are included: the spread the terms were drawn from, and each task's draws
    spread: RefitSpread | None = None
    refit_draws: dict[str, RefitDraws] = field(default_factory=dict)

    @property
    def overall(self) -> BootstrapResult:
        return self.results[OVERALL]

    @property
    def training_samples(self) -> bool:
        """Whether the intervals include the spread over training samples (every task had its refits)."""
        return bool(self.refits) and len(self.refits) == len(self.results) - 1


def case_bootstrap(
    records: pd.DataFrame, stored: Predictions, axis_scores: AxisScores, reference: str, config: CRSConfig,
    engine: str | None = None, spread: RefitSpread | None = None,
) -> CaseBootstrap:
    """Paired hierarchical bootstrap of the CRS (module docstring): config.n_boot draws from config.seed.

    engine (default config.bootstrap_engine): "batched" computes every AUROC of a task for all draws at
    once (bootstrap_batched; on the GPU when there is one); "reference" one prediction vector and one
    chunk of draws at a time. Both read the same draws and give the same values, bit for bit
    (tests/scoring/test_bootstrap_batched.py). "linearised" computes the AUROC draws by a matrix product
    (bootstrap_linear: exact at the point, its error a small fraction of the bootstrap spread that shrinks
    with the cases); "auto" takes "batched" while exact_work(...) <= EXACT_LIMIT, else "linearised".
    spread: the training-sample spread in place of the records' refits (the acceptance's oracle and planted
    estimators, simulation/training_samples.py)."""
    if config.n_boot < 1:
        raise ValueError(f"n_boot is {config.n_boot}: need at least one draw")
    engine = engine or config.bootstrap_engine
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    records = Records.of(records)  # validated once; plan_tasks and the task types reuse it
    plans = plan_tasks(records, stored, axis_scores)
    task_types = task_types_of(records.frame)
    work, smallest = exact_work(plans, stored, task_types, config.n_boot + 1)
    if engine == "auto":
        engine = "batched" if work <= EXACT_LIMIT else "linearised"
    encoders = list(axis_scores.encoders)
    ref = reference_index(encoders, reference)
    n_enc, n_seeds, n_draws = len(encoders), len(axis_scores.seeds), config.n_boot + 1
    rng = np.random.default_rng(config.seed)
    seed_counts = np.vstack([np.ones(n_seeds), rng.multinomial(n_seeds, np.full(n_seeds, 1 / n_seeds), config.n_boot)])

    per_task, draw_states = {}, {}
    for plan in plans:  # in the plans' order: each task draws its cluster counts from rng in turn
        draw_states[plan.task] = rng.bit_generator.state  # a copy: the subgroup stage replays the task's draws
        per_task[plan.task] = task_axis_values(plan, stored, task_types[plan.task], rng, seed_counts, n_enc, engine)

    spread = training_spread(records, axis_scores) if spread is None else spread
    inclusive = spread.present and config.target == "training-samples"
    # the pairs are of the intervals shown, so the fitted probes' own summary needs none when refits are drawn
    fitted, rows, pairs, overall = _summaries(per_task, plans, axis_scores, encoders, ref, config, n_seeds,
                                              with_pairs=not inclusive)
    results, drawn = fitted, {}
    if inclusive:
        per_task, overall, drawn = _with_refit_terms(per_task, plans, axis_scores, spread, n_draws, config.seed)
        results, rows, pairs, overall = _summaries(per_task, plans, axis_scores, encoders, ref, config, n_seeds,
                                                   overall=overall)
    auroc = overall[1:, :, axis_scores.axes.index("discrimination")] if "discrimination" in axis_scores.axes else \
        np.full((config.n_boot, n_enc), np.nan)
    label = REFIT_LABEL.format(k="/".join(str(k) for k in sorted(set(spread.refits.values())))) if inclusive else CASE_LABEL
    return CaseBootstrap(results, auroc, pd.DataFrame(rows), pd.DataFrame(pairs), method=config.interval,
                         axis_draws=overall[1:], label=label, engine=engine, exact_work=work, smallest_set=smallest,
                         fitted_probes=fitted,
                         refits=dict(spread.refits) if inclusive else {}, refit_notes=spread.notes,
                         plans=tuple(plans), seed_counts=seed_counts, draw_states=draw_states,
                         spread=spread if inclusive else None, refit_draws=drawn)


def _with_refit_terms(per_task: dict[str, np.ndarray], plans: list[TaskPlan], axis_scores: AxisScores,
                      spread: RefitSpread, n_draws: int, seed: int
                      ) -> tuple[dict[str, np.ndarray], np.ndarray | None, dict[str, RefitDraws]]:
    """Each task's draws with its refit term (its own t), and the cross-task draws with theirs: the tasks' t
    terms summed where at most one task has refits, else one Satterthwaite-mixed term (refits.cross_task_terms).
    None: the cross-task draws are the tasks' mean as usual. Also each task's refit draws, for the subgroups."""
    stream = refit_rng(seed)
    factors = {t: refit_draws(len(spread.deviations[t]), n_draws, stream, spread.df(t))
               for t in per_task if t in spread.deviations}
    drawn = {t: f.term_and_normal(spread.deviations[t]) for t, f in factors.items()}
    with_terms = {t: v + drawn[t][0] if t in drawn else v for t, v in per_task.items()}
    if len(drawn) < 2:
        return with_terms, None, factors
    uniforms = stream.random(n_draws)
    counted = [plan for plan in plans if plan.task in drawn]

    def weighted(values: dict[str, np.ndarray], plan: TaskPlan) -> np.ndarray:  # as the cross-task mean takes it
        return _cross_task(values, [plan], axis_scores)

    normal = [weighted({p.task: drawn[p.task][1]}, p) for p in counted]
    deviations = [weighted({p.task: spread.deviations[p.task]}, p) for p in counted]
    return with_terms, _cross_task(per_task, plans, axis_scores) + cross_task_terms(
        normal, deviations, uniforms, [spread.df(p.task) for p in counted]), factors


def _summaries(per_task: dict[str, np.ndarray], plans: list[TaskPlan], axis_scores: AxisScores, encoders: list[str],
               ref: int, config: CRSConfig, n_seeds: int, with_pairs: bool = True, overall: np.ndarray | None = None
               ) -> tuple[dict[str, BootstrapResult], list[dict], list[dict], np.ndarray]:
    """Per scope the CRS summaries, the axis interval rows, the paired rows of every ordered pair (when
    with_pairs), and the cross-task axis draws (B, E, A): the tasks' mean unless `overall` is given."""
    results, rows, pairs = {}, [], []
    for plan in plans:
        draws = crs_batch(per_task[plan.task], ref, config, plan.axes).crs
        results[plan.task] = summarise(encoders, draws, reference=ref, level=config.level, method=config.interval,
                                       n_seeds=n_seeds)
        rows += _axis_rows(plan.task, encoders, plan.axes, per_task[plan.task], config, n_seeds, ref)
        if with_pairs:
            pairs += pair_rows(plan.task, encoders, [*plan.axes, "crs"], np.concatenate(
                [per_task[plan.task], draws[:, :, None]], axis=-1), config, n_seeds)
    overall = _cross_task(per_task, plans, axis_scores) if overall is None else overall
    overall_crs = crs_batch(overall, ref, config, axis_scores.axes).crs
    results[OVERALL] = summarise(encoders, overall_crs, reference=ref, level=config.level, method=config.interval,
                                 n_seeds=n_seeds)
    rows += _axis_rows(OVERALL, encoders, axis_scores.axes, overall, config, n_seeds, ref)
    if with_pairs:
        pairs += pair_rows(OVERALL, encoders, [*axis_scores.axes, "crs"],
                           np.concatenate([overall, overall_crs[:, :, None]], axis=-1), config, n_seeds)
    return results, rows, pairs, overall


def training_spread(records: Records, axis_scores: AxisScores) -> RefitSpread:
    """Per task, the refits' point axes with the label-efficiency curve moved by the refit (whole_curve), and
    their deviations from the refits' mean (scoring/refits.py)."""
    by_task, notes, ids = refit_axes(records, axis_scores)
    names = {task: axis_scores.task_values(t)[1] for t, task in enumerate(axis_scores.tasks)}
    return spread_from_axes({task: whole_curve(a, names[task]) for task, a in by_task.items()}, notes, ids)








def _cross_task(per_task: dict[str, np.ndarray], plans: list[TaskPlan], axis_scores: AxisScores) -> np.ndarray:
    """Mean of each axis over the tasks that count towards it, per draw: (B, E, A)."""
    first = next(iter(per_task.values()))
    total = np.zeros((first.shape[0], first.shape[1], len(axis_scores.axes)))
    for plan in plans:
        for k, axis in enumerate(plan.axes):
            total[..., axis_scores.axes.index(axis)] += per_task[plan.task][..., k]
    coverage = axis_scores.task_mask.sum(axis=0)
    return total / coverage


def _axis_rows(scope: str, encoders: list[str], axes: Sequence[str], values: np.ndarray, config: CRSConfig,
               n_seeds: int, ref: int) -> list[dict]:
    """Each encoder's axis value with its interval, and its difference to the reference with the paired
    interval (the same draws for both encoders, so what they share cancels)."""
    low, high = bootstrap_interval(values[1:], config.level, config.interval, n_seeds)
    differences = values - values[:, ref:ref + 1, :]
    diff_low, diff_high = bootstrap_interval(differences[1:], config.level, config.interval, n_seeds)
    return [
        {"scope": scope, "encoder": e, "axis": a, "value": values[0, i, k], "ci_low": low[i, k], "ci_high": high[i, k],
         "diff": differences[0, i, k], "diff_low": diff_low[i, k], "diff_high": diff_high[i, k]}
        for i, e in enumerate(encoders)
        for k, a in enumerate(axes)
    ]


def pair_rows(scope: str, encoders: list[str], names: Sequence[str], values: np.ndarray, config: CRSConfig,
              n_seeds: int) -> list[dict]:
    """Every ordered pair's paired difference e - f of each axis (and the CRS), row 0 of `values` (B, E, A)
    the point: the difference at the point, its interval over the same draws for both, and
    P(e > f) over the draws (a tie counts for neither)."""
    out = []
    for i, e in enumerate(encoders):
        differences = values[:, i:i + 1, :] - values  # (B, E, A): e minus each f on the same draw
        low, high = bootstrap_interval(differences[1:], config.level, config.interval, n_seeds)
        greater = (differences[1:] > 0).mean(axis=0)
        out += [{"scope": scope, "axis": a, "encoder": e, "versus": f, "diff": differences[0, j, k],
                 "diff_low": low[j, k], "diff_high": high[j, k], "p_greater": greater[j, k]}
                for j, f in enumerate(encoders) if j != i for k, a in enumerate(names)]
    return out
