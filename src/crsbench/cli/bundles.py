"""`crsbench bundle`, `compare` and `leaderboard`: publish results as a portable bundle, score bundles
and local results together where they are comparable, and write the static leaderboard page
(docs/bundles.md). Each command is one call to `crsbench.api` and one render."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import CRS_DEFINITION, CRSDefinition, definition_settings
from crsbench.cli.show import show_scores

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score import ScoreReport

SOURCES = typer.Argument(..., help="Bundle files (.crsb) and results folders.")
ALLOW = typer.Option(None, "--allow", help="Score despite this field differing, stating it in every output "
                     "(protocol, solver, tasks, dataset, split, seeds, fractions, conditions, crs); repeatable.")
REFERENCE = typer.Option(None, "--reference", "-r", help="Reference encoder (default: the first source's suite's).")
N_BOOT = typer.Option(10_000, "--n-boot", min=0, help="Bootstrap draws (0: none).")
COMPARE_SCHEMA = "crsbench.compare/1"  # crsbench.score/1's keys, plus the departures and the sources merged


def bundle(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    output: Path = typer.Option(..., "--output", "-o", help="The bundle file to write, e.g. NAME.crsb."),
    suite_hash: Optional[str] = typer.Option(None, "--suite-hash", help="Only the records of this suite."),
) -> None:
    """Write a portable, content-addressed results bundle: records, per-case predictions, suite, versions,
    fingerprints and encoder specs; no images, embeddings or paths of this machine."""
    from crsbench import api

    out = Output()
    path, identity = api.bundle(results_dir, output, suite_hash)
    out.result(f"wrote {path} ({path.stat().st_size / 1024:.1f} KiB), bundle id {identity}")


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
) -> None:
    """Score bundles and results folders as one cohort, refusing sources that are not comparable."""
    from crsbench import api, report

    out = Output(as_json)
    with out.progress().task(f"compare ({n_boot} bootstrap draws)", total=None):
        scored = api.compare(sources, reference=reference, allow=tuple(allow or ()), n_boot=n_boot,
                             **definition_settings(definition))
    _departure_lines(out, scored)
    show_scores(out, scored)
    folder = None
    if out_dir is not None:
        written = report.write_score_report(scored, out_dir)
        folder = next(iter(written.values())).parent
        out.result(f"scores written to {folder} (CSV, Parquet, JSON)")
    _departure_lines(out, scored)  # last too: a reader of the tail sees it
    if as_json:
        from crsbench.report.terminal import scores_data

        out.json({**scores_data(scored), "schema": COMPARE_SCHEMA, "departures": list(scored.settings.departures),
                  "sources": [dict(s) for s in scored.settings.sources],
                  "written": None if folder is None else str(folder)})


def leaderboard(
    sources: List[Path] = SOURCES,
    output: Path = typer.Option(..., "--output", "-o", help="Folder for index.html."),
    allow: Optional[List[str]] = ALLOW,
    reference: Optional[str] = REFERENCE,
    n_boot: int = N_BOOT,
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
) -> None:
    """Write a static, self-contained leaderboard page (no script) of bundles scored together."""
    from crsbench import api

    out = Output()
    with out.progress().task(f"leaderboard ({n_boot} bootstrap draws)", total=None):
        page = api.leaderboard(sources, output, reference=reference, allow=tuple(allow or ()), n_boot=n_boot,
                               **definition_settings(definition))
    out.result(f"leaderboard: {page}")


def register(app: typer.Typer) -> None:
    for command in (bundle, compare, leaderboard):
        app.command(command.__name__)(handled(command))
