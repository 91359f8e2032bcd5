"""The leaderboard's subgroup view: per task, a row per encoder, set and attribute with the worst subgroup's
AUROC and the gap (best minus worst), each with its simultaneous interval and the bootstrap's bias estimate
beside it, and the subgroups whose difference to the rest excludes 0 (docs/subgroups.md). Built from the
scored value's subgroup part, so it holds whatever the bundles' subgroup labels let the scoring compute, and
says why where it is empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from crsbench.bundles.leaderboard_tables import cell, name_cell
from crsbench.report.terminal import fmt
from crsbench.scoring.subgroups import flagged

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport

COLUMNS = (("encoder", "encoder", "text"), ("family", "family", "text"), ("set", "set", "text"),
           ("attribute", "attribute", "text"), ("assessable", "assessable", "num"),
           ("worst_subgroup", "worst subgroup", "text"), ("worst_auroc", "worst AUROC", "num"),
           ("worst_interval", "interval", "interval"), ("worst_bias", "bias estimate", "num"),
           ("gap", "gap (best minus worst)", "num"), ("gap_interval", "gap interval", "interval"),
           ("gap_bias", "gap bias estimate", "num"), ("flagged", "differences to the rest excluding 0", "text"))


def _interval(low, high) -> dict:
    if pd.isna(low):
        return {"text": "-", "sort": None}
    return {"text": f"[{fmt(low)}, {fmt(high)}]", "sort": float(low)}


def _flag_text(rows: pd.DataFrame) -> str:
    """`sex = F -0.050 [-0.090, -0.010]; ...`: each flagged subgroup's difference to the rest and its interval."""
    return "; ".join(f"{r.subgroup} {r.diff:+.3f} [{r.diff_low:+.3f}, {r.diff_high:+.3f}]" for r in rows.itertuples()) or "none"


def _task_table(task: str, worst: pd.DataFrame, marked: pd.DataFrame, facts: dict) -> dict:
    columns = [{"key": key, "label": label, "kind": kind, "axis": ""} for key, label, kind in COLUMNS]
    rows = []
    for row in worst.itertuples():
        fact = facts.get(str(row.encoder))
        family = fact.specialty if fact else "unknown"
        mine = marked[(marked["encoder"] == row.encoder) & (marked["set"] == row.set) & (marked["attribute"] == row.attribute)]
        cells = [name_cell(str(row.encoder)), {"text": family, "sort": None}, {"text": str(row.set), "sort": None},
                 {"text": str(row.attribute), "sort": None},
                 {"text": f"{int(row.n_assessable)} of {int(row.n_subgroups)}", "sort": float(row.n_assessable)},
                 {"text": "-" if pd.isna(row.worst_auroc) else str(row.worst_subgroup), "sort": None},
                 cell(row.worst_auroc), _interval(row.worst_low, row.worst_high), cell(row.worst_bias), cell(row.gap),
                 _interval(row.gap_low, row.gap_high), cell(row.gap_bias), {"text": _flag_text(mine), "sort": None}]
        rows.append({"encoder": str(row.encoder), "family": family, "leading": False, "cells": cells})
    return {"caption": f"Task {task}: worst subgroup and gap per attribute", "columns": columns, "rows": rows}


def subgroup_view(report: "ScoreReport", facts: dict, modality: dict[str, str]) -> dict:
    """The view's values: per task its table and the sentences of its flagged differences, the target line
    (what the intervals cover), and, where nothing could be scored, why."""
    from crsbench.report.subgroup_view import difference_sentence

    part = report.subgroups
    if part.worst.empty:
        said = [n for n in report.notes if n.startswith("subgroups:")]
        return {"tables": [], "target": "",
                "absent": said[0] if said else "No test set of these sources carries subgroup attributes."}
    marked = flagged(part.table)
    tables = []
    for task, worst in part.worst.groupby("task", sort=False):
        task = str(task)
        tables.append({"task": task, "modality": modality.get(task, ""),
                       "table": _task_table(task, worst, marked[marked["task"] == task], facts),
                       "sentences": [difference_sentence(r) for r in marked[marked["task"] == task].itertuples()]})
    return {"tables": tables, "target": part.target, "absent": ""}
