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
from crsbench.report.claims import target_line

from crsbench.report.terminal import AXIS_HEADERS  # noqa: E402  (one set of axis names for every output)

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport
METRIC_HEADERS = {"auroc": "AUROC", "balanced_accuracy": "bal. acc.", "ece": "ECE", "brier": "Brier", "nll": "NLL"}


@dataclass(frozen=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""
    emphasis: list[bool] = field(default_factory=list)  # rows drawn bold (the leading tier)
    text_columns: int = 1  # leading columns of names, aligned left
    prose_columns: tuple[int, ...] = ()  # columns of running text: aligned left and wrapped, not one long line


def interval_cell(row) -> str:
    """A score row's interval as shown in every table (the leaderboard's too)."""
    if bool(row.get("is_reference", False)):
        return "reference"
    return "-" if pd.isna(row["ci_low"]) else f"[{fmt(row['ci_low'], 1)}, {fmt(row['ci_high'], 1)}]"


def tier_cell(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and pd.isna(value)):
        return "-"
    return "yes" if bool(value) else ""


def _name(encoder, row) -> str:
    return f"{encoder} (baseline)" if bool(row.get("baseline", False)) else str(encoder)


def _score_rows(frame: pd.DataFrame, axes=AXES) -> tuple[list[list[str]], list[bool]]:
    rows, emphasis = [], []
    for encoder, row in frame.iterrows():
        rows.append([_name(encoder, row), *(fmt(row.get(a)) for a in axes), *(fmt(row[c], 1) for c in COMPONENTS),
                     fmt(row["crs"], 1), interval_cell(row), fmt(row["p_rank1"], 2), tier_cell(row["in_leading_tier"])])
        tier = row["in_leading_tier"]
        emphasis.append(bool(tier) if tier is not pd.NA and pd.notna(tier) else False)
    return rows, emphasis


def score_tables(report: ScoreReport) -> list[Table]:
    """Per task first, then the cross-task summary (docs/crs.md: per-task scores come first)."""
    level = report.settings.level
    headers = ["encoder", *(AXIS_HEADERS[a] for a in report.shown_axes), *(c.replace("_", " ") for c in COMPONENTS), "CRS", f"{level:.0%} interval", "P(#1)",
               "leading tier"]
    caption = (f"reference: {report.reference}; interval, P(#1), tier: {report.intervals.label or 'no bootstrap'}. "
               + target_line(report))
    tables = []
    for task in report.settings.tasks:
        frame = report.point.scores_by_task[report.point.scores_by_task["task"] == task].set_index("encoder")
        rows, emphasis = _score_rows(frame, report.shown_axes)
        tables.append(Table(f"Task {task}", headers, rows, caption, emphasis))
    rows, emphasis = _score_rows(report.point.scores, report.shown_axes)
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


def _case_interval(report: ScoreReport, task: str, encoder: str, axis: str) -> str:
    """The axis's case-level interval on one task, from the paired bootstrap (empty when it did not run)."""
    table = report.intervals.axis_intervals if report is not None else None
    if table is None or table.empty:
        return ""
    row = table[(table["scope"] == task) & (table["encoder"] == encoder) & (table["axis"] == axis)]
    if row.empty or pd.isna(row["ci_low"].iloc[0]):
        return ""
    return f" [{fmt(row['ci_low'].iloc[0])}, {fmt(row['ci_high'].iloc[0])}]"


def metrics_table(records: pd.DataFrame, report: ScoreReport | None = None) -> Table:
    """Per task and encoder, the clean test at 100% labels. AUROC and Brier skill carry their case-level
    interval from the paired bootstrap; the seed spread is not shown where it is zero by construction (at
    100% labels every seed fits the same training rows), and shown as a range where it is not."""
    frame = evidence.per_task_metrics(records)
    metrics = [m for m in evidence.TABLE_METRICS if f"{m}_mean" in frame]
    skill = None
    if report is not None and "calibration" in report.axes_used and len(report.point.axes_by_task):
        skill = report.point.axes_by_task.set_index(["task", "encoder"])["calibration"]
    rows = []
    for row in frame.itertuples(index=False):
        values = row._asdict()
        task, encoder = str(values["task"]), str(values["encoder"])
        cells = [task, encoder, str(values["n_seeds"])]
        for metric in metrics:
            mean, std = values[f"{metric}_mean"], values[f"{metric}_std"]
            cell = fmt(mean)
            if metric == "auroc":
                cell += _case_interval(report, task, encoder, "discrimination")
            if not pd.isna(std) and std > 5e-4:
                cell += f" (seed sd {std:.3f})"
            cells.append(cell)
        if skill is not None:
            value = skill.get((task, encoder), float("nan"))
            cells.append(fmt(value) + _case_interval(report, task, encoder, "calibration"))
        rows.append(cells)
    headers = ["task", "encoder", "seeds", *(METRIC_HEADERS[m] for m in metrics)] + (["Brier skill"] if skill is not None else [])
    level = report.settings.level if report is not None else 0.95
    ran = bool(report is not None and report.intervals.axis_intervals.shape[0])
    caption = ("seed means; " + (f"AUROC and Brier skill with their {level:.0%} case-level interval "
                                  f"({report.intervals.label})" if ran else
                                  "no case-level interval: the paired case bootstrap did not run (no stored "
                                  "per-case predictions)")
               + "; a seed sd is shown only where it is not zero by construction (at 100% labels every seed "
                 "fits the same training rows)")
    return Table("Per-task metrics (clean test, 100% labels)", headers, rows, caption, text_columns=2)


def _class_words(row) -> str:
    """A class of the class-counts table by its name; tables written before names were kept have none."""
    name = row.get("name")
    return str(name) if isinstance(name, str) and name else f"class {int(row['class'])}"


def dataset_table(report: ScoreReport) -> Table:
    """Per task, each evaluation set: its cases, the cases per class, and what was run on it."""
    counts = report.evidence.class_counts
    axes = report.evidence.axis_evidence
    rows = []
    for task in report.settings.tasks:
        sets = counts[counts["task"] == task] if len(counts) else counts
        ev = axes[(axes["task"] == task) & (axes["axis"] == "robustness")] if len(axes) else axes
        run = ""
        if len(ev):
            r = ev.iloc[0]
            run = (f"{int(r['n_perturbations'])} perturbation x severity pair(s) ({r['perturbations']})"
                   if int(r["n_perturbations"]) else "no perturbation")
        for name, part in (sets.groupby("set", sort=False) if len(sets) else ()):
            per_class = ", ".join(f"{_class_words(r)}: {int(r['cases'])}" for _, r in part.iterrows())
            rows.append([str(task), "test" if name == "test" else str(name).removeprefix("shift:") + " (shift)",
                         str(int(part["cases"].sum())), str(len(part)), per_class,
                         run if name == "test" else "tested only"])
    return Table("Datasets (evaluation sets as scored)", ["task", "set", "cases", "classes", "cases per class",
                                                          "conditions run"], rows,
                 "from the run records; multi-label sets count positives per label", text_columns=2,
                 prose_columns=(4, 5))
