"""The `crsbench` command: the app, its global options (-q, -v, --version), and every command put together
from its module in cli/commands/. Each command is one call to `crsbench.api` and one render from
`crsbench.report`, behind the one error handler `crsbench.cli.errors.handled`.

The library is imported inside each command, not here: `crsbench --help`, `--version`, `encoders` and
`datasets` start without loading a model library. Output conventions (-q, -v, --json) are
`crsbench.cli.console.Output`'s; docs/cli.md writes them down.
"""

from __future__ import annotations

import sys

import typer

from crsbench.cli.commands import (bundle, compare, datasets, demo, encoders, leaderboard, perturbations, report,
                                   results, run, score, select, validate, verify, version)
from crsbench.cli.console import NORMAL, QUIET, VERBOSE, set_verbosity
from crsbench.cli.commands.version import print_version
from crsbench.cli.errors import fail
from crsbench.errors import DataError

app = typer.Typer(
    name="crsbench",
    help="CRS-Bench: which frozen image encoder should a medical imaging team use?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# the order `crsbench --help` lists them in (command groups after the commands)
COMMANDS = (demo, run, validate, results, score, report, perturbations, select, bundle, compare, leaderboard, verify,
            version, datasets, encoders)
for command in COMMANDS:
    command.register(app)

# -q and -v together name no level: refused rather than one silently winning
LEVELS = {(False, False): NORMAL, (True, False): QUIET, (False, True): VERBOSE}


@app.callback()
def main(
    context: typer.Context,
    version: bool = typer.Option(False, "--version", callback=print_version, is_eager=True,
                                 help="Print the version and exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors and the final result line(s); no progress."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="More detail, e.g. the plan's per-encoder costs."),
) -> None:
    """CRS-Bench: which frozen image encoder should a medical imaging team use?"""
    if (quiet, verbose) not in LEVELS:
        fail(DataError("-q and -v: give one or the other"))
    set_verbosity(LEVELS[quiet, verbose])
    context.call_on_close(lambda: set_verbosity(NORMAL))  # the next invocation in this process starts afresh


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
