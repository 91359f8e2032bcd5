"""One run holds an output folder: an OS lock for the whole run, and a file naming the holder's pid and host.

The OS lock is the `filelock` package's (flock on Linux and macOS, LockFileEx on Windows), taken on its own
file, `.crsbench.lock.os`, so a holder that dies, even by SIGKILL, releases it at once and the next run
takes it over. The holder is named in a second file, `.crsbench.lock`, which the lock never touches
(filelock truncates the file it locks on open, and Windows keeps other processes from reading a locked
byte): a second run reads it to say who holds the folder. A `.crsbench.lock` left by a process of another
host (whose OS lock a network file system may not carry) is refused with advice, since its liveness cannot
be checked here. Released cleanly, `.crsbench.lock` is left empty.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from filelock import FileLock, Timeout

from crsbench.errors import CRSBenchError

LOCK_NAME = ".crsbench.lock"  # who holds the folder (JSON: pid, host, since)
OS_LOCK_NAME = ".crsbench.lock.os"  # what the OS locks


class OutputBusy(CRSBenchError):
    """Another run holds the output folder."""

    exit_code = 2


def _holder(text: str) -> dict:
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return holder if isinstance(holder, dict) else {}


def describe(holder: dict) -> str:
    if not holder:
        return "another process"
    return f"pid {holder.get('pid')} on host {holder.get('host')} (since {holder.get('since')})"


def _read_holder(path: Path) -> dict:
    try:
        return _holder(path.read_text(errors="replace"))
    except FileNotFoundError:
        return {}


def _write(path: Path, text: str) -> None:
    """Replace the file's content in place (never a rename: a reader sees this file or nothing)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)  # pwrite is POSIX only
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class OutputLock:
    """`with OutputLock(folder, wait_s):` holds the folder for one run; waits up to `wait_s` seconds for
    another holder, then raises OutputBusy naming it."""

    def __init__(self, folder: str | Path, wait_s: float = 0.0, poll_s: float = 0.2):
        self.path = Path(folder) / LOCK_NAME
        self.wait_s = wait_s
        self.poll_s = poll_s
        self._lock = FileLock(str(Path(folder) / OS_LOCK_NAME))
        self.took_over: dict | None = None  # the dead holder whose lock this one replaced

    def __enter__(self) -> "OutputLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        while not self._try_acquire():
            if time.monotonic() >= deadline:
                waited = f" after waiting {self.wait_s:g} s" if self.wait_s else ""
                raise OutputBusy(
                    f"{self.path.parent}: another crsbench run holds this output ({describe(_read_holder(self.path))})"
                    f"{waited}; wait for it to finish, pass --wait SECONDS, or choose another output folder"
                )
            time.sleep(self.poll_s)
        return self

    def _try_acquire(self) -> bool:
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        previous = _read_holder(self.path)
        here = platform.node()
        if previous and previous.get("host") != here:
            self._lock.release()
            raise OutputBusy(
                f"{self.path}: left by {describe(previous)}, whose process cannot be checked from {here}; "
                "remove this file if that run is no longer running"
            )
        # same host and the OS lock was free: the holder is gone (a live one holds it; its pid may
        # have been reused since, so the pid is not consulted)
        self.took_over = previous or None
        holder = {"pid": os.getpid(), "host": here, "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            _write(self.path, json.dumps(holder))
        except BaseException:
            self._lock.release()
            raise
        return True

    def __exit__(self, *exc) -> None:
        if not self._lock.is_locked:
            return
        try:
            _write(self.path, "")  # empty: released cleanly, nobody to name
        finally:
            self._lock.release()
