"""`crsbench version`: the version, as `crsbench --version` prints it."""

from __future__ import annotations

import typer

from crsbench import __version__
from crsbench.cli.errors import handled


def print_version(value: bool) -> None:
    if value:
        typer.echo(f"crsbench {__version__}")
        raise typer.Exit()


def version() -> None:
    """Print the version (as `crsbench --version`)."""
    print_version(True)


def register(app: typer.Typer) -> None:
    app.command("version")(handled(version))
