"""One run holds an output folder: a lock file naming the holder's pid and host.

The file is held with an OS lock (flock) for the whole run, so a holder that dies, even by SIGKILL,
releases it at once and the next run takes it over. The pid and host written into it name the holder
in the message a second run prints; a file left by a dead process of another host (whose OS lock a
network file system may not carry) is refused with advice, since its liveness cannot be checked here.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import time
from pathlib import Path

from crsbench.errors import CRSBenchError

LOCK_NAME = ".crsbench.lock"


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


class OutputLock:
    """`with OutputLock(folder, wait_s):` holds the folder for one run; waits up to `wait_s` seconds for
    another holder, then raises OutputBusy naming it."""

    def __init__(self, folder: str | Path, wait_s: float = 0.0, poll_s: float = 0.2):
        self.path = Path(folder) / LOCK_NAME
        self.wait_s = wait_s
        self.poll_s = poll_s
        self._fd: int | None = None
        self.took_over: dict | None = None  # the dead holder whose lock this one replaced

    def __enter__(self) -> "OutputLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        while not self._try_acquire():
            if time.monotonic() >= deadline:
                holder = _holder(self.path.read_text(errors="replace")) if self.path.exists() else {}
                waited = f" after waiting {self.wait_s:g} s" if self.wait_s else ""
                raise OutputBusy(
                    f"{self.path.parent}: another crsbench run holds this output ({describe(holder)}){waited}; "
                    "wait for it to finish, pass --wait SECONDS, or choose another output folder"
                )
            time.sleep(self.poll_s)
        return self

    def _try_acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        previous = _holder(os.pread(fd, 4096, 0).decode(errors="replace"))
        here = platform.node()
        if previous and previous.get("host") != here:
            os.close(fd)
            raise OutputBusy(
                f"{self.path}: left by {describe(previous)}, whose process cannot be checked from {here}; "
                "remove this file if that run is no longer running"
            )
        # same host and the OS lock was free: the holder is gone (a live one holds it; its pid may
        # have been reused since, so the pid is not consulted)
        self.took_over = previous or None
        holder = {"pid": os.getpid(), "host": here, "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return True

    def __exit__(self, *exc) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)  # empty: released cleanly, nobody to name
        os.close(self._fd)
        self._fd = None
