"""How every `crsbench` command reports a user error: one line on stderr, then the error's exit code."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

from crsbench.errors import CRSBenchError


def fail(error: CRSBenchError) -> None:
    # escaped: messages quote user text and install hints such as crsbench[zoo], not rich markup
    Console(stderr=True).print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
    raise typer.Exit(error.exit_code)
