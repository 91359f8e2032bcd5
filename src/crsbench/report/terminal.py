"""Terminal output: rich tables and lines of prose. User text (encoder, task and file names, notes)
goes in as rich Text, never as markup, so a name like `scan[zoo]` prints as written. The same values as
JSON documents (`--json`) are report/documents.py."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from crsbench.report.claims import target_line
from crsbench.crs.definition import COMPONENTS
from crsbench.core.printable import printable
from crsbench.results.records import clean_full_label

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport


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
    return "PARTIAL VIEW - " if grid is not None and grid.partial_view else ""


def results_table(aggregate: pd.DataFrame, grid=None) -> Table:
    """Clean test at 100% labels from a seed aggregate: AUROC / ECE per encoder and task, best mean AUROC first.
    `grid` (a results.coverage.GridStatus): a partial view is labelled in the title and caption."""
    frame = clean_full_label(aggregate)
    seeds = int(frame["n_seeds"].max()) if len(frame) else 0
    table = Table(title=Text(f"{_partial_label(grid)}Clean test, 100% labels: AUROC / ECE (mean over {seeds} seeds)"))
    if _partial_label(grid):
        table.caption = Text(grid.label())
    table.add_column("encoder", style="bold", overflow="fold")  # a name is never cut to an ellipsis
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
    "worst_subgroup": "AUROC worst subgroup",  # the optional subgroup axis
}
BESIDE_HEADERS: dict[str, str] = {
    "kappa_quadratic": "QWK",
    "ece": "ECE",
    "ece_temperature_scaled": "ECE (T)",
    "sufficient_fraction": "enough f",
}


def _axis_header(report: ScoreReport, axis: str) -> str:
    """An axis covering fewer tasks than the others carries its task count wherever it is shown."""
    partial = report.axes_partial
    n_tasks = len(report.settings.tasks)
    return f"{AXIS_HEADERS[axis]} ({partial[axis]}/{n_tasks} tasks)" if axis in partial else AXIS_HEADERS[axis]


def constants_line(report: ScoreReport) -> str:
    """The constants, printed with every score."""
    settings = report.settings
    anchors, scales = settings.anchors, settings.scales
    weights = settings.axis_weights
    pairs = ", ".join(f"{AXIS_HEADERS.get(a, a)} ({anchors[a]:g} + {scales[a]:g} u, w={weights.get(a, float('nan')):.2f})"
                      for a in anchors)
    return f"skill u = (value - no-value level) / span to perfect: {pairs}; {definition_formula(report)}"


def definition_formula(report: ScoreReport) -> str:
    """The ranking definition in one phrase, with its constants (what the score table's numbers are)."""
    settings = report.settings
    if settings.definition != "components":
        return "CRS = 100 * sum w u, minus the reference's (skill points)"
    parts = settings.components
    weights = parts.get("component_weights", {})
    return (f"CRS = {weights.get('dominance', 0):.2f} dominance + {weights.get('balance', 0):.2f} (balance - "
            f"reference's) + {weights.get('worst', 0):.2f} (worst axis - reference's), skill points; dominance = "
            f"100 sum w tol tanh((u - u_ref) / tol), tol {parts.get('tolerance', 0):g}; balance = soft minimum of u, "
            f"tau {parts.get('balance_tau', 0):g}")


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


def partial_prefix(report: ScoreReport) -> str:
    """A partial view (an incomplete grid the user asked to see) says so everywhere it is shown."""
    return "PARTIAL VIEW - " if report.settings.partial_view else ""


@dataclass(frozen=True)
class _Column:
    header: str
    justify: str
    cells: tuple  # one Text or str per encoder, in the frame's order
    in_block: tuple = ()  # the same values as a block shows them, when they differ (a blank tier cell)
    verdict: bool = False  # CRS, interval, P(#1), tier: a block shows these first


def _score_columns(report: ScoreReport, frame: pd.DataFrame, beside: tuple[str, ...], ranks: bool) -> list[_Column]:
    """Every column of a score table, the encoder first: one list that the wide table, its stacked-header
    form and the narrow blocks all show."""
    rows = list(frame.iterrows())
    level = report.settings.level

    def column(header: str, justify: str, cell) -> _Column:
        return _Column(header, justify, tuple(cell(encoder, row) for encoder, row in rows))

    def axis(a: str):
        def cell(_, row) -> str:  # "!": a clean AUROC near chance, whose retentions mean little
            flagged = a == "discrimination" and bool(row.get("not_assessable", False))
            return fmt(row[a]) + ("!" if flagged else "")

        return cell

    columns = [column("encoder", "left", _name_cell)]
    columns += [column(_axis_header(report, a), "right", axis(a)) for a in report.shown_axes]
    columns += [column(BESIDE_HEADERS[c], "right",
                       lambda _, row, c=c: fmt(row[c], 2) if c == "sufficient_fraction" else fmt(row[c]))
                for c in beside]
    columns += [column(c, "right", lambda _, row, c=c: fmt(row[c], 1)) for c in COMPONENTS]
    verdict = [column("CRS", "right", lambda _, row: fmt(row["crs"], 1)),
               column(f"{level:.0%} CI", "right", lambda _, row: _interval_cell(row)),
               column("P(#1)", "right", lambda _, row: fmt(row["p_rank1"], 2))]
    tier = column("tier", "center", lambda _, row: _tier_cell(row["in_leading_tier"]))
    verdict.append(dataclasses.replace(tier, in_block=tuple({"*": "yes", "": "no"}.get(c, c) for c in tier.cells)))
    columns += [dataclasses.replace(c, verdict=True) for c in verdict]
    if ranks:
        columns += [column("AUROC rank", "right", lambda _, row: _rank(row["auroc_rank"])),
                    column("CRS rank", "right", lambda _, row: _rank(row["crs_rank"]))]
    return columns


def _score_caption(report: ScoreReport, frame: pd.DataFrame, beside: tuple[str, ...]) -> str:
    caption = [constants_line(report)]
    if "ece_temperature_scaled" in beside:
        caption.append("ECE (T): after a temperature fitted on validation log-loss (not scored)")
    if report.intervals.label:
        caption.append(f"CI, P(#1), tier: {report.intervals.label}")
    if any(bool(v) for v in frame.get("not_assessable", [])):
        caption.append("!: clean AUROC within delta of chance: its retentions mean little (the score is unaffected)")
    return "; ".join(caption)


def _with_target(report: ScoreReport, caption: str) -> Text:
    """A score table's caption, closed by the sentence saying what its intervals and tier cover."""
    return Text(f"{caption}. {target_line(report)}")


def _stacked(header: str) -> str:
    """A header a word or two a line (`AUROC\npert/shift`): a column as wide as its widest value or word."""
    return "\n".join(textwrap.wrap(header, max(6, *(len(w) for w in header.split())))) or header


def _fill(table: Table, columns: list[_Column], header=lambda h: h) -> Table:
    for col in columns:
        # a name folds rather than ending in an ellipsis; a number never wraps
        table.add_column(header(col.header), justify=col.justify,
                         overflow="fold" if col is columns[0] else "ellipsis", no_wrap=col is not columns[0])
    for cells in zip(*(col.cells for col in columns)):
        table.add_row(*cells)
    return table


def natural_width(console, options, renderable) -> int:
    """The width a table takes when nothing in it wraps."""
    return renderable.__rich_measure__(console, options.update_width(1_000_000)).maximum


class FittedTable(Table):
    """A score table that fits the width it is printed at: the wide table when it fits, else the same table
    with its headers stacked a word or two a line, else one block per encoder (its name on a line of its
    own, never cut, then each value beside its header). Every layout shows the same values."""

    def __init__(self, title: Text, columns: list[_Column], caption: Text):
        super().__init__(title=title, caption=caption)
        self.layout_columns = columns
        _fill(self, columns)

    def stacked(self) -> Table:
        return _fill(Table(title=self.title, caption=self.caption), self.layout_columns, _stacked)

    def layout(self, console, options) -> str:
        """`wide`, `stacked` or `blocks`: which layout this width gets."""
        if natural_width(console, options, self) <= options.max_width:
            return "wide"
        return "stacked" if natural_width(console, options, self.stacked()) <= options.max_width else "blocks"

    def __rich_console__(self, console, options):
        options = options.update(no_wrap=False, overflow="fold")  # title and caption wrap at the width too
        chosen = self.layout(console, options)
        if chosen == "wide":
            yield from super().__rich_console__(console, options)
        elif chosen == "stacked":
            yield from console.render(self.stacked(), options)
        else:
            yield from _blocks(console, options, self.title, self.layout_columns, self.caption)


BLOCK_INDENT = 2
HEADER_ROOM = 16  # a longer header (`AUROC pert/shift (1/3 tasks)`) wraps in its place rather than widen every pair


def _pairs_per_line(columns: list[_Column], width: int) -> int:
    """As many header-value pairs a line as fit `width`, three at most (a block stays a few lines)."""
    values = [c for col in columns for c in (col.in_block or col.cells)]
    header = min(HEADER_ROOM, max(len(c.header) for c in columns))
    pair = header + 1 + max(Text(str(v)).cell_len for v in values) + 3
    return max(1, min(3, (width - BLOCK_INDENT) // pair))


def _value_grid(values: list[_Column], index: int, per_line: int) -> Table:
    """One encoder's values, `per_line` header-value pairs a line."""
    grid = Table.grid(padding=(0, 3, 0, 0), pad_edge=False)
    for _ in range(per_line):
        grid.add_column(style="dim")  # the header: may wrap
        grid.add_column(no_wrap=True)  # the value: never
    pairs = [(col.header, (col.in_block or col.cells)[index]) for col in values]
    for start in range(0, len(pairs), per_line):
        cells = [item for header, value in pairs[start:start + per_line] for item in (header, value)]
        grid.add_row(*cells, *([""] * (2 * per_line - len(cells))))
    return grid


def _plain(text, style: str) -> Text:
    """Title and caption as plain text in a block layout's own style (a str is text, never markup)."""
    return Text(text.plain if isinstance(text, Text) else str(text), style=style)


def _blocks(console, options, title: Text | None, columns: list[_Column], caption: Text | None):
    """One block per encoder, in the table's order: the name on a line of its own, then its values beside
    their headers, the verdict (CRS, interval, P(#1), tier) first. Prose wraps at the width; a name folds."""
    name = columns[0]
    values = [c for c in columns[1:] if c.verdict] + [c for c in columns[1:] if not c.verdict]
    per_line = _pairs_per_line(values, options.max_width)
    if title is not None:
        yield from console.render(_plain(title, "bold"), options)
    for index, heading in enumerate(name.cells):
        yield Text("")
        yield from console.render(Text.assemble(heading, style="bold"), options)
        yield Padding(_value_grid(values, index, per_line), (0, 0, 0, BLOCK_INDENT), expand=False)
    if caption is not None:
        yield Text("")
        yield from console.render(_plain(caption, "dim"), options)
    yield Text("")


def _score_table(report: ScoreReport, title: str, frame: pd.DataFrame, beside: tuple[str, ...], ranks: bool) -> FittedTable:
    return FittedTable(Text(partial_prefix(report) + title), _score_columns(report, frame, beside, ranks),
                       _with_target(report, _score_caption(report, frame, beside)))


def task_rows(report: ScoreReport):
    """(task, its rows by encoder, the values shown beside the axes) for every task, in the suite's order."""
    frame = report.point.scores_by_task
    for task in report.settings.tasks:
        rows = frame[frame["task"] == task].set_index("encoder")
        # a value this task does not have (QWK outside ordinal tasks, ECE (T) in older records) is left out
        beside = tuple(c for c in BESIDE_HEADERS if c in rows and pd.to_numeric(rows[c], errors="coerce").notna().any())
        yield task, rows, beside


def task_tables(report: ScoreReport) -> list[Table]:
    """One table per task (axes, the values beside them, skill, CRS, interval, tier): shown first."""
    return [_score_table(report, f"Task {task}: CRS (reference: {report.reference})", rows, beside, ranks=False)
            for task, rows, beside in task_rows(report)]


def scores_table(report: ScoreReport) -> Table:
    """The cross-task summary, best CRS first; missing axes show '-' and are named in the caption."""
    table = _score_table(report, f"Across tasks: Clinical Reliability Score (reference: {report.reference})",
                         report.point.scores, ("ece",), ranks=True)
    caption = [_score_caption(report, report.point.scores, ("ece",))]
    caption.append(f"axes used: {', '.join(report.axes_used)}")
    caption += [f"{axis} missing: {reason}" for axis, reason in report.axes_missing.items()]
    caption += [f"{axis} covers {n} task(s) only" for axis, n in report.axes_partial.items()]
    caption.append("tier *: not resolved from the top encoder by the paired bootstrap")
    table.caption = _with_target(report, "; ".join(caption))
    return table


def _with_interval(agreement, name: str, digits: int = 2) -> str:
    low, high = agreement.get(f"{name}_low"), agreement.get(f"{name}_high")
    value = f"{agreement[name]:.{digits}f}"
    return value if low is None or pd.isna(low) else f"{value} [{low:.{digits}f}, {high:.{digits}f}]"


def leading_tier_line(report: ScoreReport) -> Text:
    """The verdict across tasks, in one line: what `crsbench -q score` prints."""
    tier = ", ".join(report.tier.members) or "- (no bootstrap)"
    label = f" ({report.intervals.label})" if report.intervals.label else ""
    return Text(f"{partial_prefix(report)}Leading tier across tasks{label}: {tier}")


def score_lines(report: ScoreReport, with_tier: bool = True) -> list[Text]:
    """The prose under the scores table: rank agreement, reversed pairs, sensitivity, notes, and (unless
    `with_tier` is False, for a caller that prints it itself) the leading tier last."""
    lines = []
    if len(report.agreement.table):
        a = report.agreement.table.iloc[0]
        resolved = f", {int(a['n_resolved'])} resolved by the bootstrap" if "n_resolved" in a else ""
        baselines = f" (without baselines {', '.join(report.baselines)})" if report.baselines else ""
        if int(a.n_pairs) == 0:
            lines.append(Text(f"AUROC vs CRS ranking{baselines}: fewer than two encoders to compare"))
        else:
            lines.append(Text(
                f"AUROC vs CRS ranking{baselines}: Spearman {_with_interval(a, 'spearman')}, "
                f"Kendall tau-b {_with_interval(a, 'kendall_tau_b')}, "
                f"{int(a.n_reversed)} of {int(a.n_pairs)} pairwise orderings reversed{resolved}, "
                f"mean rank displacement {_with_interval(a, 'mean_abs_rank_displacement')}"
            ))
    for pair in report.agreement.reversed_pairs.itertuples():
        status = "" if not hasattr(pair, "resolved") else (" (resolved)" if pair.resolved else " (not resolved)")
        lines.append(Text(
            f"  reversed: {pair.encoder_a} (AUROC {pair.auroc_a:.3f}, CRS {pair.crs_a:.2f}) vs "
            f"{pair.encoder_b} (AUROC {pair.auroc_b:.3f}, CRS {pair.crs_b:.2f}){status}"
        ))
    if len(report.point.weight_sensitivity):
        sensitivity = report.point.weight_sensitivity
        top = sensitivity["p_top"].sort_values(ascending=False)
        shares = ", ".join(f"{name} {share:.1%}" for name, share in top.items() if share >= 0.0005)
        what = "axis and component weights" if report.settings.definition == "components" else "axis weights"
        lines.append(Text(f"Under sampled {what}, top encoder: {shares}"))
        moving = [str(e) for e in sensitivity.index[sensitivity.get("place_depends", pd.Series(False))]]
        if moving:
            lines.append(Text(f"  place depends on the {what}: {', '.join(moving)}"))
    for task, tier in report.tier.members_by_task.items():
        lines.append(Text(f"Leading tier, task {task}: {', '.join(tier)}"))
    lines += [Text(f"note: {note}", style="dim") for note in report.notes]
    return lines + [leading_tier_line(report)] if with_tier else lines


# --------------------------------------------------------------------------- perturbations


def perturbations_table(modality: str, specs) -> Table:
    table = Table(title=Text(f"Perturbations for {modality} (severities 1-5)"))
    for column in ("name", "what it does", "severity 1 ... 5"):
        table.add_column(column)
    for spec in specs:
        table.add_row(spec.name, Text(spec.description), Text(" | ".join(str(spec.param(s)) for s in range(1, 6))))
    return table
