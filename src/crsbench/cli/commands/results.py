"""`crsbench results`: the per-encoder table of a results folder, and its records exported."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import JSON, PARTIAL, SUITE_HASH


def results(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    export: bool = typer.Option(False, "--export", help="Write records and seed means as Parquet and CSV."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for the exports (default: the results folder)."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
    as_json: bool = JSON,
) -> None:
    """Show the per-encoder table of a results folder, and optionally export its records."""
    from crsbench import api, report

    out = Output(as_json)
    view = api.load_results(results_dir, suite_hash, partial)
    aggregate, grid = view.seed_means(), view.grid
    out.result(report.results_table(aggregate, grid))
    written = api.export_results(results_dir, out_dir, suite_hash=suite_hash) if export else []
    for path in written:
        out.result(f"wrote {path}")
    if as_json:
        from crsbench.report.documents import results_data

        out.json({**results_data(aggregate, grid), "exported": [str(p) for p in written]})


def register(app: typer.Typer) -> None:
    app.command("results")(handled(results))
