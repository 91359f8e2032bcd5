"""`crsbench datasets`: list the published benchmark's datasets, or check a downloaded copy.

    crsbench datasets list                              the known datasets, their layouts and access terms
    crsbench datasets                                   the same list
    crsbench datasets check ROOT --dataset isic2019     read ROOT as published, print counts per class and split

`check` builds the dataset exactly as a benchmark run would (so it also fixes the splits, writing the split
file), stats every listed image (also for CheXpert and MIMIC, where a run does not by default) and, with
--decode, decodes every image to find unreadable or truncated files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from crsbench.cli.errors import handled
from crsbench.errors import DataError

datasets_app = typer.Typer(
    help="The published benchmark's datasets: list them, or check a downloaded copy.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)

# Options only some datasets take: passed when the user gives them, so a wrong one fails by name.
_ONLY_WHEN_GIVEN = ("csv", "uncertainty")



@datasets_app.callback(invoke_without_command=True)
@handled
def list_by_default(context: typer.Context) -> None:
    """Without a sub-command: the list, as `crsbench datasets list`."""
    if context.invoked_subcommand is None:
        _print_datasets()


@datasets_app.command("list")
@handled
def list_datasets() -> None:
    """List the known datasets (the published benchmark's four, then the other dataset kinds)."""
    _print_datasets()


def _print_datasets() -> None:
    from crsbench.datasets.published import PUBLISHED_KINDS as PUBLISHED
    from crsbench.datasets.registry import dataset_kind, known_dataset_kinds

    console.print("[bold]Published benchmark datasets[/] (read from the official release layout, no reformatting)")
    for kind in PUBLISHED:
        info = dataset_kind(kind).info
        console.print(f"\n[bold]{kind}[/]  {info.title}: {info.summary}")
        console.print(f"  root:   the `root` option, else ${info.env_var}", highlight=False)
        console.print(f"  layout: {info.layout}", highlight=False)
        console.print(f"  access: {info.access}", highlight=False)
    others = [kind for kind in known_dataset_kinds() if kind not in PUBLISHED]
    console.print(f"\nother dataset kinds: {', '.join(others)}")
    console.print("check a copy: crsbench datasets check ROOT --dataset KIND   (how to obtain each: docs/datasets.md)")


@datasets_app.command()
@handled
def check(
    root: Path = typer.Argument(..., help="The dataset folder, as downloaded and unzipped."),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Which dataset: isic2019, aptos2019, chexpert, mimic_cxr."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="CheXpert only: another copy of train.csv."),
    uncertainty: Optional[str] = typer.Option(None, "--uncertainty", help="CheXpert/MIMIC: one policy for all labels."),
    missing: str = typer.Option("fail", "--missing", help="Missing images: fail, or drop and count them."),
    images: bool = typer.Option(True, "--images/--no-images", help="Check that every listed image exists."),
    decode: bool = typer.Option(False, "--decode", help="Also decode every image (slow): finds unreadable files."),
    resplit: bool = typer.Option(False, "--resplit", help="Draw and write new splits (after a source change)."),
) -> None:
    """Validate a downloaded copy: read it as published, print counts per class and split."""
    built = _build(dataset, root, csv, uncertainty, missing, images, resplit)
    _report(built)
    if decode:
        _check_decoding(built)


def _build(kind: str, root: Path, csv, uncertainty, missing: str, images: bool, resplit: bool):
    from crsbench.datasets.published import PUBLISHED_KINDS as PUBLISHED
    from crsbench.datasets.registry import get_dataset

    if kind not in PUBLISHED:
        raise DataError(f"unknown dataset {kind!r}; known: {', '.join(PUBLISHED)}")
    given = {name: value for name, value in zip(_ONLY_WHEN_GIVEN, (csv, uncertainty)) if value is not None}
    return get_dataset(kind, root=root, missing=missing, check_images=images, resplit=resplit, **given)


def _report(built) -> None:
    sizes = built.split_sizes()
    console.print(f"[bold]{built.meta.name}[/] at {built.root}: {sum(sizes.values())} images"
                  f" (train {sizes['train']}, val {sizes['val']}, test {sizes['test']})")  # fmt: skip
    dropped = ", ".join(f"{reason} {n}" for reason, n in sorted(built.dropped.items())) or "none"
    console.print(f"dropped: {dropped}")
    console.print(f"splits fixed in {built.split_file}")
    what = "positives per label" if built.meta.task_type == "multi_label" else "images per class"
    console.print(_counts_table(built.class_counts(), f"{what} and split"))
    masked = built.masked_counts()
    if masked is not None and int(masked["total"].sum()):
        console.print(_counts_table(masked, "masked (U-Ignore) entries per label and split"))


def _counts_table(frame, title: str) -> Table:  # frame: a pandas DataFrame
    table = Table(title=title)
    table.add_column("class")
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for name, row in frame.iterrows():
        table.add_row(str(name), *(str(int(v)) for v in row))
    return table


def _check_decoding(built) -> None:
    bad = built.unreadable_images()
    if bad:
        shown = "; ".join(reason for _, reason in bad[:3])
        raise DataError(f"{len(bad)} unreadable images in {built.meta.name}: {shown}")
    console.print(f"all {len(built.ids)} images decode")


def register(app: typer.Typer) -> None:
    app.add_typer(datasets_app, name="datasets")
