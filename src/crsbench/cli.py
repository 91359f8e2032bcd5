"""The `crsbench` command: each command is one call to `crsbench.api` and one render from
`crsbench.report`, behind the one error handler `cli_errors.handled`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from crsbench import __version__, api, report
from crsbench.cli_console import console, wide_console
from crsbench.cli_datasets import datasets_app
from crsbench.cli_encoders import encoders_app
from crsbench.cli_errors import handled
from crsbench.cli_select import select
from crsbench.errors import DataError
from crsbench.progress import RichProgress

app = typer.Typer(
    name="crsbench",
    help="CRS-Bench: which frozen image encoder should a medical imaging team use?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(datasets_app, name="datasets")
app.add_typer(encoders_app, name="encoders")


SUITE_HASH = typer.Option(None, "--suite-hash", help="Only the records of this suite (a unique prefix of its hash).")
PARTIAL = typer.Option(
    False, "--partial",
    help="Show an incomplete grid as a labelled partial view (only the evaluations every encoder has).",
)


def _run_and_render(suite, cache_dir: Optional[Path], wait_s: float = 0.0) -> None:
    started = time.perf_counter()
    summary = api.run(suite, progress=RichProgress(), cache_dir=cache_dir, wait_s=wait_s)
    elapsed = time.perf_counter() - started
    # the output may hold other suites' records too: what is incomplete is shown labelled, not refused
    records, grid = api.grid_view(summary.output, partial=True)
    console.print(report.results_table(api.aggregate(records), grid))
    console.print(report.run_summary_line(summary, elapsed))


def _score_and_render(results_dir: Path, reference: Optional[str], n_boot: int, out: Optional[Path] = None,
                      suite_hash: Optional[str] = None, partial: bool = False):
    started = time.perf_counter()
    scored = api.score(results_dir, reference=reference, n_boot=n_boot, suite_hash=suite_hash, partial=partial)
    for table in report.task_tables(scored):
        wide_console().print(table)
    wide_console().print(report.scores_table(scored))
    for line in report.score_lines(scored):
        console.print(line)
    written = api.write_scores(scored, results_dir, out)
    folder = next(iter(written.values())).parent
    console.print(Text(f"scores written to {folder} (CSV, Parquet, JSON) in {time.perf_counter() - started:.1f} s"))
    return scored


def _write_report(results_dir: Path, out: Optional[Path] = None, scored=None, suite_hash: Optional[str] = None,
                  partial: bool = False):
    written = api.write_report(results_dir, out, scored=scored, suite_hash=suite_hash, partial=partial)
    console.print(Text(f"report: {written.html} ({len(written.drawn)} figures, {written.seconds:.1f} s)"))
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
    suite = api.demo_suite(quick=quick, output=output, use_medmnist=not generated)
    sources = ", ".join(
        f"{t.name}: {t.dataset.options().get('name', 'generated')}" if t.dataset.kind == "medmnist"
        else f"{t.name}: generated" for t in suite.tasks
    )
    console.print(Text(f"demo data ({sources}); MedMNIST files are used when found locally and their md5 verifies"))
    _run_and_render(suite, cache_dir)
    scored = _score_and_render(Path(suite.output), suite.reference, n_boot=2_000 if quick else 10_000)
    _write_report(Path(suite.output), scored=scored)


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
    loaded = api.with_executor(api.open_suite(suite), executor, address)
    _run_and_render(loaded, cache_dir, wait)
    try:
        _write_report(Path(loaded.output))
    except (DataError, ValueError) as exc:  # the run itself succeeded: say why there is no report, exit 0
        console.print(Text(f"report not written: {exc}"))


@app.command()
@handled
def validate(
    suite: str = SUITE_ARGUMENT,
    data: bool = typer.Option(False, "--data", help="Also resolve every dataset: files present, a sample decoded."),
) -> None:
    """Check a suite file without running it: its fields, its encoders and their options (with --data,
    its datasets too)."""
    loaded = api.open_suite(suite)
    api.check_encoders(loaded)
    if data:
        for check in api.check_data(loaded):
            sizes = ", ".join(f"{split} {n}" for split, n in check.sizes.items())
            console.print(Text(f"{check.field}: {check.name}: {sizes}; files present, {check.decoded} images decoded"))
    console.print(Text(
        f"{suite}: ok ({len(loaded.encoders)} encoders, {len(loaded.tasks)} tasks, "
        f"{len(loaded.seeds)} seeds, {len(loaded.fractions)} fractions)"
    ))


@app.command()
@handled
def results(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    export: bool = typer.Option(False, "--export", help="Write records and seed means as Parquet and CSV."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the exports (default: the results folder)."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
) -> None:
    """Show the per-encoder table of a results folder, and optionally export its records."""
    records, grid = api.grid_view(results_dir, suite_hash, partial)
    console.print(report.results_table(api.aggregate(records), grid))
    if export:
        for path in api.export_results(results_dir, out, suite_hash=suite_hash):
            console.print(Text(f"wrote {path}"))


@app.command()
@handled
def score(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    reference: Optional[str] = typer.Option(None, "--reference", "-r", help="Reference encoder (default: the suite's)."),
    n_boot: int = typer.Option(10_000, "--n-boot", min=0, help="Paired-seed bootstrap draws (0: none)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the score tables (default: RESULTS/scores)."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
) -> None:
    """Score the encoders: four axes, skill, CRS, interval, leading tier, AUROC vs CRS rank."""
    _score_and_render(results_dir, reference, n_boot, out, suite_hash, partial)


@app.command("report")
@handled
def report_command(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    out: Optional[Path] = typer.Option(None, "--output", "-o", help="Report folder (default: RESULTS/report)."),
    open_report: bool = typer.Option(False, "--open", help="Open report.html in the default browser."),
    suite_hash: Optional[str] = SUITE_HASH,
    partial: bool = PARTIAL,
) -> None:
    """Write report.html (self-contained), report.md and every figure as PNG and SVG."""
    written = _write_report(results_dir, out, suite_hash=suite_hash, partial=partial)
    if open_report:
        import webbrowser

        webbrowser.open(written.html.resolve().as_uri())


@app.command()
@handled
def perturbations(
    preview: Optional[Path] = typer.Option(None, "--preview", help="An image to show every perturbation and severity on."),
    output: Path = typer.Option(Path("perturbations.png"), "--output", "-o", help="Where to write the contact sheet."),
    modality: str = typer.Option("generic", "--modality", "-m", help="dermoscopy, fundus, chest_xray or generic."),
    seed: int = typer.Option(0, "--seed", help="Perturbation seed."),
) -> None:
    """List the perturbations per modality, or write a contact sheet (rows: perturbations, columns: severity)."""
    from crsbench.perturbations import MODALITIES, contact_sheet, modality_set

    if modality not in MODALITIES:
        raise DataError(f"--modality: unknown modality {modality!r}; known: {', '.join(MODALITIES)}")
    if preview is None:
        console.print(report.perturbations_table(modality, modality_set(modality)))
        return
    sheet = contact_sheet(_read_image(preview), modality, seed=seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(output)
    console.print(Text(
        f"wrote {output} ({len(modality_set(modality))} perturbations x 5 severities, {sheet.size[0]}x{sheet.size[1]} px)"
    ))


def _read_image(path: Path):
    import numpy as np
    from PIL import UnidentifiedImageError

    from crsbench.datasets.folder import open_image

    try:
        with open_image(path) as image:
            return np.asarray(image.convert("RGB"))
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise DataError(f"{path}: cannot read image ({exc.__class__.__name__})") from None



app.command("select")(select)


@app.command()
def version() -> None:
    """Print the version."""
    console.print(__version__)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
