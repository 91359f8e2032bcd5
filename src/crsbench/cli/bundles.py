"""`crsbench bundle`, `verify`, `compare` and `leaderboard`: publish results as a portable bundle, check
one against its published id, score bundles and local results together where they are comparable, and
write the static leaderboard (docs/bundles.md). Each command is one call to `crsbench.api` and one render."""

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
VERIFY_SCHEMA = "crsbench.verify/1"
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
        from crsbench.report.documents import scores_data

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
    strict: bool = typer.Option(False, "--strict", help="Exit 2 when a repository's bundle is refused (the page is still written)."),
) -> None:
    """Write the static leaderboard folder of bundles, results folders and results repositories (folders of
    bundles, one per submission) scored together; each refused bundle is listed with its reason."""
    from crsbench import api

    out = Output()
    with out.progress().task(f"leaderboard ({n_boot} bootstrap draws)", total=None):
        site = api.leaderboard_site(sources, output, reference=reference, allow=tuple(allow or ()), n_boot=n_boot,
                                    **definition_settings(definition))
    for refusal in site.refused:
        out.result(f"refused {refusal.source}: {refusal.reason}")
    accepted = len(site.cohort.sources)
    out.result(f"leaderboard of {accepted} source{'s' if accepted != 1 else ''}"
               f"{f', {len(site.refused)} refused (listed on the page)' if site.refused else ''}: {site.page}")
    if strict and site.refused:
        raise typer.Exit(2)


def verify(
    path: Path = typer.Argument(..., help="The bundle file (.crsb)."),
    expected_id: Optional[str] = typer.Option(None, "--id", help="The id it was published under (a prefix is enough)."),
    as_json: bool = typer.Option(False, "--json", help="Print what it holds as one JSON document."),
) -> None:
    """Check a bundle (content hashes, counts, test sets, probability vectors, every record's AUROC, and its
    id with --id) and say what it holds; exit 2 with the reason when any check fails."""
    from crsbench import api
    from crsbench.bundles.verify import summary_lines

    out = Output(as_json)
    facts = api.verify(path, expected_id)
    for line in summary_lines(facts):
        out.result(line)
    if as_json:
        out.json({"schema": VERIFY_SCHEMA, **facts})


def register(app: typer.Typer) -> None:
    for command in (bundle, compare, leaderboard, verify):
        app.command(command.__name__)(handled(command))
