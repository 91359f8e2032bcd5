"""`crsbench score`: score the encoders of a results folder and write the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import (CRS_DEFINITION, JSON, PARTIAL, SUBGROUP_AXIS, SUITE_HASH, TARGET, CRSDefinition,
                                  definition_settings, subgroup_axis_settings, target_settings)
from crsbench.cli.steps import render_scores, score_and_write


def score(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    reference: Optional[str] = typer.Option(None, "--reference", "-r", help="Reference encoder (default: the suite's)."),
    n_boot: Optional[int] = typer.Option(None, "--n-boot", min=0,
                                         help="Bootstrap draws, 0 for none (default: the suite's, else 10,000)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for the score tables (default: RESULTS/scores)."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
    target: str = TARGET,
    as_json: bool = JSON,
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
    subgroup_axis: Optional[list[str]] = SUBGROUP_AXIS,
) -> None:
    """Score the encoders: four axes, skill, CRS, interval, leading tier, AUROC vs CRS rank, the components."""
    out = Output(as_json)
    narrower = target_settings(target)
    scored, folder, seconds, _ = score_and_write(out, results_dir, n_boot, reference=reference, out_dir=out_dir,
                                                 suite_hash=suite_hash, partial=partial,
                                                 **definition_settings(definition), **narrower,
                                                 **subgroup_axis_settings(subgroup_axis))
    render_scores(out, scored, folder, seconds)
    if as_json:
        from crsbench.report.documents import scores_data

        out.json({**scores_data(scored), "written": str(folder)})


def register(app: typer.Typer) -> None:
    app.command("score")(handled(score))
