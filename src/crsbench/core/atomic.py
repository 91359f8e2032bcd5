"""Crash-safe file writes: a temporary file in the same folder, fsynced, renamed onto the target, and the
rename made durable. A kill leaves the old file or the new one, never half of one; the temporary file's
name carries the writer's host and pid, so an orphan can be told from a live write. The file gets the mode the
user's umask gives a plain `open` (0644 under 022): `mkstemp` alone would leave it owner-only, and files written
here (bundles, pages, predictions, the cache) are meant to be shared."""

from __future__ import annotations

import os
import platform
import tempfile
import threading
from pathlib import Path
from typing import Callable


def temporary_prefix(path: Path) -> str:
    return f"{path.name}.{platform.node()}.{os.getpid()}."


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask. Linux states it in /proc; elsewhere it can only be read by setting it, so the
    set-and-restore is done under a lock (threads of one process share it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable) -> None:
    """`write(file)` fills the file; errors name `path` (numpy and file objects raise without one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path), suffix=".tmp")
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path.parent)) from None
    try:
        if hasattr(os, "fchmod"):  # absent on Windows, where mkstemp's mode is not owner-only anyway
            os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)
