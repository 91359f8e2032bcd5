"""`crsbench run`: run a suite (a rerun resumes) and write its report."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import SUITE_ARGUMENT
from crsbench.cli.steps import run_and_render, write_report
from crsbench.errors import DataError


def run(
    suite: str = SUITE_ARGUMENT,
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    wait: float = typer.Option(0.0, "--wait", min=0, help="Seconds to wait for another run holding the same output."),
    executor: Optional[str] = typer.Option(None, "--executor", help="local or ray (default: the suite's, else local)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (auto: this node's cluster)."),
) -> None:
    """Run a suite; a rerun resumes, writing only the records that are missing. A completed run writes its report."""
    from crsbench import api

    out = Output()
    loaded = api.with_executor(api.open_suite(suite), executor, address)
    run_and_render(out, loaded, cache_dir, wait)
    try:
        write_report(out, Path(loaded.output))
    except (DataError, ValueError) as exc:  # the run itself succeeded: say why there is no report, exit 0
        out.result(f"report not written: {exc}")


def register(app: typer.Typer) -> None:
    app.command("run")(handled(run))
