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
its estimate lacks instead of by a fixed factor. Draw 0, the point, adds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from crsbench.scoring.axes import AxisScores

MIN_REFITS = 2  # a spread needs two


@dataclass(frozen=True)
class RefitSpread:
    """Per task, the axis deviations (K, E, A_task) of K complete refits from their mean; `notes` say what
    was left out and why."""

    deviations: dict[str, np.ndarray]
    refits: dict[str, int]
    notes: tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        return bool(self.deviations)


NO_REFITS = RefitSpread({}, {})


def refit_plans(refits: pd.DataFrame, stored, plans: Sequence, axis_scores: AxisScores) -> tuple[dict, list[str]]:
    """Per task, {refit index: a copy of the task's plan with that refit's prediction vectors at 100 %}; only
    refits complete for every encoder and every 100 % condition the plan reads. Notes name what was dropped."""
    if refits is None or refits.empty:
        return {}, []
    rec = refits[refits["encoder"].isin(axis_scores.encoders) & refits["task"].isin(axis_scores.tasks)]
    rec = rec.merge(stored.index[["record_key", "test_set", "probs"]], on="record_key", how="left")
    enc = {e: i for i, e in enumerate(axis_scores.encoders)}
    out, notes = {}, []
    for plan in plans:
        rows = rec[(rec["task"] == plan.task) & rec["probs"].notna()]
        by_refit = {}
        for k, group in rows.groupby("refit"):
            swapped = _swap(plan, group, enc, len(axis_scores.seeds))
            if swapped is None:
                notes.append(f"{plan.task}: refit {int(k)} lacks a record or its predictions for some encoder or "
                             "condition at 100 % labels; left out of the training-sample spread")
            else:
                by_refit[int(k)] = swapped
        if len(by_refit) >= MIN_REFITS:
            out[plan.task] = by_refit
        elif by_refit:
            notes.append(f"{plan.task}: {len(by_refit)} complete refit, at least {MIN_REFITS} are needed for a "
                         "training-sample spread; intervals of this task cover these fitted probes only")
    return out, notes


def _swap(plan, group: pd.DataFrame, enc: dict[str, int], n_seeds: int):
    """The plan with this refit's vectors at 100 % for every seed, or None when one is missing."""
    clean, pert, shift = {}, {}, {}
    for row in group.itertuples():
        e = enc[row.encoder]
        if row.condition_kind == "clean" and row.fraction == 1.0:
            clean[e] = row.probs
        elif row.condition_kind == "perturbation":
            key = (row.condition, int(row.severity))
            if key in plan.perturbed:
                pert[(e, plan.perturbed.index(key))] = row.probs
        elif row.condition_kind == "shift" and row.test_set == plan.shift_set:
            shift.setdefault(e, []).append(row.probs)
    encoders = {e for e, _ in plan.full}
    if set(clean) != encoders:
        return None
    if "robustness" in plan.axes:
        if any((e, c) not in pert for e in encoders for c in range(len(plan.perturbed))):
            return None
        if plan.shift and any(len(shift.get(e, ())) != len(plan.shift[(e, s)]) for (e, s) in plan.shift):
            return None
    seeds = range(n_seeds)
    return replace(
        plan,
        full={(e, s): clean[e] for e in encoders for s in seeds},
        pert={(e, s, c): pert[(e, c)] for (e, s, c) in plan.pert} if "robustness" in plan.axes else dict(plan.pert),
        shift={(e, s): shift[e] for (e, s) in plan.shift} if plan.shift and "robustness" in plan.axes else dict(plan.shift),
    )


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


def spread_from_axes(axes_by_refit: dict[str, np.ndarray], notes: Sequence[str] = ()) -> RefitSpread:
    """Deviations from the mean over refits, per task: axes_by_refit[task] is (K, E, A)."""
    deviations = {t: a - a.mean(axis=0, keepdims=True) for t, a in axes_by_refit.items() if len(a) >= MIN_REFITS}
    return RefitSpread(deviations, {t: len(a) for t, a in deviations.items()}, tuple(notes))


def refit_terms(deviations: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """(n_draws, E, A): draw 0 zero, then sum_k g_bk dev_k / sqrt(chi2_b) (module docstring)."""
    k = deviations.shape[0]
    g = rng.standard_normal((n_draws, k))
    chi2 = rng.chisquare(k - 1, n_draws)
    g /= np.sqrt(chi2)[:, None]
    g[0] = 0.0
    return np.einsum("bk,kea->bea", g, deviations)


def refit_rng(seed: int) -> np.random.Generator:
    """The refit terms' own stream, so the case and seed counts are the same draws with or without refits."""
    return np.random.default_rng([int(seed), 0x7E517])


ADD_REFITS = ("add `refits: 8` to the suite and run it again (`crsbench run SUITE` computes only the refit records), "
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
    if not getattr(boot, "refits", None):
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
