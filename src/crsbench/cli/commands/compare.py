"""`crsbench compare`: score bundles and local results together where they are comparable (docs/bundles.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import (ALLOW, CRS_DEFINITION, N_BOOT, REFERENCE, SOURCES, SUBGROUP_AXIS, CRSDefinition,
                                  definition_settings, subgroup_axis_settings)
from crsbench.cli.show import show_scores

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport

COMPARE_SCHEMA = "crsbench.compare/1"  # crsbench.score/1's keys, plus the departures and the sources merged


def _departure_lines(out: Output, scored: ScoreReport) -> None:
    for line in scored.settings.departures:
        out.result(line)


def compare(
    sources: List[Path] = SOURCES,
    allow: Optional[List[str]] = ALLOW,
    reference: Optional[str] = REFERENCE,
    n_boot: int = N_BOOT,
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Also write the score tables here (CSV, Parquet, JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON document (docs/cli.md)."),
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
    subgroup_axis: Optional[List[str]] = SUBGROUP_AXIS,
) -> None:
    """Score bundles and results folders as one cohort, refusing sources that are not comparable."""
    from crsbench import api, report

    out = Output(as_json)
    with out.progress().task(f"compare ({n_boot} bootstrap draws)", total=None):
        scored = api.compare(sources, reference=reference, allow=tuple(allow or ()), n_boot=n_boot,
                             **definition_settings(definition), **subgroup_axis_settings(subgroup_axis))
    _departure_lines(out, scored)
    show_scores(out, scored)
    folder = None
    if out_dir is not None:
        written = report.write_score_report(scored, out_dir)
        folder = next(iter(written.values())).parent
        out.result(f"scores written to {folder} (CSV, Parquet, JSON)")
    _departure_lines(out, scored)  # last too: a reader of the tail sees it
    if as_json:
        from crsbench.report.documents import scores_data

        out.json({**scores_data(scored), "schema": COMPARE_SCHEMA, "departures": list(scored.settings.departures),
                  "sources": [dict(s) for s in scored.settings.sources],
                  "written": None if folder is None else str(folder)})



def register(app: typer.Typer) -> None:
    app.command("compare")(handled(compare))
