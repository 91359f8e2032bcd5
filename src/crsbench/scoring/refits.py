"""Training samples inside the bootstrap: the spread of a probe refit on another training sample.

At 100 % labels every seed trains on the same rows, so the case-and-seed bootstrap sees one fit: the CRS
it covers is that of these fitted probes. The target is the CRS expected over training samples of the
run's size (docs/bootstrap.md, "Training samples"). A run stores K refits at 100 % labels, the k-th on
the k-th bootstrap resample of the training split, the same resample for every encoder of a task
(plan/refits.py). Here, per task and refit, the point axes with refit k's probes in place of the run's
(clean, perturbed and shift predictions at 100 %; the seeds' label-fraction probes unchanged), and their
deviations from the mean over the refits: (K, E, A). A resample refit lies around the run's fit as the
run's fit lies around the refit expectation (the bootstrap principle), so each deviation has the full
variance of one training sample; the mean of the K refits would have 1/K of it, and is not what a fresh
run's point estimate does.

Each bootstrap draw b adds sum_k g_bk dev_k * sqrt(1 / chi2_b) to the task's axes, g_bk ~ N(0, 1) and
chi2_b ~ chi^2_{K-1}, shared by every encoder and axis of the task (paired: one training resample for
every encoder), independent between tasks (each task has its own training split). Its covariance is the
refits' sample covariance and its law the multivariate t with K - 1 degrees of freedom: the predictive law
of a normal deviation whose covariance is estimated from K refits, so a small K widens the tails by what
its estimate lacks instead of by a fixed factor. Draw 0, the point, adds nothing. Across tasks the terms are
independent normals mixed once per draw with Welch-Satterthwaite's degrees of freedom (`cross_task_terms`):
the tasks' t terms added would over-cover the cross-task CRS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.plan.suite import MIN_REFITS  # below it a task gets no term, named in every output (`refit_axes`)
from crsbench.crs.definition import SUBGROUP_AXIS
from crsbench.scoring.axes import AxisScores
from crsbench.scoring.subgroup_axis import refit_worst
from crsbench.scoring.refit_draws import refit_draws


@dataclass(frozen=True)
class RefitSpread:
    """Per task, the axis deviations (K, E, A_task) of K complete refits from their mean; `notes` say what
    was left out and why."""

    deviations: dict[str, np.ndarray]
    refits: dict[str, int]
    notes: tuple[str, ...] = ()
    # the t's degrees of freedom where they are not K - 1: a spread known rather than estimated from K refits
    # (the acceptance's oracle, simulation.training_samples.oracle_spread) keeps the t of the K it stands in for
    degrees: dict[str, int] = field(default_factory=dict)
    # per task, the refit numbers behind the rows of its deviations, in order (empty: a spread not read from
    # refit records); the subgroup stage reads the same refits' subgroup metrics in the same order
    ids: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def present(self) -> bool:
        return bool(self.deviations)

    def df(self, task: str) -> int:
        return self.degrees.get(task, len(self.deviations[task]) - 1)

    def scaled(self, factor: float) -> "RefitSpread":
        """The same spread with every deviation times `factor` (a planted too-wide or too-narrow estimator)."""
        return RefitSpread({t: factor * d for t, d in self.deviations.items()}, self.refits, self.notes, self.degrees,
                           self.ids)


NO_REFITS = RefitSpread({}, {})


def refit_axes(records, axis_scores: AxisScores) -> tuple[dict[str, np.ndarray], list[str], dict[str, tuple[int, ...]]]:
    """Per task, the point axes (K, E, A_task) of its complete refits, notes on what was left out, and per task
    the refit numbers of the K rows.

    Refit k's axes are the axes of the run's records with every 100 % record (clean, perturbed, shift)
    replaced by refit k's record of the same encoder and condition, for every seed: read from the records'
    own metrics (the point values at unit case weights), so the refits need no stored predictions. A refit
    lacking a record some encoder's 100 % grid has is left out, named."""
    from crsbench.scoring.axes import compute_axes

    refits = records.refits
    if refits is None or refits.empty:
        return {}, [], {}
    frame = records.frame
    full = frame[frame["fraction"] == 1.0]
    rest = frame[frame["fraction"] != 1.0]
    cell = ["encoder", "condition_kind", "condition", "severity"]
    out, notes, ids = {}, [], {}
    for t, task in enumerate(axis_scores.tasks):
        wanted = full[full["task"] == task].drop_duplicates(cell)
        wanted_cells = set(map(tuple, wanted[cell].to_numpy().tolist()))
        mine = refits[refits["task"] == task]
        values, kept = [], []
        for k, rows in mine.groupby("refit"):
            rows = rows.drop_duplicates(cell)
            have = set(map(tuple, rows[cell].to_numpy().tolist()))
            if not wanted_cells <= have:
                notes.append(f"{task}: refit {int(k)} lacks {len(wanted_cells - have)} of the 100 % records the run has; "
                             "left out of the training-sample spread")
                continue
            rows = rows[[c in wanted_cells for c in map(tuple, rows[cell].to_numpy().tolist())]]
            seeds = pd.concat([rows.assign(seed=s) for s in axis_scores.seeds], ignore_index=True)
            swapped = pd.concat([rest[rest["task"] == task], seeds.drop(columns="refit")], ignore_index=True)
            scores = compute_axes(swapped, delta=axis_scores.delta)
            cube, axes = scores.task_values(0)
            order = [list(scores.encoders).index(e) for e in axis_scores.encoders]
            task_axes = axis_scores.task_values(t)[1]
            refit = cube[order].mean(axis=1)
            # the optional subgroup axis: refit k's own subgroup metrics (NaN where its records lack them)
            worst = refit_worst(rows, axis_scores.worst_subgroups.groups[task], axis_scores.encoders) \
                if SUBGROUP_AXIS in task_axes else None
            values.append(np.stack([refit[:, axes.index(a)] if a != SUBGROUP_AXIS else
                                    (np.full(len(order), np.nan) if worst is None else worst) for a in task_axes], axis=-1))
            kept.append(int(k))
        if values and SUBGROUP_AXIS in axis_scores.task_values(t)[1]:
            values = _fitted_where_absent(values, axis_scores, t, task, notes)
        if len(values) >= MIN_REFITS:
            out[task], ids[task] = np.stack(values), tuple(kept)
        elif values:
            notes.append(f"{task}: {len(values)} complete refit(s), at least {MIN_REFITS} are needed for the "
                         f"training-sample term (with {len(values)} its t would have {len(values) - 1} degree(s) of "
                         "freedom); left out: this task's intervals, and its share of the cross-task ones, cover "
                         "these fitted probes only")
    return out, notes, ids


def _fitted_where_absent(values: list[np.ndarray], axis_scores: AxisScores, t: int, task: str,
                         notes: list[str]) -> list[np.ndarray]:
    """The subgroup axis's refit values as they are where every refit carries them; else the fitted probes'
    value for every refit (no training-sample term for that axis on this task, said in a note), so the published
    axes keep their refits whatever the subgroup metrics."""
    a = axis_scores.task_values(t)[1].index(SUBGROUP_AXIS)
    if not any(np.isnan(v[:, a]).any() for v in values):
        return values
    notes.append(f"{task}: its refits carry no subgroup metrics for the subgroup axis (attributes added or changed "
                 "after the run): that axis's intervals cover the fitted probes only")
    fitted = axis_scores.task_values(t)[0][:, :, a].mean(axis=1)
    out = [v.copy() for v in values]
    for v in out:
        v[:, a] = fitted
    return out


def whole_curve(axes: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """(K, E, A) refit axes with the label-efficiency curve moved, at every fraction, by the refit's move of
    the AUROC at 100 %. A fit on a subset of the training split shares the split's deviation: for an estimate
    that averages over training examples, the covariance of the fits on a subset and on the whole split is the
    whole split's variance, whatever the subset's size; what the subsets add beyond it differs between seeds,
    which the seed draws carry. Label efficiency is a weighted mean of the curve (weights summing to 1), so
    the curve's common move is its move."""
    names = list(names)
    if "label_efficiency" not in names or "discrimination" not in names:
        return axes
    out = axes.copy()
    le, auroc = names.index("label_efficiency"), names.index("discrimination")
    out[..., le] = axes[..., le].mean(axis=0) + axes[..., auroc] - axes[..., auroc].mean(axis=0)
    return out


def spread_from_axes(axes_by_refit: dict[str, np.ndarray], notes: Sequence[str] = (),
                     ids: dict[str, tuple[int, ...]] | None = None) -> RefitSpread:
    """Deviations from the mean over refits, per task: axes_by_refit[task] is (K, E, A); ids: the refit numbers
    of its rows (`refit_axes`)."""
    deviations = {t: a - a.mean(axis=0, keepdims=True) for t, a in axes_by_refit.items() if len(a) >= MIN_REFITS}
    return RefitSpread(deviations, {t: len(a) for t, a in deviations.items()}, tuple(notes),
                       ids={t: v for t, v in (ids or {}).items() if t in deviations})


def spread_about(axes_by_refit: dict[str, np.ndarray], centres: dict[str, np.ndarray], names: dict[str, Sequence[str]],
                 notes: Sequence[str] = ()) -> RefitSpread:
    """A candidate estimator's spread (benchmarks/pool_calibration.py): per task, the K fits' deviations
    from the run's own fit (`centres[task]`, (E, A)) rather than from their mean, e.g. half-samples drawn
    without replacement, whose spread about the full fit estimates the full fit's variance; the
    label-efficiency column moved with the AUROC's (as `whole_curve`). Its variance has K degrees of
    freedom: a zero row is appended, so the K + 1 rows' sum of squares over K is the estimate, and the t
    is told K."""
    deviations, degrees = {}, {}
    for task, axes in axes_by_refit.items():
        task_names = list(names[task])
        d = axes - centres[task][None]
        if "label_efficiency" in task_names and "discrimination" in task_names:
            d[..., task_names.index("label_efficiency")] = d[..., task_names.index("discrimination")]
        deviations[task] = np.concatenate([d, np.zeros_like(d[:1])])
        degrees[task] = len(d)
    return RefitSpread(deviations, {t: len(a) for t, a in axes_by_refit.items()}, tuple(notes), degrees)


def task_refit_draws(deviations: np.ndarray, n_draws: int, rng: np.random.Generator,
                     df: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One task's refit terms (n_draws, E, A) as the t, draw 0 zero, then sum_k g_bk dev_k / sqrt(chi2_b)
    (module docstring); and the same draws before the scale mixing: normal, with the refits' sample
    covariance (what a cross-task term mixes once, `cross_task_terms`). df: the t's degrees of freedom,
    K - 1 unless given (`RefitSpread.degrees`)."""
    return refit_draws(deviations.shape[0], n_draws, rng, df).term_and_normal(deviations)


def satterthwaite_df(variances: Sequence[np.ndarray], dfs: Sequence[int]) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of independently estimated variances, elementwise:
    (sum v_i)^2 / sum v_i^2 / df_i; where every v_i is 0 (no spread) the smallest df."""
    total = sum(variances)
    spread = sum(v**2 / d for v, d in zip(variances, dfs))
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(spread > 0, total**2 / spread, float(min(dfs)))
    return np.clip(df, min(dfs), sum(dfs))


def cross_task_terms(normal: Sequence[np.ndarray], deviations: Sequence[np.ndarray], uniforms: np.ndarray,
                     dfs: Sequence[int] | None = None) -> np.ndarray:
    """The refit term of a sum over tasks, (B, E, A): per task its normal part (B, E, A) and its refits'
    deviations (K_t, E, A), both as the sum weights them; mixed once per draw by a chi-square whose degrees
    of freedom are Welch-Satterthwaite's for each encoder and axis, comonotone over encoders and axes (one
    uniform per draw, so the term stays paired). Draw 0 adds nothing.

    Adding the tasks' own t terms (a chi-square per task) is the Behrens-Fisher predictive, conservative for
    a sum: it covers about 0.99 of three equal tasks' sum at K = 4 where 0.95 is asked. The Satterthwaite t,
    the standard for a sum of independently estimated variances, covers 0.93-0.97 over equal and unequal task
    spreads (docs/bootstrap.md), and is a task's own t where only that task varies. dfs: each task's
    degrees of freedom, K_t - 1 unless given."""
    from scipy.stats import chi2

    dfs = [len(d) - 1 for d in deviations] if dfs is None else list(dfs)
    variances = [np.sum(d**2, axis=0) / (len(d) - 1) for d in deviations]
    df = satterthwaite_df(variances, dfs)
    scale = np.sqrt(df[None] / chi2.ppf(uniforms[:, None, None], df[None]))
    scale[0] = 0.0
    return sum(normal) * scale


def refit_rng(seed: int) -> np.random.Generator:
    """The refit terms' own stream, so the case and seed counts are the same draws with or without refits."""
    return np.random.default_rng([int(seed), 0x7E517])


ADVISED_REFITS = 4  # what the shipped suites and `select` take: the t's tails cost little beyond it (docs/bootstrap.md)
ADD_REFITS = (f"add `refits: {ADVISED_REFITS}` to the suite and run it again (`crsbench run SUITE` computes only the refit records), "
              "then score")


def target_sentence(kind: str, refits: dict[str, int] | None = None, asked: str = "training-samples") -> str:
    """What the intervals and the tier are about, in one sentence, for a bootstrap of this `kind` ("cases",
    "seeds" or "none") with these refits per task, and the target the scoring was asked for."""
    if kind == "none":
        return "No bootstrap ran: no interval or tier is shown."
    if kind == "cases" and refits:
        k = "/".join(str(v) for v in sorted(set(refits.values())))
        return ("Intervals and the leading tier cover each encoder's CRS expected over training samples of the run's "
                f"size, test cases and seeds ({k} paired refits per task); these fitted probes' narrower interval is "
                "`fitted_probes` in summary.json (`--target fitted-probes`).")
    what = "new test cases and seeds" if kind == "cases" else "seeds only (not test cases)"
    if asked == "fitted-probes":
        return (f"Intervals and the leading tier cover these fitted probes on {what}, as asked (`--target "
                "fitted-probes`): training variability is not included.")
    return (f"Intervals and the leading tier cover these fitted probes on {what}: training variability is not "
            f"included; to include it, {ADD_REFITS}.")


def fitted_probe_table(boot) -> pd.DataFrame:
    """Per scope and encoder, these fitted probes' summaries where the intervals include training samples
    (a CaseBootstrap with refits); empty otherwise (the intervals shown already are these probes')."""
    if not boot.refits:
        return pd.DataFrame()
    frames = []
    for scope, result in boot.fitted_probes.items():
        table = result.intervals[["crs", "ci_low", "ci_high", "p_rank1"]].copy()
        table["in_leading_tier"] = result.tier["in_leading_tier"].to_numpy()
        frames.append(table.reset_index().assign(scope=scope))
    return pd.concat(frames, ignore_index=True)[["scope", "encoder", "crs", "ci_low", "ci_high", "p_rank1", "in_leading_tier"]]


def fitted_probes_summary(table: pd.DataFrame) -> dict | None:
    """The `fitted_probes` field of summary.json: per scope, the tier and each encoder's interval of these
    fitted probes; None when the intervals shown are these probes' already."""
    if table is None or table.empty:
        return None

    def number(value) -> float | None:
        return None if pd.isna(value) else float(value)

    return {
        "covers": "these fitted probes on new test cases and seeds (training variability not included)",
        "by_scope": {
            str(scope): {
                "leading_tier": [str(e) for e in rows.loc[rows["in_leading_tier"], "encoder"]],
                "intervals": {str(r.encoder): {"crs": number(r.crs), "ci_low": number(r.ci_low),
                                               "ci_high": number(r.ci_high), "p_rank1": number(r.p_rank1)}
                              for r in rows.itertuples()},
            }
            for scope, rows in table.groupby("scope", sort=False)
        },
    }
