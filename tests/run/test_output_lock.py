"""The output lock on every OS: the `filelock` package holds it (no POSIX-only call here), one holder at a
time, the holder named while it holds, emptied when released, a dead one's lock taken over (tests/end_to_end/test_faults.py
kills a holder for real), and another host's file refused with advice."""

from __future__ import annotations

import ast
import json
import os
import platform
import time
from pathlib import Path

import pytest

from crsbench.run.output_lock import LOCK_NAME, OS_LOCK_NAME, OutputBusy, OutputLock

SOURCE = Path(__file__).resolve().parents[2] / "src" / "crsbench" / "run" / "output_lock.py"
POSIX_ONLY = {"fcntl", "termios", "resource", "pwd", "grp"}
POSIX_ONLY_CALLS = {"pread", "pwrite", "fchown", "getuid", "kill"}


def test_the_lock_uses_nothing_posix_only():
    tree = ast.parse(SOURCE.read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & POSIX_ONLY and "filelock" in imported
    called = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and getattr(n.value, "id", "") == "os"}
    assert not called & POSIX_ONLY_CALLS


def test_one_holder_at_a_time_named_while_it_holds_and_empty_after(tmp_path):
    with OutputLock(tmp_path) as held:
        holder = json.loads((tmp_path / LOCK_NAME).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == platform.node() and held.took_over is None
        with pytest.raises(OutputBusy, match=rf"pid {os.getpid()} on host .*; wait for it to finish, pass --wait"):
            with OutputLock(tmp_path):
                pass
    assert (tmp_path / LOCK_NAME).read_text() == ""
    with OutputLock(tmp_path):  # released: the next run takes it at once
        pass


def test_waiting_gives_up_after_the_wait_and_says_how_long(tmp_path):
    with OutputLock(tmp_path):
        started = time.monotonic()
        with pytest.raises(OutputBusy, match=r"after waiting 0.3 s"):
            with OutputLock(tmp_path, wait_s=0.3, poll_s=0.05):
                pass
        assert time.monotonic() - started >= 0.3


def test_a_file_left_by_another_host_is_refused_with_advice(tmp_path):
    left = {"pid": 4242, "host": "another-machine", "since": "2025-01-01T00:00:00+0000"}
    (tmp_path / LOCK_NAME).write_text(json.dumps(left))
    with pytest.raises(OutputBusy, match=r"left by pid 4242 on host another-machine .*remove this file"):
        with OutputLock(tmp_path):
            pass
    (tmp_path / LOCK_NAME).unlink()  # as the advice says, once that run is known to be over
    with OutputLock(tmp_path) as lock:  # the refusal released the OS lock: nothing is stuck
        assert lock.took_over is None


def test_a_same_host_file_left_unlocked_is_taken_over(tmp_path):
    left = {"pid": 999_999, "host": platform.node(), "since": "2025-01-01T00:00:00+0000"}
    (tmp_path / LOCK_NAME).write_text(json.dumps(left))
    with OutputLock(tmp_path) as lock:
        assert lock.took_over == left
    assert (tmp_path / LOCK_NAME).read_text() == "" and OS_LOCK_NAME != LOCK_NAME
