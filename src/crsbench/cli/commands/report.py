"""`crsbench report`: the HTML and Markdown report of a results folder, with every figure."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import (CRS_DEFINITION, PARTIAL, SUBGROUP_AXIS, SUITE_HASH, TARGET, CRSDefinition,
                                  definition_settings, subgroup_axis_settings, target_settings)
from crsbench.cli.steps import write_report


def report(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    out_dir: Optional[Path] = typer.Option(None, "--output", "-o", help="Report folder (default: RESULTS/report)."),
    open_report: bool = typer.Option(False, "--open", help="Open report.html in the default browser."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
    n_boot: Optional[int] = typer.Option(None, "--n-boot", min=0,
                                         help="Bootstrap draws (default: the suite's, else 10,000)."),
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
    target: str = TARGET,
    subgroup_axis: Optional[list[str]] = SUBGROUP_AXIS,
) -> None:
    """Write report.html (self-contained), report.md and every figure as PNG and SVG. Reads the scores that
    `score` stored for the same records and settings instead of recomputing them."""
    settings = {**({} if n_boot is None else {"n_boot": n_boot}), **definition_settings(definition),
                **target_settings(target), **subgroup_axis_settings(subgroup_axis)}
    written = write_report(Output(), results_dir, out_dir, suite_hash=suite_hash, partial=partial, **settings)
    if open_report:
        import webbrowser

        webbrowser.open(written.html.resolve().as_uri())


def register(app: typer.Typer) -> None:
    app.command("report")(handled(report))
