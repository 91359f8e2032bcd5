"""`crsbench encoders`: the registry as a table; `crsbench encoders show NAME`: one entry in full.

Mounted by the main CLI with `app.add_typer(encoders_app, name="encoders")`. Listing reads metadata
only: no weights are loaded and no model library is imported. `--json` prints the same values as one
JSON document (docs/cli.md).
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from crsbench.cli.console import Output
from crsbench.cli.errors import handled

encoders_app = typer.Typer(
    help="List the encoder registry, or show one encoder's entry.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _console(min_width: int) -> Console:
    """Wide enough that identifiers print whole, rather than folded at 80 columns when piped."""
    return Console(width=max(Console().width, min_width))

COLUMNS = ("name", "group", "source", "identifier", "revision", "input", "output", "status")
ENCODERS_SCHEMA = "crsbench.encoders/1"
ENCODER_SCHEMA = "crsbench.encoder/1"
JSON = typer.Option(False, "--json", help="Print the same values as one JSON document (docs/cli.md).")


def _row(name: str) -> tuple[str, ...]:
    from crsbench.encoders.registry import encoder_spec

    spec = encoder_spec(name)
    size = spec.pixels().describe()
    status = spec.status.split(":")[0]  # the short form; `show` prints the full wording
    return (name, spec.group, spec.source, spec.identifier, spec.revision_label, size, spec.output, status)


def registry_table() -> Table:
    from crsbench.encoders.registry import encoder_names

    table = Table(title="CRS-Bench encoders (crsbench encoders show NAME for one entry)")
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for name in encoder_names():
        table.add_row(*(Text(str(cell)) for cell in _row(name)))
    return table


def _fields(name: str) -> dict:
    """Every field of a spec, in declaration order, with the fingerprint the cache keys use."""
    from crsbench.encoders.registry import encoder_spec

    spec = encoder_spec(name)
    fields = spec.as_dict()
    fields["revision"] = spec.revision_label
    fields["crop"] = spec.crop or "no crop"
    fields["input"] = spec.pixels().describe()
    fields["precision"] = spec.precision or "fp32"
    fields["adapter"] = spec.adapter.model_dump(mode="json")
    fields["weights_from"] = spec.hub_repo or f"local only: {spec.how_to_get or 'a `weights:` path'}"
    fields["fingerprint"] = spec.fingerprint()
    return fields


def registry_data() -> dict:
    from crsbench.encoders.registry import encoder_names

    return {"schema": ENCODERS_SCHEMA, "encoders": [dict(zip(COLUMNS, map(str, _row(n)))) for n in encoder_names()]}


@encoders_app.callback()
@handled
def list_encoders(ctx: typer.Context, as_json: bool = JSON) -> None:
    """Without a sub-command: the registry as a table."""
    if ctx.invoked_subcommand is not None:
        return
    if as_json:
        Output(as_json).json(registry_data())
        return
    _console(170).print(registry_table())


@encoders_app.command("show")
@handled
def show(name: str = typer.Argument(..., help="an encoder name from `crsbench encoders`"), as_json: bool = JSON) -> None:
    """Every field of one encoder's entry."""
    fields = _fields(name)
    if as_json:
        Output(as_json).json({"schema": ENCODER_SCHEMA, "name": name, "fields": fields})
        return
    table = Table(title=name, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in fields.items():
        table.add_row(key, Text(str(value)))
    _console(120).print(table)
