"""The plain-language summary at the top of the report, generated from the numbers (never written
by hand): the leading tier and why, what a higher-AUROC encoder loses, how sure the ranking is."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.scoring.axis_evidence import thin_axes
from crsbench.crs.definition import CRSDefinition, crs_batch
from crsbench.report import claims as advice
from crsbench.report.evidence import WorstCondition

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport

AXIS_WORDS = {"discrimination": "discrimination", "calibration": "calibration",
              "label_efficiency": "label efficiency", "robustness": "robustness", "worst_subgroup": "worst subgroup"}
MAX_CHALLENGERS = 3


def _interval(row, level: float) -> str:
    if pd.isna(row.get("ci_low", math.nan)):
        return ""
    return f", {level:.0%} interval [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"


def _loss(worst: WorstCondition | None) -> str:
    if worst is None:
        return ""
    share = worst.share_above_chance_lost
    share_text = ""
    if math.isfinite(share) and share >= 1:
        share_text = " (all of its AUROC above chance)"
    elif math.isfinite(share) and share > 0:
        share_text = f" ({share:.0%} of its AUROC above chance)"
    where = (f"under {worst.condition} at severity {worst.severity}" if worst.severity
             else f"under {worst.condition.replace('shift:', 'the shift to ')}")
    return f"; its AUROC falls from {worst.clean:.3f} to {worst.perturbed:.3f}{share_text} {where} on task {worst.task}"


def summary_sentences(report: ScoreReport, weakest: dict[str, str], worst: dict[str, WorstCondition]) -> list[str]:
    """Sentences in reading order. `weakest`: encoder -> its lowest axis in skill u;
    `worst`: encoder -> the condition costing it most AUROC (evidence.worst_conditions)."""
    scores = report.point.scores
    if scores.empty:
        return ["No encoder could be scored."]
    level = report.settings.level
    top, row = str(scores.index[0]), scores.iloc[0]
    baselines = set(map(str, report.baselines))
    roles = {report.reference: "the reference: CRS 0 by definition"} | {b: "a floor baseline" for b in baselines}
    role = f" ({roles[top]})" if top in roles else ""
    sentences = []
    if report.tier.members:
        label = f" ({report.intervals.label})" if report.intervals.label else ""
        others = [e for e in report.tier.members if e != top]
        tied = (f"; the bootstrap cannot separate {', '.join(others)} from it" if others
                else "; the bootstrap separates it from every other encoder")
        sentences.append(f"Leading tier across tasks{label}: {', '.join(report.tier.members)}. "
                         f"{top}{role} has the highest CRS ({row['crs']:.2f}{_interval(row, level)}){tied}.")
    else:
        sentences.append(f"{top}{role} has the highest CRS ({row['crs']:.2f}); no bootstrap was run, so there is no "
                         "leading tier and no interval.")
    sentences.append(advice.target_line(report))
    sentences += advice.floor_sentences(report, "across tasks")
    thin = thin_axes(report.evidence.axis_evidence)
    sentences += advice.thin_sentences(thin)
    sentences += advice.small_class_sentences(report)
    sentences += advice.tier_against_p_rank1(report)
    ranked = scores
    why = _why_top(ranked, top, report)
    if why:
        sentences.append(why)
    sentences += _challengers(ranked, top, weakest, worst, report)
    sentences += task_sentences(report)
    by_task = report.tier.members_by_task
    if by_task:
        parts = "; ".join(f"{task}: {', '.join(tier)}" for task, tier in by_task.items())
        sentences.append(f"Leading tier per task: {parts}.")
    if len(report.agreement.table) and int(report.agreement.table.iloc[0]["n_pairs"]) == 0:
        sentences.append("Fewer than two encoders are ranked outside the floor baselines: AUROC and CRS rankings "
                         "are not compared.")
    elif len(report.agreement.table):
        a = report.agreement.table.iloc[0]
        sentences.append(f"AUROC and CRS order {int(a['n_reversed'])} of {int(a['n_pairs'])} pairs of encoders "
                         f"differently (Spearman {a['spearman']:.2f}).")
    sensitivity = report.point.weight_sensitivity
    if sensitivity is not None and len(sensitivity):
        leader = sensitivity["p_top"].idxmax()
        sentences.append(f"With the axis weights drawn at random instead of equal, {leader} is top in "
                         f"{sensitivity.loc[leader, 'p_top']:.0%} of draws.")
    for axis, reason in report.axes_missing.items():
        sentences.append(f"The {AXIS_WORDS.get(axis, axis)} axis is missing ({reason}): the CRS uses the other axes.")
    return sentences


AXIS_VALUE_WORDS = {"discrimination": "AUROC", "calibration": "Brier skill",
                    "label_efficiency": "AUROC over label fractions", "robustness": "AUROC under perturbation/shift",
                    "worst_subgroup": "AUROC of the worst subgroup"}


def axis_contributions(report: ScoreReport, first: str, second: str, scores: pd.DataFrame | None = None) -> pd.Series:
    """Per axis, the CRS points by which `first` leads `second` (CRSBatch.contribution), from the axis
    values of `scores` (default: the cross-task table) and the constants the report printed; they sum
    to the CRS difference of that scope. Axes the scope lacks are left out, as its CRS leaves them."""
    scores = report.point.scores if scores is None else scores
    settings = report.settings
    weights = settings.axis_weights
    if first not in scores.index or second not in scores.index:
        return pd.Series(dtype=float)
    pair = scores.loc[[first, second]]
    axes = [a for a in weights if a in pair.columns and pd.to_numeric(pair[a], errors="coerce").notna().all()]
    if not axes:
        return pd.Series(dtype=float)
    config = CRSDefinition(anchors=settings.anchors, scales=settings.scales, axis_weights={a: weights[a] for a in axes})
    batch = crs_batch(pair[axes].to_numpy(dtype=float), 1, config, axes)
    return pd.Series(batch.contribution[0], index=axes, dtype=float)


def deciding_sentence(report: ScoreReport, first: str, second: str, scores: pd.DataFrame | None = None) -> str:
    """Which axes make the difference between two encoders, largest first, with the values behind them."""
    scores = report.point.scores if scores is None else scores
    parts = axis_contributions(report, first, second, scores)
    if parts.empty:
        return ""
    pieces = []
    for axis in parts.abs().sort_values(ascending=False).index:
        mine, theirs = scores.loc[first, axis], scores.loc[second, axis]
        pieces.append(f"{AXIS_VALUE_WORDS.get(axis, axis)} {parts[axis]:+.1f} ({mine:.3f} vs {theirs:.3f})")
    if report.settings.definition == "components":
        # the per-axis parts sum to the mean-of-skills difference, not to the composite's: said as such
        lead = float(scores.loc[first, "crs"]) - float(scores.loc[second, "crs"])
        return (f"{first} leads {second} by {lead:.1f} CRS points (components definition); the weighted skill "
                f"differences, {parts.sum():.1f} points by the mean of skills: " + ", ".join(pieces) + ".")
    return f"{first} leads {second} by {parts.sum():.1f} CRS points: " + ", ".join(pieces) + "."


def task_sentences(report: ScoreReport) -> list[str]:
    """Per task, what puts its first encoder ahead of its second."""
    out = []
    frame = report.point.scores_by_task
    for task in report.settings.tasks:
        rows = frame[frame["task"] == task].set_index("encoder").sort_values("crs", ascending=False)
        if len(rows) < 2:
            continue
        sentence = deciding_sentence(report, str(rows.index[0]), str(rows.index[1]), rows)
        if sentence:
            out.append(f"Task {task}: {sentence}")
        baselines = set(map(str, report.baselines))
        tier = [str(e) for e in report.tier.members_by_task.get(task, ())]
        if str(rows.index[0]) in baselines:
            out.append(f"Task {task}: a training-free floor baseline ({rows.index[0]}) is first: none of the "
                       "pretrained encoders beat it on this task.")
        elif any(e in baselines for e in tier):
            tied = ", ".join(e for e in tier if e in baselines)
            out.append(f"Task {task}: the training-free floor baseline(s) {tied} are in the task's leading tier: "
                       f"{rows.index[0]} did not beat them beyond the noise.")
    return out


def _why_top(ranked: pd.DataFrame, top: str, report: ScoreReport | None = None) -> str:
    if report is None or len(ranked) < 2:
        return ""
    return deciding_sentence(report, top, str(ranked.index[1]))


def _challengers(ranked: pd.DataFrame, top: str, weakest: dict[str, str], worst: dict[str, WorstCondition],
                 report: ScoreReport | None = None) -> list[str]:
    """Encoders with a higher AUROC than the top-CRS encoder, and what they lose."""
    if "discrimination" not in ranked or pd.isna(ranked.loc[top, "discrimination"]):
        return []
    top_auroc = ranked.loc[top, "discrimination"]
    higher = ranked[ranked["discrimination"] > top_auroc].sort_values("discrimination", ascending=False)
    out = []
    for encoder, row in higher.head(MAX_CHALLENGERS).iterrows():
        parts = axis_contributions(report, top, str(encoder)) if report is not None else pd.Series(dtype=float)
        gains = parts[parts > 0].sort_values(ascending=False)
        weak = ("; it loses on " + ", ".join(f"{AXIS_VALUE_WORDS.get(a, a)} ({v:.1f} points)" for a, v in gains.items())
                if len(gains) else "")
        out.append(f"{encoder} has a higher AUROC than {top} ({row['discrimination']:.3f} vs {top_auroc:.3f}) but a "
                   f"lower CRS ({row['crs']:.2f} vs {ranked.loc[top, 'crs']:.2f}){weak}{_loss(worst.get(str(encoder)))}.")
    return out
