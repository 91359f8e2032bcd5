"""The leaderboard's tables as plain values, their columns read from the scored value itself: every
column a score table holds is shown (a known column under its name, any other in the order the table
has it), so a column the scoring adds, such as a CRS component, appears without a change here.

A table is {caption, columns, rows}; a column is {key, label, kind, axis}; a row is {encoder, family,
leading, cells}, a cell {text, sort} (`sort`: the number the page sorts by, None where absent). The
tier and the interval are cells of the row they belong to, so sorting moves them with their values.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
import pandas as pd

from crsbench.report.tables import interval_cell, tier_cell
from crsbench.report.terminal import AXIS_HEADERS, fmt
from crsbench.scoring.axes import AXES

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport

# what each axis is made from, the raw metric a reader checks it against (those the table holds)
RAW_METRICS: dict[str, tuple[str, ...]] = {
    "discrimination": ("discrimination",),  # the AUROC itself
    "calibration": ("brier", "ece", "calibration_error"),
    "label_efficiency": ("sufficient_fraction",),
    "robustness": ("perturbed_auroc", "shift_auroc"),
}
LABELS: dict[str, str] = {
    **AXIS_HEADERS, "crs": "CRS", "skill": "skill", "p_rank1": "P(rank 1)", "brier": "Brier", "ece": "ECE",
    "nll": "NLL", "calibration_error": "calibration error", "perturbed_auroc": "AUROC perturbed",
    "shift_auroc": "AUROC shift", "sufficient_fraction": "sufficient fraction", "auroc_rank": "AUROC rank",
    "crs_rank": "rank", "n_not_assessable": "axes not assessable",
}
# columns the page shows in their own way (rank, interval, tier) or that only mark a row
SHOWN_APART = {"crs_rank", "ci_low", "ci_high", "in_leading_tier", "is_reference", "baseline", "departures",
               "task", "encoder", "interval", "view", "not_assessable", "n_seeds"}
# the columns of the overall and per-task views before any other: the axes, then the score
LEADING = (*AXES, "crs")
# everything else the scoring computes today; a column outside these is a component of the CRS or a
# field added later, and the components view shows it
KNOWN = {*LEADING, *SHOWN_APART, "skill", "p_rank1", "auroc_rank", "n_not_assessable", "ece", "brier", "nll",
         "perturbed_auroc", "shift_auroc", "calibration_error", "ece_temperature_scaled", "kappa_quadratic",
         "sufficient_fraction", "perturbation_retention", "shift_retention"}


NAME_CHARS = 48  # a name in a table cell; the provenance view keeps it whole


def name_cell(name: str) -> dict:
    """An encoder's name as a table shows it: cut with an ellipsis past NAME_CHARS, so one long name cannot
    widen every table (the row's data keeps the whole name, which filters and comparisons use)."""
    return {"text": name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "\u2026", "sort": None}


def label(column: str) -> str:
    return LABELS.get(column, column.replace("_", " "))


def _number(value: Any) -> float | None:
    if value is None or value is pd.NA or isinstance(value, str):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def cell(value: Any, digits: int = 3) -> dict:
    if isinstance(value, (bool, np.bool_)):
        return {"text": "yes" if value else "no", "sort": float(bool(value))}
    number = _number(value)
    if number is None:
        text = "-" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
        return {"text": text, "sort": None}
    return {"text": fmt(value, digits), "sort": number}


def _column(key: str, kind: str = "num") -> dict:
    return {"key": key, "label": label(key), "kind": kind, "axis": key if key in AXES else ""}


def _frame_columns(frame: pd.DataFrame, wanted: Iterable[str]) -> list[str]:
    return [c for c in wanted if c in frame.columns]


def extra_columns(frame: pd.DataFrame) -> list[str]:
    """Columns of a score table the scoring of today does not compute: the CRS components and any
    field added since, in the table's own order."""
    return [str(c) for c in frame.columns if str(c) not in KNOWN]


def score_table(frame: pd.DataFrame, caption: str, facts: dict, keep: Iterable[str] | None = None) -> dict:
    """One scope's table: rank, encoder, family, the axes, CRS, interval, tier, then every other column."""
    leading = _frame_columns(frame, LEADING)
    rest = [c for c in frame.columns if str(c) not in SHOWN_APART and str(c) not in leading]
    columns = ([{"key": "rank", "label": "#", "kind": "num", "axis": ""}, {"key": "encoder", "label": "encoder",
                "kind": "text", "axis": ""}, {"key": "family", "label": "family", "kind": "text", "axis": ""}]
               + [_column(c) for c in leading] + [{"key": "interval", "label": "interval", "kind": "interval",
                "axis": ""}, {"key": "tier", "label": "leading tier", "kind": "text", "axis": ""}]
               + [_column(str(c)) for c in rest])
    rows = []
    for encoder, row in frame.iterrows():
        if keep is not None and str(encoder) not in keep:
            continue
        fact = facts.get(str(encoder))
        family = fact.specialty if fact else "unknown"
        name = f"{encoder} (baseline)" if bool(row.get("baseline", False)) else str(encoder)
        tier = tier_cell(row.get("in_leading_tier"))
        cells = [cell(row.get("crs_rank")), name_cell(name), {"text": family, "sort": None}]
        cells += [cell(row[c], 1 if c == "crs" else 3) for c in leading]
        cells += [{"text": interval_cell(row), "sort": _number(row.get("ci_low"))},
                  {"text": tier or "no", "sort": 1.0 if tier == "yes" else 0.0}]
        cells += [cell(row[c]) for c in rest]
        rows.append({"encoder": str(encoder), "family": family, "leading": tier == "yes", "cells": cells})
    return {"caption": caption, "columns": columns, "rows": rows}


def axis_table(report: ScoreReport, axis: str, scope: str, facts: dict) -> dict:
    """One axis in one scope: its value with the case-bootstrap interval, and the raw metrics behind it."""
    table = report.point.scores if scope == "overall" else \
        report.point.scores_by_task[report.point.scores_by_task["task"] == scope].set_index("encoder")
    if scope != "overall" and not report.point.axes_by_task.empty:
        raw = report.point.axes_by_task[report.point.axes_by_task["task"] == scope].set_index("encoder")
    else:
        raw = report.point.axes
    metrics = [m for m in RAW_METRICS.get(axis, ()) if m in raw.columns and m != axis]
    intervals = report.intervals.axis_intervals
    if not intervals.empty:
        intervals = intervals[(intervals["scope"] == scope) & (intervals["axis"] == axis)].set_index("encoder")
    columns = [{"key": "encoder", "label": "encoder", "kind": "text", "axis": ""},
               {"key": "family", "label": "family", "kind": "text", "axis": ""},
               {"key": axis, "label": label(axis), "kind": "num", "axis": axis},
               {"key": "interval", "label": "interval", "kind": "interval", "axis": ""},
               {"key": "tier", "label": "leading tier", "kind": "text", "axis": ""}]
    columns += [{"key": m, "label": f"raw: {label(m)}", "kind": "num", "axis": ""} for m in metrics]
    rows = []
    for encoder, row in table.iterrows():
        fact = facts.get(str(encoder))
        family = fact.specialty if fact else "unknown"
        low = high = None
        if not intervals.empty and encoder in intervals.index:
            low, high = _number(intervals.loc[encoder, "ci_low"]), _number(intervals.loc[encoder, "ci_high"])
        tier = tier_cell(row.get("in_leading_tier"))
        cells = [name_cell(str(encoder)), {"text": family, "sort": None}, cell(row.get(axis)),
                 {"text": "-" if low is None else f"[{fmt(low)}, {fmt(high)}]", "sort": low},
                 {"text": tier or "no", "sort": 1.0 if tier == "yes" else 0.0}]
        cells += [cell(raw.loc[encoder, m] if encoder in raw.index else None) for m in metrics]
        rows.append({"encoder": str(encoder), "family": family, "leading": tier == "yes", "cells": cells})
    return {"caption": f"{label(axis)}: {'across tasks' if scope == 'overall' else 'task ' + scope}",
            "columns": columns, "rows": rows}


def components_table(report: ScoreReport, facts: dict) -> dict | None:
    """The columns of the across-task scores that are not the axes, CRS or the known metrics: the CRS
    components where the scored value holds them; None where it holds none."""
    frame = report.point.scores
    if report.components.components is not None and len(report.components.components):  # the components' own table, by encoder
        frame = frame.join(report.components.components.drop(columns=[c for c in report.components.components.columns if c in frame.columns]))
    extra = extra_columns(frame)
    if not extra:
        return None
    columns = [{"key": "encoder", "label": "encoder", "kind": "text", "axis": ""},
               {"key": "family", "label": "family", "kind": "text", "axis": ""}, _column("crs")]
    columns += [_column(c, "num" if pd.api.types.is_numeric_dtype(frame[c]) else "text") for c in extra]
    rows = []
    for encoder, row in frame.iterrows():
        fact = facts.get(str(encoder))
        family = fact.specialty if fact else "unknown"
        cells = [name_cell(str(encoder)), {"text": family, "sort": None}, cell(row.get("crs"), 1)]
        cells += [cell(row[c]) for c in extra]
        rows.append({"encoder": str(encoder), "family": family, "leading": tier_cell(row.get("in_leading_tier")) == "yes",
                     "cells": cells})
    return {"caption": "CRS components, across tasks", "columns": columns, "rows": rows}


def pair_data(report: ScoreReport) -> list[list]:
    """Each ordered pair's paired differences for the comparison view: [scope, axis, e, f, diff, low, high,
    P(e > f)], from the case bootstrap's pair table; where there is none (the seed-only bootstrap), the
    CRS across tasks from the pairwise probabilities alone, without an interval."""
    out = []
    pairs = report.intervals.pair_intervals
    if pairs is not None and not pairs.empty:
        for row in pairs.itertuples(index=False):
            out.append([str(row.scope), str(row.axis), str(row.encoder), str(row.versus), _number(row.diff),
                        _number(row.diff_low), _number(row.diff_high), _number(row.p_greater)])
        return out
    pairwise, crs = report.tier.pairwise, report.point.scores["crs"]
    if pairwise is None or pairwise.empty:
        return out
    for e in pairwise.index:
        for f in pairwise.index:
            if e != f:
                out.append(["overall", "crs", str(e), str(f), _number(crs[e] - crs[f]), None, None,
                            _number(pairwise.loc[e, f])])
    return out
