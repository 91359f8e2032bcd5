"""The numbers behind each figure and table of the HTML report, as pure functions of a ScoreReport
and the run records. Nothing here draws or writes; figures.py and page.py do.

Records are seed-level rows (docs/records.md); curves are seed means with the seed minimum and
maximum as the band, so a band is the spread a reader would see by rerunning with another seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crsbench.scoring.axes import AXES

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport

FULL_LABELS = 1.0
TABLE_METRICS: tuple[str, ...] = ("auroc", "balanced_accuracy", "ece", "brier", "nll")


def rank_probabilities(report: ScoreReport) -> tuple[pd.DataFrame, str | None]:
    """P(rank = k) per encoder (rows sum to 1, columns rank_1..rank_N) and the label of the bootstrap
    that drew it. The one place the report reads the rank distribution: at present the seed-only
    bootstrap's, switched here when the case-level bootstrap provides its own."""
    return report.intervals.rank_distribution, report.intervals.label


def encoder_order(report: ScoreReport) -> list[str]:
    """Encoders best CRS first: the order of every legend, table and colour of the report."""
    return [str(e) for e in report.point.scores.index]


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Boolean mask of the points no other point beats on both x and y (both maximised).

    A point is dominated when another is at least as good on both and strictly better on one.
    NaN points are never on the front.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    finite = np.isfinite(x) & np.isfinite(y)
    front = finite.copy()
    for i in np.flatnonzero(finite):
        others = finite & (np.arange(len(x)) != i)
        beaten = others & (x >= x[i]) & (y >= y[i]) & ((x > x[i]) | (y > y[i]))
        front[i] = not beaten.any()
    return front


def _seed_band(frame: pd.DataFrame, by: list[str], metric: str) -> pd.DataFrame:
    grouped = frame.groupby(by, sort=True)[metric]
    out = grouped.agg(["mean", "min", "max", "std", "count"]).reset_index()
    return out.rename(columns={"count": "n_seeds"})


def label_efficiency_curves(records: pd.DataFrame, metric: str = "auroc") -> pd.DataFrame:
    """Clean-test `metric` per (task, encoder, fraction): seed mean, min, max, std, n_seeds."""
    rec = records[records["condition_kind"] == "clean"]
    return _seed_band(rec.dropna(subset=[metric]), ["task", "encoder", "fraction"], metric)


def robustness_curves(records: pd.DataFrame, metric: str = "auroc") -> pd.DataFrame:
    """`metric` against severity per (task, perturbation, encoder) at 100% labels; severity 0 is the
    clean test, repeated for each perturbation so every curve starts from its clean value."""
    full = records[records["fraction"] == FULL_LABELS].dropna(subset=[metric])
    perturbed = full[full["condition_kind"] == "perturbation"]
    if perturbed.empty:
        return pd.DataFrame(columns=["task", "condition", "encoder", "severity", "mean", "min", "max", "std", "n_seeds"])
    clean = full[full["condition_kind"] == "clean"]
    families = perturbed[["task", "condition"]].drop_duplicates()
    start = clean.merge(families, on="task", suffixes=("_clean", "")).assign(severity=0)
    start["condition"] = start["condition"]
    start = start.drop(columns=[c for c in start.columns if c.endswith("_clean")])
    frame = pd.concat([start, perturbed], ignore_index=True)
    return _seed_band(frame, ["task", "condition", "encoder", "severity"], metric)


def shift_drops(records: pd.DataFrame, metric: str = "auroc") -> pd.DataFrame:
    """Clean minus shifted `metric` per (task, shift, encoder) at 100% labels, paired by seed:
    mean drop, min, max over seeds, and the clean and shifted means."""
    full = records[records["fraction"] == FULL_LABELS].dropna(subset=[metric])
    shifted = full[full["condition_kind"] == "shift"]
    columns = ["task", "condition", "encoder", "mean", "min", "max", "std", "n_seeds", "clean", "shifted"]
    if shifted.empty:
        return pd.DataFrame(columns=columns)
    clean = full[full["condition_kind"] == "clean"][["task", "encoder", "seed", metric]]
    paired = shifted.merge(clean, on=["task", "encoder", "seed"], suffixes=("_shift", "_clean"))
    paired["drop"] = paired[f"{metric}_clean"] - paired[f"{metric}_shift"]
    out = _seed_band(paired, ["task", "condition", "encoder"], "drop")
    means = paired.groupby(["task", "condition", "encoder"])[[f"{metric}_clean", f"{metric}_shift"]].mean()
    means.columns = ["clean", "shifted"]
    return out.merge(means.reset_index(), on=["task", "condition", "encoder"])[columns]


def per_task_metrics(records: pd.DataFrame) -> pd.DataFrame:
    """Clean test at 100% labels: each metric's seed mean and std per (task, encoder)."""
    full = records[(records["condition_kind"] == "clean") & (records["fraction"] == FULL_LABELS)]
    metrics = [m for m in TABLE_METRICS if m in full.columns and full[m].notna().any()]
    grouped = full.groupby(["task", "encoder"], sort=True)
    out = grouped.size().rename("n_seeds").to_frame()
    for metric in metrics:
        out[f"{metric}_mean"] = grouped[metric].mean()
        out[f"{metric}_std"] = grouped[metric].std()
    return out.reset_index()


@dataclass(frozen=True)
class WorstCondition:
    """The condition that costs an encoder most AUROC on some task (at 100% labels, seed means)."""

    task: str
    condition: str
    severity: int
    clean: float
    perturbed: float

    @property
    def drop(self) -> float:
        return self.clean - self.perturbed

    @property
    def share_above_chance_lost(self) -> float:
        """Share of the clean AUROC above chance (0.5) that the condition takes away."""
        above = self.clean - 0.5
        return self.drop / above if above > 0 else math.nan


def worst_conditions(records: pd.DataFrame) -> dict[str, WorstCondition]:
    """Per encoder, the perturbation (any severity) or shift with the largest mean AUROC drop."""
    full = records[records["fraction"] == FULL_LABELS].dropna(subset=["auroc"])
    means = full.groupby(["encoder", "task", "condition_kind", "condition", "severity"])["auroc"].mean().reset_index()
    clean = means[means["condition_kind"] == "clean"].set_index(["encoder", "task"])["auroc"]
    other = means[means["condition_kind"] != "clean"].copy()
    if other.empty:
        return {}
    other["clean"] = [clean.get((e, t), np.nan) for e, t in zip(other["encoder"], other["task"])]
    other["drop"] = other["clean"] - other["auroc"]
    other = other.dropna(subset=["drop"])
    worst = other.sort_values("drop", ascending=False, kind="stable").groupby("encoder").head(1)
    return {
        str(r.encoder): WorstCondition(str(r.task), str(r.condition), int(r.severity), float(r.clean), float(r.auroc))
        for r in worst.itertuples()
    }


def weakest_axes(report: ScoreReport) -> dict[str, str]:
    """Per encoder, the available axis with the lowest value in skill u (the profile)."""
    profile = report.point.profile
    if profile.empty:
        return {}
    return {str(e): str(row.dropna().idxmin()) for e, row in profile.iterrows() if row.notna().any()}


def profile_against_reference(report: ScoreReport) -> pd.DataFrame:
    """u_e - u_reference per axis in skill u (columns in AXES order; a missing axis is NaN)."""
    profile = report.point.profile.reindex(columns=list(AXES))
    if report.reference not in profile.index:
        return profile * np.nan
    return profile - profile.loc[report.reference]


def rank_shift(report: ScoreReport) -> pd.DataFrame:
    """AUROC rank and CRS rank among the ranked cohort (baselines left out, as in the rank statistics),
    with `reversed`: the encoder is in a pair whose order AUROC and CRS disagree on."""
    scores = report.point.scores
    cohort = scores[~scores["baseline"].astype(bool)] if "baseline" in scores else scores
    cohort = cohort.dropna(subset=["auroc_rank"])
    from crsbench.scoring.bootstrap_summary import competition_ranks

    crs_rank = competition_ranks(cohort["crs"].to_numpy(dtype=float)[None, :])[0] if len(cohort) else []
    out = pd.DataFrame({"auroc_rank": cohort["auroc_rank"].astype(float), "crs_rank": np.asarray(crs_rank, dtype=float),
                        "auroc": cohort["discrimination"], "crs": cohort["crs"]}, index=cohort.index)
    involved = set()
    for pair in report.agreement.reversed_pairs.itertuples():
        involved.update({str(pair.encoder_a), str(pair.encoder_b)})
    out["reversed"] = [str(e) in involved for e in out.index]
    return out


def reversed_pairs(report: ScoreReport) -> list[tuple[str, str]]:
    return [(str(p.encoder_a), str(p.encoder_b)) for p in report.agreement.reversed_pairs.itertuples()]


def reliability_bins(labels: np.ndarray, probs: np.ndarray, n_bins: int = 10) -> pd.DataFrame:
    """Reliability diagram points from per-case predictions, in equal-width bins of the predicted
    probability: confidence (bin mean), accuracy (observed frequency), count; empty bins left out.

    Single-label (labels int [n], probs [n, k]): the top-label probability against whether the top
    label is right. Multi-label (labels float [n, L] with NaN for a masked label): every observed
    (case, label) pair, its probability against the label.
    """
    labels, probs = np.asarray(labels), np.asarray(probs, dtype=float)
    if labels.ndim == 1:
        confidence = probs.max(axis=1)
        correct = (probs.argmax(axis=1) == labels.astype(int)).astype(float)
    else:
        observed = ~np.isnan(labels.astype(float))
        confidence, correct = probs[observed], labels.astype(float)[observed]
    which = np.clip((confidence * n_bins).astype(int), 0, n_bins - 1)
    counts = np.bincount(which, minlength=n_bins)
    keep = counts > 0
    mean_conf = np.bincount(which, weights=confidence, minlength=n_bins)[keep] / counts[keep]
    accuracy = np.bincount(which, weights=correct, minlength=n_bins)[keep] / counts[keep]
    return pd.DataFrame({"confidence": mean_conf, "accuracy": accuracy, "count": counts[keep]})
