"""Terminal output: rich tables and lines of prose. User text (encoder, task and file names, notes)
goes in as rich Text, never as markup, so a name like `scan[zoo]` prints as written."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from rich.table import Table
from rich.text import Text

from crsbench.axes import AXES
from crsbench.crs import COMPONENTS, DEFAULT_LEVEL
from crsbench.printable import printable
from crsbench.records import clean_full_label


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.{digits}f}"


def _rank(value: Any) -> str:
    """A rank as a whole number, or with its tie half (2.5) when tied."""
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{float(value):g}"


# --------------------------------------------------------------------------- results


def _partial_label(grid) -> str:
    return "PARTIAL VIEW - " if grid is not None and getattr(grid, "partial_view", False) else ""


def results_table(aggregate: pd.DataFrame, grid=None) -> Table:
    """Clean test at 100% labels from a seed aggregate: AUROC / ECE per encoder and task, best mean AUROC first.
    `grid` (a grid.GridStatus): a partial view is labelled in the title and caption."""
    frame = clean_full_label(aggregate)
    seeds = int(frame["n_seeds"].max()) if len(frame) else 0
    table = Table(title=Text(f"{_partial_label(grid)}Clean test, 100% labels: AUROC / ECE (mean over {seeds} seeds)"))
    if _partial_label(grid):
        table.caption = Text(grid.label())
    table.add_column("encoder", style="bold")
    tasks = sorted(frame["task"].unique())
    for task in tasks:
        table.add_column(Text(printable(task)), justify="right")
    table.add_column("mean AUROC", justify="right")
    order = frame.groupby("encoder")["auroc_mean"].mean().sort_values(ascending=False, kind="stable")
    for encoder, mean_auroc in order.items():
        by_task = frame[frame["encoder"] == encoder].set_index("task")
        cells = [
            f"{by_task.at[t, 'auroc_mean']:.3f} / {by_task.at[t, 'ece_mean']:.3f}" if t in by_task.index else "-"
            for t in tasks
        ]
        table.add_row(Text(printable(encoder)), *cells, f"{mean_auroc:.3f}")
    return table


def run_summary_line(summary, elapsed: float) -> Text:
    line = Text(
        f"{summary.written} records written, {summary.skipped} already stored, "
        f"{summary.forward_passes} encoder batches run, in {elapsed:.1f} s. Results: {summary.output}/results.sqlite"
    )
    rejected = getattr(summary, "cache_rejected", [])
    if rejected:
        line.append(f"\n{len(rejected)} embedding cache entries rejected (damaged or made for another request) "
                    f"and recomputed: {', '.join(rejected[:5])}{' ...' if len(rejected) > 5 else ''}")
    if getattr(summary, "aborted_runs", []):
        line.append(f"\nmarked as aborted (never finished): run {', '.join(summary.aborted_runs)}")
    return line


# --------------------------------------------------------------------------- scores


# What each axis value is, in its own units (docs/crs.md, "Axes")
AXIS_HEADERS: dict[str, str] = {
    "discrimination": "AUROC",
    "calibration": "Brier skill",
    "label_efficiency": "AUROC over f",
    "robustness": "AUROC pert/shift",
}
BESIDE_HEADERS: dict[str, str] = {
    "kappa_quadratic": "QWK",
    "ece": "ECE",
    "ece_temperature_scaled": "ECE (T)",
    "sufficient_fraction": "enough f",
}


def _axis_header(report, axis: str) -> str:
    """An axis covering fewer tasks than the others carries its task count wherever it is shown."""
    partial = getattr(report, "axes_partial", {}) or {}
    n_tasks = len(report.settings.get("tasks", []))
    return f"{AXIS_HEADERS[axis]} ({partial[axis]}/{n_tasks} tasks)" if axis in partial else AXIS_HEADERS[axis]


def constants_line(report) -> str:
    """The constants, printed with every score."""
    settings = report.settings
    anchors, scales = settings.get("anchors", {}), settings.get("scales", {})
    weights = settings.get("axis_weights", {})
    pairs = ", ".join(f"{AXIS_HEADERS.get(a, a)} ({anchors[a]:g} + {scales[a]:g} u, w={weights.get(a, float('nan')):.2f})"
                      for a in anchors)
    return (f"skill u = (value - no-value level) / span to perfect: {pairs}; "
            "CRS = 100 * sum w u, minus the reference's (skill points)")


def _interval_cell(row) -> Text:
    if bool(row.get("is_reference", False)):
        return Text("reference")
    if pd.isna(row["ci_low"]):
        return Text("-")
    return Text(f"[{fmt(row['ci_low'], 1)}, {fmt(row['ci_high'], 1)}]")


def _tier_cell(value) -> str:
    return "-" if value is pd.NA or value is None or (isinstance(value, float) and math.isnan(value)) else (
        "*" if bool(value) else "")


def _name_cell(encoder, row) -> Text:
    marks = " (baseline)" if bool(row.get("baseline", False)) else ""
    return Text(f"{printable(encoder)}{marks}")


def partial_prefix(report) -> str:
    """A partial view (an incomplete grid the user asked to see) says so everywhere it is shown."""
    return "PARTIAL VIEW - " if (report.settings.get("grid") or {}).get("partial_view") else ""


def _score_table(report, title: str, frame: pd.DataFrame, beside: tuple[str, ...], ranks: bool) -> Table:
    table = Table(title=Text(partial_prefix(report) + title))
    level = report.settings.get("level", DEFAULT_LEVEL)
    columns = [("encoder", "left")]
    columns += [(_axis_header(report, a), "right") for a in AXES]
    columns += [(BESIDE_HEADERS[c], "right") for c in beside]
    columns += [("skill", "right"), ("CRS", "right"),
                (f"{level:.0%} CI", "right"), ("P(#1)", "right"), ("tier", "center")]
    if ranks:
        columns += [("AUROC rank", "right"), ("CRS rank", "right")]
    for header, justify in columns:
        table.add_column(header, justify=justify)
    for encoder, row in frame.iterrows():
        flagged = bool(row.get("not_assessable", False))
        axis_cells = [fmt(row[a]) + ("!" if flagged and a == "discrimination" else "") for a in AXES]
        cells = [
            _name_cell(encoder, row),
            *axis_cells,
            *(fmt(row[c], 2) if c == "sufficient_fraction" else fmt(row[c]) for c in beside),
            *(fmt(row[c], 1) for c in COMPONENTS),
            fmt(row["crs"], 1),
            _interval_cell(row),
            fmt(row["p_rank1"], 2),
            _tier_cell(row["in_leading_tier"]),
        ]
        if ranks:
            cells += [_rank(row["auroc_rank"]), _rank(row["crs_rank"])]
        table.add_row(*cells)
    caption = [constants_line(report)]
    if "ece_temperature_scaled" in beside:
        caption.append("ECE (T): after a temperature fitted on validation log-loss (not scored)")
    if report.interval_label:
        caption.append(f"CI, P(#1), tier: {report.interval_label}")
    if any(bool(v) for v in frame.get("not_assessable", [])):
        caption.append("!: clean AUROC within delta of chance: its retentions mean little (the score is unaffected)")
    table.caption = Text("; ".join(caption))
    return table


def task_tables(report) -> list[Table]:
    """One table per task (axes, the values beside them, skill, CRS, interval, tier): shown first."""
    tables = []
    frame = report.scores_by_task
    for task in report.settings.get("tasks", []):
        rows = frame[frame["task"] == task].set_index("encoder")
        # a value this task does not have (QWK outside ordinal tasks, ECE (T) in older records) is left out
        beside = tuple(c for c in BESIDE_HEADERS if c in rows and pd.to_numeric(rows[c], errors="coerce").notna().any())
        tables.append(_score_table(report, f"Task {task}: CRS (reference: {report.reference})", rows,
                                   beside, ranks=False))
    return tables


def scores_table(report) -> Table:
    """The cross-task summary, best CRS first; missing axes show '-' and are named in the caption."""
    table = _score_table(report, f"Across tasks: Clinical Reliability Score (reference: {report.reference})",
                         report.scores, ("ece",), ranks=True)
    caption = [str(table.caption)]
    caption.append(f"axes used: {', '.join(report.axes_used)}")
    caption += [f"{axis} missing: {reason}" for axis, reason in report.axes_missing.items()]
    caption += [f"{axis} covers {n} task(s) only" for axis, n in (getattr(report, "axes_partial", {}) or {}).items()]
    caption.append("tier *: not resolved from the top encoder by the paired bootstrap")
    table.caption = Text("; ".join(caption))
    return table


def _with_interval(agreement, name: str, digits: int = 2) -> str:
    low, high = agreement.get(f"{name}_low"), agreement.get(f"{name}_high")
    value = f"{agreement[name]:.{digits}f}"
    return value if low is None or pd.isna(low) else f"{value} [{low:.{digits}f}, {high:.{digits}f}]"


def score_lines(report) -> list[Text]:
    """The prose under the scores table: rank agreement, reversed pairs, sensitivity, tier, notes."""
    lines = []
    if len(report.rank_agreement):
        a = report.rank_agreement.iloc[0]
        resolved = f", {int(a['n_resolved'])} resolved by the bootstrap" if "n_resolved" in a else ""
        baselines = f" (without baselines {list(report.baselines)})" if report.baselines else ""
        if int(a.n_pairs) == 0:
            lines.append(Text(f"AUROC vs CRS ranking{baselines}: fewer than two encoders to compare"))
        else:
            lines.append(Text(
                f"AUROC vs CRS ranking{baselines}: Spearman {_with_interval(a, 'spearman')}, "
                f"Kendall tau-b {_with_interval(a, 'kendall_tau_b')}, "
                f"{int(a.n_reversed)} of {int(a.n_pairs)} pairwise orderings reversed{resolved}, "
                f"mean rank displacement {_with_interval(a, 'mean_abs_rank_displacement')}"
            ))
    for pair in report.reversed_pairs.itertuples():
        status = "" if not hasattr(pair, "resolved") else (" (resolved)" if pair.resolved else " (not resolved)")
        lines.append(Text(
            f"  reversed: {pair.encoder_a} (AUROC {pair.auroc_a:.3f}, CRS {pair.crs_a:.2f}) vs "
            f"{pair.encoder_b} (AUROC {pair.auroc_b:.3f}, CRS {pair.crs_b:.2f}){status}"
        ))
    if len(report.weight_sensitivity):
        sensitivity = report.weight_sensitivity
        top = sensitivity["p_top"].sort_values(ascending=False)
        shares = ", ".join(f"{name} {share:.1%}" for name, share in top.items() if share >= 0.0005)
        lines.append(Text(f"Under sampled axis weights, top encoder: {shares}"))
        moving = [str(e) for e in sensitivity.index[sensitivity.get("place_depends", pd.Series(False))]]
        if moving:
            lines.append(Text(f"  place depends on the axis weights: {', '.join(moving)}"))
    for task, tier in (getattr(report, "leading_tier_by_task", {}) or {}).items():
        lines.append(Text(f"Leading tier, task {task}: {', '.join(tier)}"))
    tier = ", ".join(report.leading_tier) or "- (no bootstrap)"
    label = f" ({report.interval_label})" if report.interval_label else ""
    lines.append(Text(f"{partial_prefix(report)}Leading tier across tasks{label}: {tier}"))
    lines += [Text(f"note: {note}", style="dim") for note in report.notes]
    return lines


# --------------------------------------------------------------------------- perturbations


def perturbations_table(modality: str, specs) -> Table:
    table = Table(title=Text(f"Perturbations for {modality} (severities 1-5)"))
    for column in ("name", "what it does", "severity 1 ... 5"):
        table.add_column(column)
    for spec in specs:
        table.add_row(spec.name, Text(spec.description), Text(" | ".join(str(spec.param(s)) for s in range(1, 6))))
    return table
