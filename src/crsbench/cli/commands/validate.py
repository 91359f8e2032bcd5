"""`crsbench validate`: check a suite without running it."""

from __future__ import annotations

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.options import SUITE_ARGUMENT


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


def register(app: typer.Typer) -> None:
    app.command("validate")(handled(validate))
