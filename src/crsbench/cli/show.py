"""The score tables as every scoring command prints them (`score`, `run`, `compare`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crsbench.cli.console import Output

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport


def show_scores(out: Output, scored: ScoreReport) -> None:
    """The per-task and cross-task score tables, their notes and the leading tier."""
    from crsbench import report  # the tables need pandas; imported when there is a score to show
    from crsbench.report.terminal import leading_tier_line

    from crsbench.report.subgroup_view import subgroup_lines, subgroup_tables

    for table in report.task_tables(scored):
        out.show(table)
    out.show(report.scores_table(scored))
    show_components(out, scored)
    for table in subgroup_tables(scored):  # under the axes: per subgroup, where the data carries attributes
        out.show(table)
    for line in subgroup_lines(scored):
        out.show(line)
    for line in report.score_lines(scored, with_tier=False):
        out.show(line)
    out.result(leading_tier_line(scored))


def show_components(out: Output, scored: ScoreReport) -> None:
    """The components table, both definitions' orders and the pairs they part on."""
    from rich.text import Text

    from crsbench.report.components_view import (agreement_lines, components_caption, components_table,
                                                 disagreement_lines, orders_table)

    if not len(scored.components.components):
        return
    out.show(components_table(scored))
    out.show(Text(components_caption(scored)))
    out.show(orders_table(scored))
    for line in disagreement_lines(scored) + agreement_lines(scored):
        out.show(line)
