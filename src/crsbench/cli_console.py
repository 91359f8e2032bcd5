"""The console every command prints to, in one module that the command modules share (none imports another)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from crsbench.printable import printable, same_length


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


def wide_console() -> Console:
    """The scores table has 14 columns: let it run wider than a narrow terminal rather than truncate numbers."""
    return SafeConsole(width=max(console.width, 160), soft_wrap=True)
