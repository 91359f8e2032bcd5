"""`crsbench demo`: the demo benchmark end to end, on generated data or local MedMNIST files."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.steps import render_scores, run_and_render, score_and_write, write_report


def demo(
    quick: bool = typer.Option(False, "--quick", help="A one-minute version: fewer images, seeds and fractions."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Results folder (default: the suite's)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    generated: bool = typer.Option(False, "--generated", help="Use the generated data even when MedMNIST files are on disk."),
) -> None:
    """Run the demo benchmark end to end on data the project generates (or local MedMNIST files)."""
    from crsbench import api

    out = Output()
    suite = api.demo_suite(quick=quick, output=output, use_medmnist=not generated)
    sources = ", ".join(
        f"{t.name}: {t.dataset.options().get('name', 'generated')}" if t.dataset.kind == "medmnist"
        else f"{t.name}: generated" for t in suite.tasks
    )
    out.say(f"demo data ({sources}); MedMNIST files are used when found locally and their md5 verifies")
    run_and_render(out, suite, cache_dir)
    # the suite's draws (the quick one's 2,000), so that `score` or `report` of these results later agrees
    scored, folder, seconds, inputs = score_and_write(out, Path(suite.output), reference=suite.reference)
    render_scores(out, scored, folder, seconds)
    write_report(out, Path(suite.output), scored=scored, inputs=inputs)


def register(app: typer.Typer) -> None:
    app.command("demo")(handled(demo))
