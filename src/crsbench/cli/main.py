"""The `crsbench` command: each command is one call to `crsbench.api` and one render from
`crsbench.report`, behind the one error handler `cli_errors.handled`.

The library is imported inside each command, not here: `crsbench --help`, `--version`, `encoders` and
`datasets` start without loading a model library. Output conventions (-q, -v, --json) are
`cli_console.Output`'s; docs/cli.md writes them down.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from crsbench import __version__
from crsbench.cli.console import NORMAL, QUIET, VERBOSE, Output, set_verbosity
from crsbench.cli.bundles import register as register_bundle_commands
from crsbench.cli.datasets import datasets_app
from crsbench.cli.encoders import encoders_app
from crsbench.cli.errors import fail, handled
from crsbench.cli.options import CRS_DEFINITION, CRSDefinition, definition_settings
from crsbench.cli.select import select
from crsbench.cli.show import show_scores
from crsbench.errors import DataError
from crsbench.core.modalities import ALIASES, DEFAULT_MODALITY, MODALITIES, canonical_modality

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score import ScoreReport

app = typer.Typer(
    name="crsbench",
    help="CRS-Bench: which frozen image encoder should a medical imaging team use?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(datasets_app, name="datasets")
app.add_typer(encoders_app, name="encoders")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"crsbench {__version__}")
        raise typer.Exit()


# -q and -v together name no level: refused rather than one silently winning
LEVELS = {(False, False): NORMAL, (True, False): QUIET, (False, True): VERBOSE}


@app.callback()
def main(
    context: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print the version and exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors and the final result line(s); no progress."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="More detail, e.g. the plan's per-encoder costs."),
) -> None:
    """CRS-Bench: which frozen image encoder should a medical imaging team use?"""
    if (quiet, verbose) not in LEVELS:
        fail(DataError("-q and -v: give one or the other"))
    set_verbosity(LEVELS[quiet, verbose])
    context.call_on_close(lambda: set_verbosity(NORMAL))  # the next invocation in this process starts afresh


SUITE_HASH = typer.Option(None, "--suite-hash", help="Only the records of this suite (a unique prefix of its hash).")
PARTIAL = typer.Option(
    False, "--partial",
    help="Show an incomplete grid as a labelled partial view (only the evaluations every encoder has).",
)
JSON = typer.Option(False, "--json", help="Print the result as one JSON document (docs/cli.md).")


def _run_and_render(out: Output, suite, cache_dir: Optional[Path], wait_s: float = 0.0) -> None:
    from crsbench import api, report

    started = time.perf_counter()
    out.detail(lambda: f"suite {suite.name} ({suite.suite_hash()[:12]}): {len(suite.encoders)} encoders, "
               f"{len(suite.tasks)} tasks, {len(suite.seeds)} seeds; results in {suite.output}")
    summary = api.run(suite, progress=out.progress(), cache_dir=cache_dir, wait_s=wait_s)
    elapsed = time.perf_counter() - started
    # the output may hold other suites' records too: what is incomplete is shown labelled, not refused
    records, grid = api.grid_view(summary.output, partial=True)
    out.show(report.results_table(api.aggregate(records), grid))
    out.result(report.run_summary_line(summary, elapsed))


TARGET = typer.Option(
    "training-samples", "--target",
    help="What the intervals and the tier cover: training-samples (the CRS expected over training samples of the "
         "run's size, where the records hold refits) or fitted-probes (these fitted probes only: test cases and seeds).")


def _target(value: str) -> str:
    if value not in ("training-samples", "fitted-probes"):
        raise typer.BadParameter(f"--target must be training-samples or fitted-probes, got {value!r}")
    return value


def _narrower(target: str) -> dict[str, str]:
    """The CRS setting --target adds: none for the default, so a suite's own block holds."""
    return {"target": target} if target != "training-samples" else {}


def _score(out: Output, results_dir: Path, reference: Optional[str], n_boot: int, out_dir: Optional[Path] = None,
           suite_hash: Optional[str] = None, partial: bool = False, definition: Optional[CRSDefinition] = None,
           target: str = "training-samples"):
    """The score report, the folder its files were written to, how long both took, and the inputs read
    for it (a report of the same results reads them from here)."""
    from crsbench import api

    started = time.perf_counter()
    with out.progress().task(f"score ({n_boot} bootstrap draws)", total=None):  # a log hears of it
        inputs = api.scoring_inputs(results_dir, reference, n_boot=n_boot, suite_hash=suite_hash, partial=partial,
                                    **definition_settings(definition), **_narrower(target))
        scored = api.score_inputs(inputs)
        written = api.write_scores(scored, results_dir, out_dir)
    return scored, next(iter(written.values())).parent, time.perf_counter() - started, inputs


def _render_scores(out: Output, scored: ScoreReport, folder: Path, seconds: float) -> None:
    show_scores(out, scored)
    out.result(f"scores written to {folder} (CSV, Parquet, JSON) in {seconds:.1f} s")


def _write_report(out: Output, results_dir: Path, report_dir: Optional[Path] = None, scored: ScoreReport | None = None,
                  suite_hash: Optional[str] = None, partial: bool = False, inputs=None, **settings):
    from crsbench import api

    if scored is None:
        with out.progress().task("scores for the report", total=None):
            inputs = api.scoring_inputs(results_dir, suite_hash=suite_hash, partial=partial, **settings)
            scored, reused = api.scored_or_score(inputs)
        out.say("scores: the value `score` stored for these records and settings, not recomputed" if reused else
                "scores: computed for the report (no stored value of `score` matched these records and settings)")
    with out.progress().task("report", total=None):
        written = api.write_report(results_dir, report_dir, scored=scored, inputs=inputs, suite_hash=suite_hash,
                                   partial=partial)
    out.result(f"report: {written.html} ({len(written.drawn)} figures, {written.seconds:.1f} s)")
    return written


@app.command()
@handled
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
    _run_and_render(out, suite, cache_dir)
    scored, folder, seconds, inputs = _score(out, Path(suite.output), suite.reference,
                                             n_boot=2_000 if quick else 10_000)
    _render_scores(out, scored, folder, seconds)
    _write_report(out, Path(suite.output), scored=scored, inputs=inputs)


SUITE_ARGUMENT = typer.Argument(..., help="Suite YAML file, or a built-in suite: demo, demo-quick, crs-bench.")


@app.command()
@handled
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
    _run_and_render(out, loaded, cache_dir, wait)
    try:
        _write_report(out, Path(loaded.output))
    except (DataError, ValueError) as exc:  # the run itself succeeded: say why there is no report, exit 0
        out.result(f"report not written: {exc}")


@app.command()
@handled
def validate(
    suite: str = SUITE_ARGUMENT,
    data: bool = typer.Option(False, "--data", help="Also resolve every dataset: files present, a sample decoded."),
) -> None:
    """Check a suite file without running it: its fields, its encoders and their options (with --data,
    its datasets too)."""
    from crsbench import api

    out = Output()
    loaded = api.open_suite(suite)
    api.check_encoders(loaded)
    if data:
        for check in api.check_data(loaded):
            sizes = ", ".join(f"{split} {n}" for split, n in check.sizes.items())
            out.show(f"{check.field}: {check.name}: {sizes}; files present, {check.decoded} images decoded")
    out.result(
        f"{suite}: ok ({len(loaded.encoders)} encoders, {len(loaded.tasks)} tasks, "
        f"{len(loaded.seeds)} seeds, {len(loaded.fractions)} fractions)"
    )


@app.command()
@handled
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
    records, grid = api.grid_view(results_dir, suite_hash, partial)
    aggregate = api.aggregate(records)
    out.result(report.results_table(aggregate, grid))
    written = api.export_results(results_dir, out_dir, suite_hash=suite_hash) if export else []
    for path in written:
        out.result(f"wrote {path}")
    if as_json:
        from crsbench.report.documents import results_data

        out.json({**results_data(aggregate, grid), "exported": [str(p) for p in written]})


@app.command()
@handled
def score(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    reference: Optional[str] = typer.Option(None, "--reference", "-r", help="Reference encoder (default: the suite's)."),
    n_boot: int = typer.Option(10_000, "--n-boot", min=0, help="Bootstrap draws (0: none)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for the score tables (default: RESULTS/scores)."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
    target: str = TARGET,
    as_json: bool = JSON,
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
) -> None:
    """Score the encoders: four axes, skill, CRS, interval, leading tier, AUROC vs CRS rank, the components."""
    out = Output(as_json)
    scored, folder, seconds, _ = _score(out, results_dir, reference, n_boot, out_dir, suite_hash, partial, definition,
                                        _target(target))
    _render_scores(out, scored, folder, seconds)
    if as_json:
        from crsbench.report.documents import scores_data

        out.json({**scores_data(scored), "written": str(folder)})


@app.command("report")
@handled
def report_command(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    out_dir: Optional[Path] = typer.Option(None, "--output", "-o", help="Report folder (default: RESULTS/report)."),
    open_report: bool = typer.Option(False, "--open", help="Open report.html in the default browser."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
    n_boot: Optional[int] = typer.Option(None, "--n-boot", min=0,
                                         help="Bootstrap draws (default: the suite's, else 10,000)."),
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
    target: str = TARGET,
) -> None:
    """Write report.html (self-contained), report.md and every figure as PNG and SVG. Reads the scores that
    `score` stored for the same records and settings instead of recomputing them."""
    settings = {**({} if n_boot is None else {"n_boot": n_boot}), **definition_settings(definition),
                **_narrower(_target(target))}
    written = _write_report(Output(), results_dir, out_dir, suite_hash=suite_hash, partial=partial, **settings)
    if open_report:
        import webbrowser

        webbrowser.open(written.html.resolve().as_uri())


MODALITY_HELP = f"{', '.join(MODALITIES)} (also {', '.join(ALIASES)})."


@app.command()
@handled
def perturbations(
    preview: Optional[Path] = typer.Option(None, "--preview", help="An image to show every perturbation and severity on."),
    output: Path = typer.Option(Path("perturbations.png"), "--output", "-o", help="Where to write the contact sheet."),
    modality: str = typer.Option(DEFAULT_MODALITY, "--modality", "-m", help=MODALITY_HELP),
    seed: int = typer.Option(0, "--seed", help="Perturbation seed."),
) -> None:
    """List the perturbations per modality, or write a contact sheet (rows: perturbations, columns: severity)."""
    from crsbench import report
    from crsbench.perturbations import contact_sheet, modality_set

    out = Output()
    modality = canonical_modality(modality)
    if preview is None:
        out.result(report.perturbations_table(modality, modality_set(modality)))
        return
    sheet = contact_sheet(_read_image(preview), modality, seed=seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(output)
    out.result(
        f"wrote {output} ({len(modality_set(modality))} perturbations x 5 severities, {sheet.size[0]}x{sheet.size[1]} px)"
    )


def _read_image(path: Path):
    import numpy as np
    from PIL import UnidentifiedImageError

    from crsbench.datasets.image_files import open_image

    try:
        with open_image(path) as image:
            return np.asarray(image.convert("RGB"))
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise DataError(f"{path}: cannot read image ({exc.__class__.__name__})") from None


app.command("select")(select)
register_bundle_commands(app)


@app.command()
def version() -> None:
    """Print the version (as `crsbench --version`)."""
    _print_version(True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
