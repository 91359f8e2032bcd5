"""How every `crsbench` command reports a user error: one line on stderr, then the error's exit code.

Every command is wrapped in `handled`, so a given error reads the same whichever command hit it.
Environment faults (a read-only or full disk, a file that vanished, a locked or damaged database) are
user errors too: one line naming the file and what to do, exit 2. Anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations

import errno
import functools
import sqlite3
from typing import Callable, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from crsbench.core.printable import printable
from crsbench.errors import CRSBenchError

F = TypeVar("F", bound=Callable)

# ValueError is what the scoring functions raise for settings or records they cannot use
# (unknown reference, weights, too few records): a user error, reported like the others.
VALUE_ERROR_EXIT = 2
ENVIRONMENT_EXIT = 2

# errno -> what a user can do; an OSError with another errno is not the environment's fault
OS_ADVICE: dict[int, str] = {
    errno.EROFS: "the file system is read-only; choose another folder (--output, --out or --cache-dir)",
    errno.EACCES: "permission denied; make it writable/readable or choose another folder",
    errno.EPERM: "operation not permitted; make it writable or choose another folder",
    errno.ENOSPC: "the disk is full; free space or choose another folder (stored records are intact)",
    errno.EDQUOT: "the disk quota is exceeded; free space or choose another folder (stored records are intact)",
    errno.EFBIG: "the file size limit is reached; raise the limit or choose another folder",
    errno.ENOENT: "no such file or folder; check the path",
    errno.ENOTDIR: "a file stands where a folder is expected; move it or choose another folder",
    errno.EISDIR: "a folder stands where a file is expected; check the path",
    errno.EEXIST: "a file of that name is in the way; move it or choose another folder",
    errno.EIO: "the device reported an I/O error; check the disk",
    errno.EMFILE: "too many open files; raise the limit (ulimit -n)",
}


def environment_message(error: OSError) -> str | None:
    """One line for an OSError a user can act on, naming the file; None for anything else."""
    advice = OS_ADVICE.get(error.errno or -1)
    if advice is None:
        return None
    where = error.filename if error.filename is not None else "(unnamed file)"
    return f"{where}: {error.strerror or error}: {advice}"


def fail(error: Exception, code: int | None = None) -> None:
    if code is None:
        code = error.exit_code if isinstance(error, CRSBenchError) else VALUE_ERROR_EXIT
    # one line, every control or invisible character of the user text it quotes shown as an escape, as on stdout
    message = printable(" ".join(line.strip() for line in str(error).splitlines() if line.strip()))
    # Text, not markup: messages quote user text and install hints such as crsbench[zoo]
    Console(stderr=True).print(Text("error: ", style="bold red") + Text(message), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def handled(command: F) -> F:
    """The one error handler of the CLI: a user error becomes one line and its exit code, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (CRSBenchError, ValueError) as error:
            fail(error)
        except OSError as error:
            message = environment_message(error)
            if message is None:
                raise
            fail(OSError(message), ENVIRONMENT_EXIT)
        except sqlite3.OperationalError as error:  # one the store did not name: still the environment's
            fail(error, ENVIRONMENT_EXIT)

    return wrapper  # type: ignore[return-value]
