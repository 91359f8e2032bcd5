"""`crsbench bundle`: publish a results folder as a portable, content-addressed bundle (docs/bundles.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled


def bundle(
    results_dir: Path = typer.Argument(..., help="Results folder or results.sqlite."),
    output: Path = typer.Option(..., "--output", "-o", help="The bundle file to write, e.g. NAME.crsb."),
    suite_hash: Optional[str] = typer.Option(None, "--suite-hash", help="Only the records of this suite."),
    with_subgroups: bool = typer.Option(
        False, "--with-subgroups", help="Also carry each test case's subgroup attributes (sex, age band, site, "
        "view): quasi-identifiers that some datasets' terms forbid sharing, so left out unless asked."),
) -> None:
    """Write a portable, content-addressed results bundle: records, per-case predictions, suite, versions,
    fingerprints and encoder specs; no images, embeddings or paths of this machine."""
    from crsbench import api

    out = Output()
    path, identity = api.bundle(results_dir, output, suite_hash, with_subgroups)
    out.result(f"wrote {path} ({path.stat().st_size / 1024:.1f} KiB), bundle id {identity}")
    out.result("per-case subgroup labels included (--with-subgroups)" if with_subgroups else
               "per-case subgroup labels left out (--with-subgroups includes them)")



def register(app: typer.Typer) -> None:
    app.command("bundle")(handled(bundle))
