"""The subgroup part of a score, as people read it: a terminal table per task and set (AUROC per subgroup and
encoder, the difference to the rest beside it), one sentence per difference whose interval excludes 0, and
the worst subgroup and gap per encoder and attribute. Every sentence is built from the numbers the table
holds (docs/subgroups.md)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd
from rich.table import Table
from rich.text import Text

from crsbench.core.printable import printable
from crsbench.scoring.subgroups import flagged

if TYPE_CHECKING:
    from crsbench.scoring.score_report import ScoreReport

FLAG = "*"  # a difference to the rest whose simultaneous interval excludes 0


def _signed(value: float) -> str:
    return f"{value:+.3f}".replace("-", "\u2212")


def _cell(row) -> str:
    if not row.assessable:
        return "n/a"
    flag = FLAG if row.diff_excludes_zero else ""
    return f"{row.auroc:.3f} {_signed(row.diff)}{flag}"


def _unassessable_block(task: str, role: str, rows: pd.DataFrame) -> Text:
    """A set with no assessable subgroup: one line per subgroup with its cases and reason, not a table of n/a."""
    subgroups = rows.drop_duplicates(["attribute", "subgroup"])
    lines = [f"Task {printable(task)} ({role} set): no subgroup is assessable, so no AUROC per subgroup"]
    lines += [f"  {printable(r.attribute)} = {printable(r.subgroup)} ({int(r.n_cases)} cases): {printable(r.reason or '')}"
              for r in subgroups.itertuples()]
    return Text("\n".join(lines))


def subgroup_tables(report: "ScoreReport") -> list[Table | Text]:
    """One table per task and set: a row per attribute and subgroup (its cases), a column per encoder with the
    subgroup's AUROC and its difference to the rest of the set (FLAG: the interval excludes 0). A set with no
    assessable subgroup gets its subgroups and reasons as lines instead."""
    table = report.subgroups.table
    if table.empty:
        return []
    encoders = list(dict.fromkeys(table["encoder"]))
    out: list[Table | Text] = []
    for (task, role), rows in table.groupby(["task", "set"], sort=False):
        if not rows["assessable"].astype(bool).any():
            out.append(_unassessable_block(task, role, rows))
            continue
        view = Table(title=Text(f"Task {printable(task)} ({role} set): AUROC per subgroup, then minus the rest's"))
        for header in ("attribute", "subgroup", "cases", *encoders, "not assessable"):
            view.add_column(Text(printable(str(header))), justify="right" if header in encoders else "left")
        for (attribute, subgroup), cells in rows.groupby(["attribute", "subgroup"], sort=False):
            by_encoder = {row.encoder: row for row in cells.itertuples()}
            first = cells.iloc[0]
            view.add_row(Text(printable(attribute)), Text(printable(subgroup)), str(int(first["n_cases"])),
                         *(_cell(by_encoder[e]) for e in encoders), Text(printable(first["reason"] or "")))
        view.caption = Text(f"{FLAG}: the difference's interval excludes 0; n/a: not assessable (the reason beside)")
        out.append(view)
    return out


def difference_sentences(report: "ScoreReport") -> list[str]:
    """One sentence per encoder, attribute and subgroup whose difference to the rest excludes 0:
    "X's AUROC for sex = F (task derm) is 0.050 lower than for the rest [0.010, 0.090]"."""
    table = report.subgroups.table
    if table.empty:
        return []
    return [difference_sentence(row) for row in flagged(table).itertuples()]


def difference_sentence(row) -> str:
    """One flagged row of the subgroup table (scoring.subgroups.TABLE_COLUMNS) as a sentence."""
    lower = row.diff < 0
    size, low, high = (-row.diff, -row.diff_high, -row.diff_low) if lower else (row.diff, row.diff_low, row.diff_high)
    where = f"task {row.task}" + ("" if row.set == "test" else f", {row.set} set")
    return (f"{row.encoder}'s AUROC for {row.attribute} = {row.subgroup} ({where}) is {size:.3f} "
            f"{'lower' if lower else 'higher'} than for the rest [{low:.3f}, {high:.3f}]")


GAP_NOTE = ("subgroup worst: a gap is best minus worst and never below 0, so its interval says how large, not "
            "whether: a difference to the rest whose interval excludes 0 (above) is the evidence of one")


def worst_sentences(report: "ScoreReport") -> list[str]:
    """Per task, attribute and encoder with two or more assessable subgroups: the worst subgroup's AUROC and the
    gap, each with its interval and the bootstrap's bias estimate beside it."""
    out = []
    for row in report.subgroups.worst.itertuples():
        if pd.isna(row.worst_auroc):
            continue
        text = f"{row.encoder}, task {row.task} ({row.set} set), {row.attribute}: worst subgroup {row.worst_subgroup} " \
               f"AUROC {row.worst_auroc:.3f}"
        if not (isinstance(row.worst_low, float) and math.isnan(row.worst_low)):
            text += (f" [{row.worst_low:.3f}, {row.worst_high:.3f}], bias estimate {_signed(row.worst_bias)}; "
                     f"gap to {row.best_subgroup} {row.gap:.3f} [{row.gap_low:.3f}, {row.gap_high:.3f}], "
                     f"bias estimate {_signed(row.gap_bias)}")
        else:
            text += f"; gap to {row.best_subgroup} {row.gap:.3f}"
        out.append(text)
    return out


def subgroup_lines(report: "ScoreReport") -> list[Text]:
    """The prose under the subgroup tables: the target, the flagged differences, the worst subgroups."""
    if report.subgroups.table.empty:
        return []
    lines = [Text(report.subgroups.target, style="dim")]
    lines += [Text(f"subgroup: {sentence}") for sentence in difference_sentences(report)] or [
        Text("subgroup: no subgroup's difference to the rest excludes 0")]
    worst = worst_sentences(report)
    lines += [Text(f"subgroup worst: {sentence}", style="dim") for sentence in worst]
    if worst:  # a gap's interval lies above 0 by construction: say which interval is the test
        lines.append(Text(GAP_NOTE, style="dim"))
    return lines
