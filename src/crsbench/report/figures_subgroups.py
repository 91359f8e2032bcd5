"""The report's subgroup figure: per task, one panel per encoder, each subgroup's AUROC minus the rest of the
set's (test set, then shift set) with its simultaneous interval (docs/subgroups.md). The caption carries one sentence per difference
whose interval excludes 0, built from the numbers drawn (report/subgroup_view.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.ticker import MaxNLocator

from crsbench.report.figure_style import COLUMN_WIDTH, Absent, Drawn, figure, label
from crsbench.report.subgroup_view import difference_sentences

if TYPE_CHECKING:
    from crsbench.report.data import ReportData

PANELS_PER_ROW = 3


def subgroup_dots(data: ReportData, task: str) -> Drawn:
    table = data.report.subgroups.table
    rows = table[table["task"] == task] if len(table) else table
    if rows.empty:
        return Absent(f"no subgroup attributes stored for task {task!r}")
    assessable = rows[rows["assessable"].astype(bool)]
    if assessable.empty:
        return Absent(f"no subgroup of task {task!r} is assessable (too few cases or positives)")
    groups = list(dict.fromkeys(zip(assessable["set"], assessable["attribute"], assessable["subgroup"])))
    encoders = [e for e in data.encoders if e in set(assessable["encoder"])]
    columns = min(PANELS_PER_ROW, len(encoders))
    lines = -(-len(encoders) // columns)
    fig = figure(0.6 + 0.22 * len(groups) * lines, width=COLUMN_WIDTH * (0.6 + 0.5 * columns))
    axs = np.atleast_1d(fig.subplots(lines, columns, sharex=True, sharey=True, squeeze=False)).ravel()
    y = np.arange(len(groups))
    for ax, encoder in zip(axs, encoders):
        part = assessable[assessable["encoder"] == encoder].set_index(["set", "attribute", "subgroup"])
        colour = data.palette.colour(encoder)
        for yi, key in zip(y, groups):
            if key not in part.index:
                continue
            r = part.loc[key]
            if np.isfinite(r["diff_low"]):
                ax.hlines(yi, r["diff_low"], r["diff_high"], color=colour, linewidth=1.2)
            ax.plot(r["diff"], yi, "o", color=colour, markersize=3.5,
                    markerfacecolor=colour if r["diff_excludes_zero"] else "white")
        ax.axvline(0.0, color="#333333", linewidth=0.7, linestyle="--")
        ax.set_title(label(encoder, 24), loc="left")
        ax.set_yticks(y, [label(_tick(key, part), 32) for key in groups])
        ax.set_ylim(len(groups) - 0.5, -0.5)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
        ax.tick_params(axis="y", length=0)
    for ax in axs[len(encoders):]:
        ax.set_visible(False)
    fig.supxlabel("AUROC in the subgroup minus the rest's")
    return fig


def _tick(key: tuple[str, str, str], part) -> str:
    """`sex = F (n=111)`, with `shift: ` in front on the shift set."""
    role, attribute, subgroup = key
    cases = f" (n={int(part.loc[key, 'n_cases'])})" if key in part.index else ""
    return f"{'shift: ' if role == 'shift' else ''}{attribute} = {subgroup}{cases}"


def caption_subgroups(data: ReportData, task=None) -> str:
    report = data.report
    if report.subgroups.table.empty:
        return "No subgroup attributes are stored with these results."
    sentences = [s for s in difference_sentences(report) if f"(task {task})" in s]
    flagged = (" " + "; ".join(sentences) + ".") if sentences else " No subgroup's difference to the rest excludes 0."
    limits = report.subgroups.thresholds
    return (f"Each assessable subgroup's AUROC minus the rest of its set's (the test set; `shift:` the shift set), "
            f"per encoder; bars: "
            f"{report.subgroups.target}; filled: the interval excludes 0. Subgroups with fewer than "
            f"{limits['min_cases']} cases or {limits['min_per_class']} positives or negatives of a label are not "
            f"assessable and not drawn (the score tables list them with the reason).{flagged}")
