"""The report's tables as rows of display strings, shared by the HTML and the Markdown page.
Cells hold raw user text; each page escapes it for its own format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.scoring.axes import AXES
from crsbench.crs.definition import COMPONENTS
from crsbench.report import evidence
from crsbench.report.terminal import fmt

from crsbench.report.terminal import AXIS_HEADERS  # noqa: E402  (one set of axis names for every output)

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score import ScoreReport
METRIC_HEADERS = {"auroc": "AUROC", "balanced_accuracy": "bal. acc.", "ece": "ECE", "brier": "Brier", "nll": "NLL"}


@dataclass(frozen=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""
    emphasis: list[bool] = field(default_factory=list)  # rows drawn bold (the leading tier)
    text_columns: int = 1  # leading columns of names, aligned left


def _interval(row) -> str:
    if bool(row.get("is_reference", False)):
        return "reference"
    return "-" if pd.isna(row["ci_low"]) else f"[{fmt(row['ci_low'], 1)}, {fmt(row['ci_high'], 1)}]"


def _tier(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)):
        return "-"
    return "yes" if bool(value) else ""


def _name(encoder, row) -> str:
    return f"{encoder} (baseline)" if bool(row.get("baseline", False)) else str(encoder)


def _score_rows(frame: pd.DataFrame) -> tuple[list[list[str]], list[bool]]:
    rows, emphasis = [], []
    for encoder, row in frame.iterrows():
        rows.append([_name(encoder, row), *(fmt(row.get(a)) for a in AXES), *(fmt(row[c], 1) for c in COMPONENTS),
                     fmt(row["crs"], 1), _interval(row), fmt(row["p_rank1"], 2), _tier(row["in_leading_tier"])])
        tier = row["in_leading_tier"]
        emphasis.append(bool(tier) if tier is not pd.NA and pd.notna(tier) else False)
    return rows, emphasis


def score_tables(report: ScoreReport) -> list[Table]:
    """Per task first, then the cross-task summary (docs/crs.md: per-task scores come first)."""
    level = float(report.settings.get("level", 0.95))
    headers = ["encoder", *(AXIS_HEADERS[a] for a in AXES), *(c.replace("_", " ") for c in COMPONENTS), "CRS", f"{level:.0%} interval", "P(#1)",
               "leading tier"]
    caption = f"reference: {report.reference}; interval, P(#1), tier: {report.interval_label or 'no bootstrap'}"
    tables = []
    for task in report.settings.get("tasks", []):
        frame = report.scores_by_task[report.scores_by_task["task"] == task].set_index("encoder")
        rows, emphasis = _score_rows(frame)
        tables.append(Table(f"Task {task}", headers, rows, caption, emphasis))
    rows, emphasis = _score_rows(report.scores)
    partial = "; ".join(f"{a} covers {n} task(s) only" for a, n in (report.axes_partial or {}).items())
    missing = "; ".join(f"{a} missing: {r}" for a, r in report.axes_missing.items())
    tail = "; ".join(p for p in (partial, missing) if p)
    tables.append(Table("Across tasks", headers, rows, caption + (f"; {tail}" if tail else ""), emphasis))
    return tables


def rank_table(report: ScoreReport) -> Table:
    shift = evidence.rank_shift(report)
    partners: dict[str, list[str]] = {}
    for a, b in evidence.reversed_pairs(report):
        partners.setdefault(a, []).append(b)
        partners.setdefault(b, []).append(a)
    rows = []
    for encoder, row in shift.iterrows():
        move = int(row["auroc_rank"] - row["crs_rank"])
        rows.append([str(encoder), fmt(row["auroc"]), str(int(row["auroc_rank"])), fmt(row["crs"]),
                     str(int(row["crs_rank"])),
                     f"{move:+d}" if move else "0", ", ".join(partners.get(str(encoder), [])) or "-"])
    caption = "rank moves: + means CRS ranks the encoder higher than AUROC does"
    if report.baselines:
        caption += f"; floor baselines {', '.join(report.baselines)} are left out of the rank statistics"
    return Table("AUROC rank against CRS rank", ["encoder", "AUROC", "AUROC rank", "CRS", "CRS rank", "move",
                                                 "reversed with"], rows, caption,
                 [bool(r) for r in shift["reversed"]])


def metrics_table(records: pd.DataFrame) -> Table:
    frame = evidence.per_task_metrics(records)
    metrics = [m for m in evidence.TABLE_METRICS if f"{m}_mean" in frame]
    rows = []
    for row in frame.itertuples(index=False):
        values = row._asdict()
        cells = [str(values["task"]), str(values["encoder"]), str(values["n_seeds"])]
        for metric in metrics:
            mean, std = values[f"{metric}_mean"], values[f"{metric}_std"]
            cells.append(fmt(mean) + ("" if pd.isna(std) else f" \u00b1 {std:.3f}"))
        rows.append(cells)
    return Table("Per-task metrics (clean test, 100% labels)", ["task", "encoder", "seeds",
                                                                *(METRIC_HEADERS[m] for m in metrics)],
                 rows, "mean \u00b1 standard deviation over seeds", text_columns=2)
