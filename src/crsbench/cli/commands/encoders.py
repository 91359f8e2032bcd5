"""`crsbench encoders`: the registry as a table; `crsbench encoders show NAME`: one entry in full.

Mounted by the main CLI with `app.add_typer(encoders_app, name="encoders")`. Listing reads metadata
only: no weights are loaded and no model library is imported. `--json` prints the same values as one
JSON document (docs/cli.md).
"""

from __future__ import annotations

import typer
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.encoders.spec import FROM_MODEL_FIELDS

encoders_app = typer.Typer(
    help="List the encoder registry, or show one encoder's entry.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _console() -> Console:
    """The terminal's width (80 when piped): the views below fit it."""
    return Console()

COLUMNS = ("name", "group", "source", "identifier", "revision", "input", "output", "status")
ENCODERS_SCHEMA = "crsbench.encoders/1"
ENCODER_SCHEMA = "crsbench.encoder/1"
JSON = typer.Option(False, "--json", help="Print the same values as one JSON document (docs/cli.md).")


WIDE_FROM = 120  # narrower than this, eight folded columns read worse than one block per encoder
TITLE = "CRS-Bench encoders (crsbench encoders show NAME for one entry)"


def _input(spec) -> str:
    return spec.pixels().describe() if spec.resolved else "from the model's config"


def _row(name: str) -> tuple[str, ...]:
    from crsbench.encoders.registry import encoder_spec

    spec = encoder_spec(name)
    status = spec.status.split(":")[0]  # the short form; `show` prints the full wording
    return (name, spec.group, spec.source, spec.identifier, spec.revision_label, _input(spec), spec.output, status)


def _short(revision: str) -> str:
    """A commit as git abbreviates it (12 digits) in the table; blocks, `show` and --json keep it whole."""
    return revision[:12] if len(revision) == 40 and all(c in "0123456789abcdef" for c in revision) else revision


class RegistryView:
    """The registry at the console's width: a table whose name column never folds (the other cells fold
    where they must) from WIDE_FROM columns, else one block per encoder: its name on a line of its own,
    then each field beside its header. Both show the same values."""

    def __init__(self, rows: list[tuple[str, ...]]):
        self.rows = rows

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def layout(self, width: int) -> str:
        return "table" if width >= WIDE_FROM else "blocks"

    def table(self) -> Table:
        table = Table(title=TITLE)
        longest = max((len(row[0]) for row in self.rows), default=4)
        table.add_column(COLUMNS[0], no_wrap=True, min_width=longest)
        for column in COLUMNS[1:]:
            table.add_column(column, overflow="fold")
        revision = COLUMNS.index("revision")
        for row in self.rows:
            cells = [_short(c) if i == revision else c for i, c in enumerate(row)]
            table.add_row(*(Text(str(cell)) for cell in cells))
        return table

    def __rich_console__(self, console, options):
        if self.layout(options.max_width) == "table":
            yield from console.render(self.table(), options)
            return
        yield Text(TITLE, style="bold")
        header = max(len(c) for c in COLUMNS[1:])
        for row in self.rows:
            yield Text("")
            yield Text(row[0], style="bold")
            grid = Table.grid(padding=(0, 2, 0, 0))
            grid.add_column(style="dim", no_wrap=True, min_width=header)
            grid.add_column(overflow="fold")
            for column, cell in zip(COLUMNS[1:], row[1:]):
                grid.add_row(column, Text(str(cell)))
            yield Padding(grid, (0, 0, 0, 2), expand=False)


def registry_table() -> RegistryView:
    from crsbench.encoders.registry import encoder_names

    return RegistryView([_row(name) for name in encoder_names()])


def _fields(name: str) -> dict:
    """Every field of a spec, in declaration order, with the fingerprint the cache keys use."""
    from crsbench.encoders.registry import encoder_spec

    spec = encoder_spec(name)
    fields = spec.as_dict()
    built = spec
    if not spec.resolved:  # from_model: what the model's config says, where it can be read without a download
        from crsbench.encoders.adapters.from_model import preview, where_from

        built = preview(spec)
        fields["preprocessing"] = f"from_model: {where_from(spec)}"
        if built is None:
            fields["preprocessing"] += " (read when the encoder is built: not installed here, or not cached)"
        else:
            fields.update({k: getattr(built, k) for k in FROM_MODEL_FIELDS})
            fields["mean"], fields["std"] = list(built.mean), list(built.std)
            fields["card"] = built.card
    fields["revision"] = spec.revision_label
    fields["embed_dim"] = spec.embed_dim or "from the first batch"
    if built is not None:
        fields["crop"] = built.crop or "no crop"
        fields["input"] = built.pixels().describe()
    fields["precision"] = spec.precision or "fp32"
    fields["adapter"] = spec.adapter.model_dump(mode="json")
    fields["weights_from"] = spec.hub_repo or f"local only: {spec.how_to_get or 'a `weights:` path'}"
    fields["fingerprint"] = built.fingerprint() if built is not None else "known when built"
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
    _console().print(registry_table())


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
    _console().print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(encoders_app, name="encoders")
