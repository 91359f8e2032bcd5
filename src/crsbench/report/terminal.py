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
from crsbench.records import clean_full_label


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.{digits}f}"


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
        table.add_column(Text(str(task)), justify="right")
    table.add_column("mean AUROC", justify="right")
    order = frame.groupby("encoder")["auroc_mean"].mean().sort_values(ascending=False, kind="stable")
    for encoder, mean_auroc in order.items():
        by_task = frame[frame["encoder"] == encoder].set_index("task")
        cells = [
            f"{by_task.at[t, 'auroc_mean']:.3f} / {by_task.at[t, 'ece_mean']:.3f}" if t in by_task.index else "-"
            for t in tasks
        ]
        table.add_row(Text(str(encoder)), *cells, f"{mean_auroc:.3f}")
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


def scores_table(report) -> Table:
    """The scores as a rich Table, best CRS first; missing axes show '-' and are named in the caption."""
    grid = report.settings.get("grid") or {}
    partial = "PARTIAL VIEW - " if grid.get("partial_view") else ""
    table = Table(title=Text(f"{partial}Clinical Reliability Score (reference: {report.reference})"))
    headers = [
        ("encoder", "left"),
        ("disc", "right"),
        ("calib", "right"),
        ("label eff", "right"),
        ("robust", "right"),
        ("dom", "right"),
        ("balance", "right"),
        ("worst", "right"),
        ("CRS", "right"),
        (f"{report.settings.get('level', DEFAULT_LEVEL):.0%} CI", "right"),
        ("P(#1)", "right"),
        ("tier", "center"),
        ("AUROC rank", "right"),
        ("CRS rank", "right"),
    ]
    for header, justify in headers:
        table.add_column(header, justify=justify)
    for encoder, row in report.scores.iterrows():
        interval = f"[{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]" if pd.notna(row["ci_low"]) else "-"
        tier = row["in_leading_tier"]
        table.add_row(
            Text(str(encoder)),
            *(fmt(row[a]) for a in AXES),
            *(fmt(row[c]) for c in COMPONENTS),
            fmt(row["crs"]),
            Text(interval),
            fmt(row["p_rank1"], 2),
            "-" if tier is pd.NA else ("*" if bool(tier) else ""),
            fmt(row["auroc_rank"]),
            fmt(row["crs_rank"]),
        )
    caption = [f"axes used: {', '.join(report.axes_used)}"]
    caption += [f"{axis} missing: {reason}" for axis, reason in report.axes_missing.items()]
    caption.append("tier *: not resolved from the top encoder by the paired bootstrap")
    table.caption = Text("; ".join(caption))
    return table


def score_lines(report) -> list[Text]:
    """The prose under the scores table: rank agreement, reversed pairs, weight sensitivity, tier, notes."""
    lines = []
    if len(report.rank_agreement):
        a = report.rank_agreement.iloc[0]
        lines.append(Text(
            f"AUROC vs CRS ranking: Spearman {a.spearman:.2f}, Kendall tau-b {a.kendall_tau_b:.2f}, "
            f"{int(a.n_reversed)} of {int(a.n_pairs)} pairwise orderings reversed, "
            f"mean rank displacement {a.mean_abs_rank_displacement:.2f}"
        ))
    for pair in report.reversed_pairs.itertuples():
        lines.append(Text(
            f"  reversed: {pair.encoder_a} (AUROC {pair.auroc_a:.3f}, CRS {pair.crs_a:.2f}) vs "
            f"{pair.encoder_b} (AUROC {pair.auroc_b:.3f}, CRS {pair.crs_b:.2f})"
        ))
    if len(report.weight_sensitivity):
        top = report.weight_sensitivity["p_top"].sort_values(ascending=False)
        shares = ", ".join(f"{name} {share:.1%}" for name, share in top.items() if share >= 0.0005)
        lines.append(Text(f"Under Dirichlet-sampled component and axis weights, top encoder: {shares}"))
    tier = ", ".join(report.leading_tier) or "- (no bootstrap)"
    partial = "PARTIAL VIEW - " if (report.settings.get("grid") or {}).get("partial_view") else ""
    lines.append(Text(f"{partial}Leading tier (not resolved from the top by the paired bootstrap): {tier}"))
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
