"""`crsbench verify`: check a bundle against its content hashes and, with --id, its published id."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled

VERIFY_SCHEMA = "crsbench.verify/1"


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
    app.command("verify")(handled(verify))
