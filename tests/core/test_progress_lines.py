"""Progress in a log and on a terminal: timestamped whole lines when standard error is not a terminal
(a pipe, a file), bars when it is (a pseudo-terminal)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest

from crsbench.core.progress import LineProgress, RichProgress, SilentProgress, clock, for_stream

LONG = "embed efficientnet-lite0 / demo-derm:test [perturb:hair:s5:p(26, 2.0):seed0]"  # 77 characters
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
START = re.compile(rf"^{STAMP} (?P<step>.+): start, (?P<total>\d+) (?P<unit>\w+)$")
PROGRESS = re.compile(rf"^{STAMP} (?P<step>.+): (?P<done>\d+)/(?P<total>\d+) (?P<unit>\w+) \((?P<pct>\d+)%\), "
                      r"[\d,.]+ \w+/s, \S+ elapsed, eta \S+$")
DONE = re.compile(rf"^{STAMP} (?P<step>.+): done, (?P<done>\d+) (?P<unit>\w+) in \S+( \([\d,.]+ \w+/s\))?$")
BEAT = re.compile(rf"^{STAMP} (?P<step>.+): still working at \d+/\d+ \w+ \(\d+%\), nothing finished for \S+, "
                  r"\S+ elapsed$")
ANY_LINE = (START, PROGRESS, DONE, BEAT)


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lines(stream: io.StringIO) -> list[str]:
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text  # nothing redrawn, no terminal codes
    assert text.endswith("\n")
    return text.splitlines()


def _progress(**options) -> tuple[LineProgress, io.StringIO, FakeClock]:
    stream, fake = io.StringIO(), FakeClock()
    defaults = dict(every_s=30.0, heartbeat_s=60.0, min_gap_s=0.0, start_after_s=0.0, clock=fake)
    return LineProgress(stream, messages=lambda m: None, **{**defaults, **options}), stream, fake


def test_a_step_in_a_log_is_start_tenths_and_end_each_a_whole_line():
    progress, stream, fake = _progress()
    with progress.task(LONG, total=200, unit="img") as task:
        for _ in range(200):
            fake.now += 0.125  # exact in binary: 8 img/s
            task.advance()
    lines = _lines(stream)
    assert START.match(lines[0]).group("step") == LONG and START.match(lines[0]).group("total") == "200"
    middle = [PROGRESS.match(line) for line in lines[1:-1]]
    assert all(middle) and [m.group("pct") for m in middle] == [str(p) for p in range(10, 100, 10)]
    assert all(m.group("step") == LONG for m in middle)  # the whole description, never cut at 80 columns
    assert max(len(line) for line in lines) > 80
    end = DONE.match(lines[-1])
    assert end and end.group("done") == "200" and "in 25s (8.00 img/s)" in lines[-1]
    assert "8.00 img/s, 2.5s elapsed, eta 22s" in lines[1]  # 20 of 200 at 8 img/s: 180 left


def test_a_slow_step_writes_every_n_seconds_between_the_tenths():
    progress, stream, fake = _progress(every_s=30.0)
    with progress.task("probe fits", total=1000, unit="fit") as task:
        for _ in range(50):  # 5 % of the total, at one fit per 2 s: no tenth reached
            fake.now += 2.0
            task.advance()
    lines = _lines(stream)
    assert len(lines) == 2 + 100 // 30  # start, one line per 30 s, end
    assert all(PROGRESS.match(line) for line in lines[1:-1])


def test_tenths_wait_while_the_last_line_is_fresh_so_a_quick_step_is_one_line():
    progress, stream, fake = _progress(min_gap_s=1.0, start_after_s=1.0)
    with progress.task("embed raw-pixels / demo-derm:train rows 0-60", total=60, unit="img") as task:
        for _ in range(60):
            fake.now += 0.001
            task.advance()
    (line,) = _lines(stream)
    assert DONE.match(line) and "done, 60 img in" in line


def test_a_step_that_advances_nothing_for_a_while_writes_a_heartbeat():
    progress, stream, fake = _progress(heartbeat_s=0.2)  # the heartbeat thread checks every 0.05 s
    with progress.task("probe fits", total=10, unit="fit") as task:
        task.advance()
        fake.now += 61.0  # a long fit: nothing advances, nothing is written
        deadline = time.monotonic() + 5
        while "still working" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        task.advance(9)
    beats = [line for line in _lines(stream) if BEAT.match(line)]
    assert beats and "nothing finished for 1m01s" in beats[0] and "1/10 fit (10%)" in beats[0]


def test_nested_steps_announce_the_outer_start_first_and_a_failure_says_where_it_stopped():
    progress, stream, fake = _progress(start_after_s=1.0, min_gap_s=1.0)
    with pytest.raises(KeyboardInterrupt):
        with progress.task("probe fits", total=4, unit="fit") as outer:
            fake.now += 2.0
            outer.advance()
            with progress.task("embed lite0 / demo-cxr:test", total=5, unit="img") as inner:
                fake.now += 0.1
                inner.advance(5)
            fake.now += 2.0
            raise KeyboardInterrupt
    lines = _lines(stream)
    assert all(any(p.match(line) for p in ANY_LINE) or "stopped at" in line for line in lines), lines
    assert lines[0].endswith("probe fits: start, 4 fit") and "embed lite0 / demo-cxr:test: done, 5 img" in lines[-2]
    assert lines[-1].endswith("probe fits: stopped at 1/4 fit (25%) after 4.1s (KeyboardInterrupt)")


def test_an_unknown_total_counts_without_percent_or_eta_and_a_step_without_counts_says_its_time():
    progress, stream, fake = _progress()
    with progress.task("read", total=None, unit="row") as task:
        fake.now += 1.0
        task.advance(7)
    with progress.task("score", total=None):
        fake.now += 95.0
    lines = _lines(stream)
    assert lines[0].endswith("read: start") and lines[1].endswith("read: done, 7 row in 1.0s (7.00 row/s)")
    assert lines[2].endswith("score: start") and lines[3].endswith("score: done in 1m35s")


def test_durations_read_as_a_person_writes_them():
    assert [clock(s) for s in (0.44, 17.2, 185, 3725)] == ["0.4s", "17s", "3m05s", "1h02m"]


def test_messages_go_to_their_own_place_and_control_codes_are_shown():
    said = []
    progress = LineProgress(io.StringIO(), messages=said.append)
    progress.log("derm (demo-derm), examples per class: ...")
    assert said == ["derm (demo-derm), examples per class: ..."]
    stream = io.StringIO()
    with LineProgress(stream, start_after_s=0.0).task("embed x\x1b[2J", total=1) as task:
        task.advance()
    assert "\x1b" not in stream.getvalue() and "embed x\\x1b[2J" in stream.getvalue()


def test_a_pipe_gets_lines_and_a_terminal_gets_bars():
    assert isinstance(for_stream(io.StringIO()), LineProgress)
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe:
        assert isinstance(for_stream(pipe), LineProgress)
    os.close(read)
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w") as terminal:
            assert isinstance(for_stream(terminal), RichProgress)
    finally:
        os.close(leader)
    assert not isinstance(SilentProgress(), (LineProgress, RichProgress))


_SCRIPT = """
import time
from crsbench.core.progress import for_stream
progress = for_stream(start_after_s=0.0, min_gap_s=0.0)
with progress.task({description!r}, total=20, unit="img") as task:
    for _ in range(20):
        time.sleep(0.01)
        task.advance()
"""


def test_a_run_whose_stderr_is_a_pipe_writes_lines_and_one_on_a_terminal_draws_bars(tmp_path):
    script = _SCRIPT.format(description=LONG)
    piped = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "COLUMNS": "80"})
    assert piped.returncode == 0, piped.stderr
    lines = piped.stderr.splitlines()
    assert START.match(lines[0]) and DONE.match(lines[-1]) and len(lines) >= 3
    assert all(any(p.match(line) for p in ANY_LINE) for line in lines), lines
    assert all(LONG in line for line in lines) and "\r" not in piped.stderr and "\x1b" not in piped.stderr

    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        drawn = subprocess.run([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=follower,
                               timeout=120, env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert drawn.returncode == 0
    text = shown.decode(errors="replace")
    assert "\x1b[" in text and "20/20" in text and "img/s" in text  # a bar, redrawn in place
    assert not START.search(text.replace("\r", "\n"))  # no log lines on a terminal
