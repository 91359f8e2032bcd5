"""`crsbench leaderboard`: the static leaderboard of bundles, results folders and results repositories."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import (ALLOW, CRS_DEFINITION, N_BOOT, REFERENCE, SOURCES, SUBGROUP_AXIS, CRSDefinition,
                                  definition_settings, subgroup_axis_settings)


def leaderboard(
    sources: List[Path] = SOURCES,
    output: Path = typer.Option(..., "--output", "-o", help="Folder for index.html."),
    allow: Optional[List[str]] = ALLOW,
    reference: Optional[str] = REFERENCE,
    n_boot: int = N_BOOT,
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
    subgroup_axis: Optional[List[str]] = SUBGROUP_AXIS,
    strict: bool = typer.Option(False, "--strict", help="Exit 2 when a repository's bundle is refused (the page is still written)."),
) -> None:
    """Write the static leaderboard folder of bundles, results folders and results repositories (folders of
    bundles, one per submission) scored together; each refused bundle is listed with its reason."""
    from crsbench import api

    out = Output()
    with out.progress().task(f"leaderboard ({n_boot} bootstrap draws)", total=None):
        site = api.leaderboard_site(sources, output, reference=reference, allow=tuple(allow or ()), n_boot=n_boot,
                                    **definition_settings(definition), **subgroup_axis_settings(subgroup_axis))
    for refusal in site.refused:
        out.result(f"refused {refusal.source}: {refusal.reason}")
    accepted = len(site.cohort.sources)
    out.result(f"leaderboard of {accepted} source{'s' if accepted != 1 else ''}"
               f"{f', {len(site.refused)} refused (listed on the page)' if site.refused else ''}: {site.page}")
    if strict and site.refused:
        raise typer.Exit(2)



def register(app: typer.Typer) -> None:
    app.command("leaderboard")(handled(leaderboard))
