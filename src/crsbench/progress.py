"""Progress reporting as a small interface, so the numeric code never imports a terminal library."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Protocol


class ProgressTask(Protocol):
    def advance(self, n: int = 1) -> None: ...


class Progress(Protocol):
    def task(self, description: str, total: int | None, unit: str = "it") -> "contextmanager[ProgressTask]": ...

    def log(self, message: str) -> None: ...


class _NullTask:
    def advance(self, n: int = 1) -> None:
        pass


class SilentProgress:
    """For the Python API and tests: reports nothing."""

    @contextmanager
    def task(self, description: str, total: int | None, unit: str = "it") -> Iterator[ProgressTask]:
        yield _NullTask()

    def log(self, message: str) -> None:
        pass


class RichProgress:
    """Progress bars with items/s and ETA on every long step."""

    def __init__(self, console=None, messages=None):
        from rich.console import Console

        self.console = console or Console(stderr=True)  # bars: beside the output, not in it
        self.messages = messages or Console(soft_wrap=True)  # what a run says (class counts): standard output

    @contextmanager
    def task(self, description: str, total: int | None, unit: str = "it") -> Iterator[ProgressTask]:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress as RichBar,
            ProgressColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text


        class RateColumn(ProgressColumn):
            def render(self, task):  # items per second, what a user compares across encoders
                speed = task.finished_speed or task.speed
                return Text(f"{speed:,.1f} {unit}/s" if speed else f"-- {unit}/s", style="progress.data.speed")

        bar = RichBar(
            # descriptions hold user names (`x[/y]`): shown as written, never read as markup
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        with bar:
            task_id = bar.add_task(description, total=total)

            class _Task:
                def advance(self, n: int = 1) -> None:
                    bar.advance(task_id, n)

            yield _Task()

    def log(self, message: str) -> None:
        from rich.text import Text

        self.messages.print(Text(message), highlight=False)
