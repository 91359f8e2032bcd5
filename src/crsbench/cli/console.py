"""Where every command's output goes, in one module that the command modules share (none imports another).

A command says four kinds of thing, and `Output` sends each where it belongs:

    say     what it is doing (the data read, the plan)   standard output; standard error under --json; not with -q
    detail  more of it (the plan's per-encoder costs)     as `say`, only with -v
    show    what it found, at length (tables)             standard output; not with -q, not with --json
    result  its final line(s) (the leading tier, a path)  standard output, even with -q; not with --json
    json    one JSON document: what `show` and `result` say, as values    standard output

Progress goes to standard error: bars on a terminal, timestamped lines in a log, nothing with -q.
"""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from crsbench.core.printable import printable, same_length

QUIET, NORMAL, VERBOSE = 0, 1, 2


class SafeConsole(Console):
    """A console that shows control codes in what it prints (a name holding ESC cannot rewrite the terminal)."""

    def print(self, *objects, **options) -> None:
        super().print(*(_shown(o) for o in objects), **options)


def _shown(item):
    if isinstance(item, Text):
        shown = item.copy()
        shown.plain = same_length(item.plain)  # spans index characters: keep every offset
        return shown
    return printable(item) if isinstance(item, str) else item


console = SafeConsole(soft_wrap=True)
errors = SafeConsole(stderr=True, soft_wrap=True)

# set by the top-level options (-q, -v) for one invocation, and reset when it ends
_verbosity = {"level": NORMAL}


def set_verbosity(level: int) -> None:
    _verbosity["level"] = level


def verbosity() -> int:
    return _verbosity["level"]


def _line(item) -> Any:
    return Text(item) if isinstance(item, str) else item  # a str is text as written, never markup


class Output:
    """One command's output (module docstring); `as_json`: the command prints one JSON document instead."""

    def __init__(self, as_json: bool = False):
        self.as_json = as_json

    @property
    def _human(self) -> SafeConsole:
        return errors if self.as_json else console  # standard output holds the JSON alone

    def say(self, item, style: str | None = None) -> None:
        if verbosity() >= NORMAL:
            self._human.print(Text(item, style=style) if isinstance(item, str) and style else _line(item),
                              highlight=False)

    def detail(self, item, style: str | None = "dim") -> None:
        """`item` may be a function of nothing: a line dear to make is made only for -v."""
        if verbosity() >= VERBOSE:
            self.say(item() if callable(item) else item, style)

    def show(self, item) -> None:
        if verbosity() >= NORMAL and not self.as_json:
            console.print(_line(item), highlight=False)

    def result(self, item, style: str | None = None) -> None:
        if not self.as_json:
            console.print(Text(item, style=style) if isinstance(item, str) and style else _line(item),
                          highlight=False)

    def json(self, payload: dict) -> None:
        from crsbench.report.files import clean_json

        typer.echo(json.dumps(clean_json(payload), indent=2, default=str))

    def progress(self, log=None):
        """Where a run reports its steps; `log`: what takes its messages (default: `say`)."""
        from crsbench.core.progress import SilentProgress, for_stream

        if verbosity() < NORMAL:
            return SilentProgress()
        return for_stream(messages=log or self.say)
