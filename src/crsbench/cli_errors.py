"""How every `crsbench` command reports a user error: one line on stderr, then the error's exit code.

Every command is wrapped in `handled`, so a given error reads the same whichever command hit it.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from crsbench.errors import CRSBenchError

F = TypeVar("F", bound=Callable)

# ValueError is what the scoring functions raise for settings or records they cannot use
# (unknown reference, weights, too few records): a user error, reported like the others.
VALUE_ERROR_EXIT = 2


def fail(error: Exception) -> None:
    code = error.exit_code if isinstance(error, CRSBenchError) else VALUE_ERROR_EXIT
    message = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    # Text, not markup: messages quote user text and install hints such as crsbench[zoo]
    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def handled(command: F) -> F:
    """The one error handler of the CLI: a user error becomes one line and its exit code, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (CRSBenchError, ValueError) as error:
            fail(error)

    return wrapper  # type: ignore[return-value]
