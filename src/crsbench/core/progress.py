"""Progress reporting as a small interface, so the numeric code never imports a terminal library.

Three implementations: `SilentProgress` (the Python API, tests, `-q`), `RichProgress` (bars, for a
terminal) and `LineProgress` (plain timestamped lines, for a log: a pipe, a file, CI). `for_stream` picks
bars or lines by whether the stream is a terminal. A line is written once and never redrawn, so nothing
is cut at 80 columns and nothing is lost when the output is a file:

    2025-06-01 12:00:00 embed lite0 / demo-derm:test [perturb:hair:s5:seed0]: start, 200 img
    2025-06-01 12:00:10 embed lite0 / demo-derm:test [perturb:hair:s5:seed0]: 120/200 img (60%), 12.0 img/s, 10s elapsed, eta 7s
    2025-06-01 12:00:17 embed lite0 / demo-derm:test [perturb:hair:s5:seed0]: done, 200 img in 17s (11.8 img/s)
    2025-06-01 12:01:17 probe fits: still working at 40/90 fit (44%), nothing finished for 1m00s, 3m10s elapsed
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Protocol, TextIO

from crsbench.core.printable import printable


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


def _stdout_line(message: str) -> None:
    # looked up at each call: a test runner or a redirect may have replaced sys.stdout since
    sys.stdout.write(printable(message) + "\n")
    sys.stdout.flush()


class RichProgress:
    """Progress bars with items/s and ETA on every long step."""

    def __init__(self, console=None, messages=None):
        """`messages`: where what a run says goes (class counts): a rich Console, or a function of one
        line; default: standard output."""
        from rich.console import Console

        self.console = console or Console(stderr=True)  # bars: beside the output, not in it
        self.messages = messages or Console(soft_wrap=True)

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

        if not hasattr(self.messages, "print"):
            self.messages(message)
            return
        self.messages.print(Text(message), highlight=False)


# --------------------------------------------------------------------------- lines, for a log


def clock(seconds: float) -> str:
    """`0.4s`, `17s`, `3m05s`, `1h02m`: a duration in a progress line."""
    seconds = max(0.0, float(seconds))
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def rate(per_second: float, unit: str) -> str:
    digits = 0 if per_second >= 100 else 1 if per_second >= 10 else 2
    return f"{per_second:,.{digits}f} {unit}/s"


def timestamp(at: float | None = None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


class _LineTask:
    """One step's counts and when it last said something; every write goes through the owner's lock."""

    def __init__(self, owner: "LineProgress", description: str, total: int | None, unit: str):
        self.owner, self.unit = owner, unit
        self.description = printable(description).replace("\n", " ")  # one step, one line
        self.total = total if total and total > 0 else None
        self.done = 0
        self.started = self.last_advance = owner.clock()
        self.started_at = time.time()  # the start line's timestamp, even when it is written later
        self.announced = False  # its start line is written
        self.marks = 0  # the 10 % steps already shown

    # ----------------------------------------------------------------- what each line says

    def _count(self) -> str:
        if self.total is None:
            return f"{self.done} {self.unit}"
        return f"{self.done}/{self.total} {self.unit} ({self.done / self.total:.0%})"

    def _progress(self, now: float) -> str:
        elapsed = now - self.started
        line = f"{self._count()}, "
        if elapsed <= 0 or not self.done:
            return line + f"{clock(elapsed)} elapsed"
        speed = self.done / elapsed
        line += f"{rate(speed, self.unit)}, {clock(elapsed)} elapsed"
        if self.total is not None:
            line += f", eta {clock((self.total - self.done) / speed)}"
        return line

    @property
    def counted(self) -> bool:
        """False for a step that counts nothing (a total of None, no advance): its lines carry no count."""
        return self.total is not None or self.done > 0

    def start_line(self) -> str:
        return f"start, {self.total} {self.unit}" if self.total is not None else "start"

    def end_line(self, error: BaseException | None) -> str:
        elapsed = self.owner.clock() - self.started
        if error is not None:
            at = f" at {self._count()}" if self.counted else ""
            return f"stopped{at} after {clock(elapsed)} ({type(error).__name__})"
        if not self.counted:
            return f"done in {clock(elapsed)}"
        speed = f" ({rate(self.done / elapsed, self.unit)})" if elapsed > 0 and self.done else ""
        return f"done, {self.done} {self.unit} in {clock(elapsed)}{speed}"

    def heartbeat_line(self, now: float) -> str:
        elapsed = f"{clock(now - self.started)} elapsed"
        if not self.counted:
            return f"still working, {elapsed}"
        return f"still working at {self._count()}, nothing finished for {clock(now - self.last_advance)}, {elapsed}"

    # ----------------------------------------------------------------- when a line is due

    def _due(self, now: float) -> bool:
        if self.total is not None and self.done >= self.total:  # the end line says it
            return False
        since = now - self.owner.last_write
        if since >= self.owner.every_s:
            return True
        return (self.total is not None and int(self.done / self.total / self.owner.step) > self.marks
                and since >= self.owner.min_gap_s)

    def advance(self, n: int = 1) -> None:
        with self.owner.lock:
            now = self.owner.clock()
            self.done += n
            self.last_advance = now
            if self._due(now):
                if self.total is not None:
                    self.marks = int(self.done / self.total / self.owner.step)
                self.owner.write(self, self._progress(now))

    def beat(self) -> None:
        """From the heartbeat thread: the start line once the step has run `start_after_s`, and a heartbeat
        after `heartbeat_s` with nothing written and nothing finished."""
        with self.owner.lock:
            now = self.owner.clock()
            if not self.announced and now - self.started >= self.owner.start_after_s:
                self.owner.announce(self)
            if now - max(self.owner.last_write, self.last_advance) >= self.owner.heartbeat_s:
                self.owner.write(self, self.heartbeat_line(now))


class LineProgress:
    """Plain lines for a log: a start line, a line every `every_s` seconds or every `step` of the total
    (whichever comes first; a step's line is held back while the last line is under `min_gap_s` old), an
    end line with the count, the time and the rate, and a heartbeat when `heartbeat_s` pass with nothing
    written and nothing finished (a long fit, one slow batch).

    A step's start line waits `start_after_s`: a step over sooner (most cache shards) prints its end line
    alone, which says when, how many and how fast; a longer one, or one with something to say, prints its
    start line first, stamped with the time it started. A step that fails before its start line prints
    nothing (the error is the one line to read); one that fails later ends with `stopped at ...`.

    Lines go to `stream` (default: standard error at the time of writing); messages (`log`) to `messages`
    (default: a line on standard output)."""

    def __init__(self, stream: TextIO | None = None, messages: Callable[[str], None] | None = None, *,
                 every_s: float = 30.0, step: float = 0.10, heartbeat_s: float = 60.0, min_gap_s: float = 1.0,
                 start_after_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.stream = stream
        self.messages = messages or _stdout_line
        self.every_s, self.step, self.heartbeat_s, self.min_gap_s = every_s, step, heartbeat_s, min_gap_s
        self.start_after_s = start_after_s
        self.clock = clock
        self.lock = threading.RLock()
        self.last_write = clock()
        self.open: list[_LineTask] = []  # the steps under way, outermost first

    def _line(self, text: str) -> None:
        stream = self.stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()  # a log read while the run goes on shows it at once
        self.last_write = self.clock()

    def announce(self, step: _LineTask, itself: bool = True) -> None:
        """The start lines not yet written of the steps around `step`, outermost first, and of `step` itself."""
        around = self.open[: self.open.index(step)] if step in self.open else []
        for each in around + [step] * itself:
            if not each.announced:
                each.announced = True
                self._line(f"{timestamp(each.started_at)} {each.description}: {each.start_line()}")

    def write(self, step: _LineTask, what: str, last: bool = False) -> None:
        """One whole line about `step`, after the start lines it needs (its own too, unless this is its last)."""
        self.announce(step, itself=not last)
        self._line(f"{timestamp()} {step.description}: {what}")

    @contextmanager
    def task(self, description: str, total: int | None, unit: str = "it") -> Iterator[ProgressTask]:
        step = _LineTask(self, description, total, unit)
        with self.lock:
            self.open.append(step)
            if self.start_after_s <= 0:
                self.announce(step)
        stop = threading.Event()
        beating = threading.Thread(target=self._beat, args=(step, stop), daemon=True, name="crsbench-heartbeat")
        beating.start()
        error: BaseException | None = None
        try:
            yield step
        except BaseException as exc:
            error = exc
            raise
        finally:
            stop.set()
            beating.join()
            with self.lock:
                # a step that fails before it said anything leaves the error its one line
                if error is None or step.announced:
                    self.write(step, step.end_line(error), last=True)
                self.open.remove(step)

    def _beat(self, step: _LineTask, stop: threading.Event) -> None:
        # a few checks per period: a heartbeat or a start line is late by a quarter period at most
        period = min(self.heartbeat_s, self.start_after_s if self.start_after_s > 0 else self.heartbeat_s) / 4
        while not stop.wait(period):
            step.beat()

    def log(self, message: str) -> None:
        self.messages(message)


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def for_stream(stream: TextIO | None = None, messages: Callable[[str], None] | None = None,
               **line_options) -> RichProgress | LineProgress:
    """Bars where `stream` (default: standard error) is a terminal, timestamped lines where it is not;
    `line_options`: LineProgress's timings."""
    target = stream if stream is not None else sys.stderr
    if is_terminal(target):
        from rich.console import Console

        return RichProgress(console=Console(file=target) if stream is not None else None, messages=messages)
    return LineProgress(stream, messages, **line_options)
