"""`crsbench encoders`: the registry as a table; `crsbench encoders show NAME`: one entry in full.

Mounted by the main CLI with `app.add_typer(encoders_app, name="encoders")`. Listing reads metadata
only: no weights are loaded and no model library is imported.
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from crsbench.cli_errors import handled
from crsbench.errors import EncoderError

encoders_app = typer.Typer(
    help="List the encoder registry, or show one encoder's entry.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _console(min_width: int) -> Console:
    """Wide enough that identifiers print whole, rather than folded at 80 columns when piped."""
    return Console(width=max(Console().width, min_width))

COLUMNS = ("name", "group", "source", "identifier", "revision", "input", "embedding", "status")



def _row(name: str) -> tuple[str, ...]:
    from crsbench.encoders.zoo import ZOO, describe

    meta = describe(name)
    entry = ZOO.get(name)
    size = f"{meta.input_size}" + (f" -> crop {meta.extra['crop']}" if "crop" in meta.extra else "")
    status = ("confirmed" if entry.confirmed else "unconfirmed") if entry else "built-in"
    embedding = meta.embedding.split(" (")[0]  # the short form; `show` prints the full wording
    return (name, meta.group, meta.source, meta.identifier, meta.revision, size, embedding, status)


def registry_table() -> Table:
    from crsbench.encoders.registry import encoder_names

    table = Table(title="CRS-Bench encoders (crsbench encoders show NAME for one entry)")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for name in encoder_names():
        table.add_row(*(Text(str(cell)) for cell in _row(name)))
    return table


@encoders_app.callback()
@handled
def list_encoders(ctx: typer.Context) -> None:
    """Without a sub-command: the registry as a table."""
    if ctx.invoked_subcommand is not None:
        return
    _console(170).print(registry_table())


@encoders_app.command("show")
@handled
def show(name: str = typer.Argument(..., help="an encoder name from `crsbench encoders`")) -> None:
    """Every field of one encoder's entry."""
    from crsbench.encoders.registry import encoder_names
    from crsbench.encoders.zoo import ZOO, describe

    if name not in encoder_names():
        raise EncoderError(f"unknown encoder {name!r}; known: {', '.join(encoder_names())}")
    fields = describe(name).as_dict()
    entry = ZOO.get(name)
    if entry is not None:
        fields.update(
            status=entry.status, weights_from=entry.hub_repo or f"local only: {entry.how_to_get}",
            adapter_options=entry.options,
        )
    table = Table(title=name, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in fields.items():
        table.add_row(key, Text(str(value)))
    _console(120).print(table)
