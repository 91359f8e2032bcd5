"""The console every command prints to, in one module that the command modules share (none imports another)."""

from __future__ import annotations

from rich.console import Console

console = Console(soft_wrap=True)


def wide_console() -> Console:
    """The scores table has 14 columns: let it run wider than a narrow terminal rather than truncate numbers."""
    return Console(width=max(console.width, 160), soft_wrap=True)
