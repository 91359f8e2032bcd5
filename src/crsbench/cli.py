"""The `crsbench` command: a thin layer over `crsbench.api` with progress bars and tables."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from crsbench import __version__, api
from crsbench.cli_datasets import datasets_app
from crsbench.cli_encoders import encoders_app
from crsbench.cli_errors import fail as _fail
from crsbench.errors import CRSBenchError, DataError
from crsbench.progress import RichProgress

app = typer.Typer(
    name="crsbench",
    help="CRS-Bench: which frozen image encoder should a medical imaging team use?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)
app.add_typer(datasets_app, name="datasets")
app.add_typer(encoders_app, name="encoders")



def _summary_rich(frame) -> Table:
    seeds = int(frame["n_seeds"].max()) if len(frame) else 0
    table = Table(title=f"Clean test, 100% labels: AUROC / ECE (mean over {seeds} seeds)")
    table.add_column("encoder", style="bold")
    tasks = sorted(frame["task"].unique())
    for task in tasks:
        table.add_column(task, justify="right")
    table.add_column("mean AUROC", justify="right")
    for encoder, rows in frame.groupby("encoder", sort=False, observed=True):
        by_task = rows.set_index("task")
        cells = [
            f"{by_task.at[t, 'auroc_mean']:.3f} / {by_task.at[t, 'ece_mean']:.3f}" if t in by_task.index else "-"
            for t in tasks
        ]
        table.add_row(str(encoder), *cells, f"{rows['auroc_mean'].mean():.3f}")
    return table


def _score_and_report(results_dir: Path, reference: Optional[str], n_boot: int, out: Optional[Path] = None) -> None:
    from crsbench.scoring import scores_rich_table

    started = time.perf_counter()
    report = api.score(results_dir, reference=reference, n_boot=n_boot)
    # the scores table has 14 columns: let it run wider than a narrow terminal rather than truncate numbers
    Console(width=max(console.width, 160), soft_wrap=True).print(scores_rich_table(report))
    agreement = report.rank_agreement.iloc[0]
    console.print(
        f"AUROC vs CRS ranking: Spearman {agreement.spearman:.2f}, Kendall tau-b {agreement.kendall_tau_b:.2f}, "
        f"{int(agreement.n_reversed)} of {int(agreement.n_pairs)} pairwise orderings reversed, "
        f"mean rank displacement {agreement.mean_abs_rank_displacement:.2f}"
    )
    for pair in report.reversed_pairs.itertuples():
        console.print(f"  reversed: {pair.encoder_a} (AUROC {pair.auroc_a:.3f}, CRS {pair.crs_a:.2f}) vs "
                      f"{pair.encoder_b} (AUROC {pair.auroc_b:.3f}, CRS {pair.crs_b:.2f})")
    if len(report.weight_sensitivity):
        top = report.weight_sensitivity["p_top"].sort_values(ascending=False)
        shares = ", ".join(f"{name} {share:.1%}" for name, share in top.items() if share >= 0.0005)
        console.print(f"Under Dirichlet-sampled component and axis weights, top encoder: {shares}")
    console.print(f"Leading tier (not resolved from the top by the paired bootstrap): {', '.join(report.leading_tier)}")
    for note in report.notes:
        console.print(f"[dim]note: {note}[/]")
    written = api.write_scores(report, results_dir, out)
    folder = next(iter(written.values())).parent
    console.print(f"scores written to {folder} (CSV, Parquet, JSON) in {time.perf_counter() - started:.1f} s")


def _run_and_report(suite, cache_dir: Optional[Path]) -> None:
    started = time.perf_counter()
    summary = api.run(suite, progress=RichProgress(), cache_dir=cache_dir)
    elapsed = time.perf_counter() - started
    table = api.summary_table(summary.output)
    order = table.groupby("encoder")["auroc_mean"].mean().sort_values(ascending=False).index
    table["encoder"] = table["encoder"].astype("category").cat.set_categories(list(order))
    console.print(_summary_rich(table.sort_values(["encoder", "task"])))
    console.print(
        f"{summary.written} records written, {summary.skipped} already stored, "
        f"{summary.forward_passes} encoder batches run, in {elapsed:.1f} s. Results: {summary.output}/results.sqlite"
    )


@app.command()
def demo(
    quick: bool = typer.Option(False, "--quick", help="A one-minute version: fewer images, seeds and fractions."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Results folder (default: the suite's)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    generated: bool = typer.Option(False, "--generated", help="Use the generated data even when MedMNIST files are on disk."),
) -> None:
    """Run the demo benchmark end to end on data the project generates (or local MedMNIST files)."""
    try:
        suite = api.demo_suite(quick=quick, output=output, use_medmnist=not generated)
        sources = ", ".join(
            f"{t.name}: {t.dataset.options().get('name', 'generated')}" if t.dataset.kind == "medmnist"
            else f"{t.name}: generated" for t in suite.tasks
        )
        console.print(f"demo data ({sources}); MedMNIST files are used when found locally and their md5 verifies")
        _run_and_report(suite, cache_dir)
        _score_and_report(Path(suite.output), suite.reference, n_boot=2_000 if quick else 10_000)
    except CRSBenchError as error:
        _fail(error)


@app.command()
def run(
    suite: Path = typer.Argument(..., help="Suite YAML file, or a built-in suite: demo, demo-quick, crs-bench."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
) -> None:
    """Run a suite; a rerun resumes, writing only the records that are missing."""
    try:
        builtin = api.builtin_suite_path(str(suite))
        if not suite.exists() and builtin.exists():
            suite = builtin
        _run_and_report(api.load_suite(suite), cache_dir)
    except CRSBenchError as error:
        _fail(error)


@app.command()
def validate(suite: Path = typer.Argument(..., help="Suite YAML file.")) -> None:
    """Check a suite file without running it."""
    try:
        loaded = api.load_suite(suite)
    except CRSBenchError as error:
        _fail(error)
    console.print(
        f"{suite}: ok ({len(loaded.encoder_specs)} encoders, {len(loaded.tasks)} tasks, "
        f"{len(loaded.seeds)} seeds, {len(loaded.fractions)} fractions)"
    )


@app.command()
def results(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    export: bool = typer.Option(False, "--export", help="Write records and seed means as Parquet and CSV."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the exports (default: the results folder)."),
) -> None:
    """Show the per-encoder table of a results folder, and optionally export its records."""
    try:
        console.print(_summary_rich(api.summary_table(results_dir)))
        if export:
            for path in api.export_results(results_dir, out):
                console.print(f"wrote {path}")
    except CRSBenchError as error:
        _fail(error)


@app.command()
def score(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    reference: Optional[str] = typer.Option(None, "--reference", "-r", help="Reference encoder (default: the suite's)."),
    n_boot: int = typer.Option(10_000, "--n-boot", min=0, help="Paired-seed bootstrap draws (0: none)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for the score tables (default: RESULTS/scores)."),
) -> None:
    """Score the encoders: four axes, three components, CRS, interval, leading tier, AUROC vs CRS rank."""
    try:
        _score_and_report(results_dir, reference, n_boot, out)
    except (CRSBenchError, ValueError) as error:
        _fail(error if isinstance(error, CRSBenchError) else CRSBenchError(str(error)))


@app.command()
def perturbations(
    preview: Optional[Path] = typer.Option(None, "--preview", help="An image to show every perturbation and severity on."),
    output: Path = typer.Option(Path("perturbations.png"), "--output", "-o", help="Where to write the contact sheet."),
    modality: str = typer.Option("generic", "--modality", "-m", help="dermoscopy, fundus, chest_xray or generic."),
    seed: int = typer.Option(0, "--seed", help="Perturbation seed."),
) -> None:
    """List the perturbations per modality, or write a contact sheet (rows: perturbations, columns: severity)."""
    from crsbench.perturbations import MODALITIES, contact_sheet, modality_set

    if modality not in MODALITIES:
        _fail(DataError(f"--modality: unknown modality {modality!r}; known: {', '.join(MODALITIES)}"))
    if preview is None:
        table = Table(title=f"Perturbations for {modality} (severities 1-5)")
        for column in ("name", "what it does", "severity 1 ... 5"):
            table.add_column(column)
        for spec in modality_set(modality):
            table.add_row(spec.name, spec.description, " | ".join(str(spec.param(s)) for s in range(1, 6)))
        console.print(table)
        return
    image = _read_image(preview)
    sheet = contact_sheet(image, modality, seed=seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(output)
    console.print(f"wrote {output} ({len(modality_set(modality))} perturbations x 5 severities, {sheet.size[0]}x{sheet.size[1]} px)")


def _read_image(path: Path):
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"))
    except (OSError, UnidentifiedImageError) as exc:
        _fail(DataError(f"{path}: cannot read image ({exc.__class__.__name__})"))


@app.command()
def version() -> None:
    """Print the version."""
    console.print(__version__)


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
