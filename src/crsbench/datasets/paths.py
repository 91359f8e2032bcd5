"""Containment: every image path a CSV names must lie inside the dataset's folder.

A labels CSV is data, not trusted configuration: a row naming `../../etc/passwd`, an absolute path, the
image of a sibling folder, or a symbolic link that leads out of the folder would otherwise be opened
and trained on. Every reader checks its paths here, and the error names the CSV line.

Two checks, both against the folder with its own symbolic links resolved (so a dataset folder that is
itself a link, or lives on another disk, is fine):

- `lexical`: the path as written, normalised, without touching the disk (cheap enough for 400k rows);
- `resolved`: each folder on the way, from the top down (once per folder), then the file's real path, every
  symbolic link followed: a sub-folder that is a link leading out is refused before anything under it is
  stat'ed.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Callable, Sequence

from crsbench.errors import DataError

Where = Callable[[int], str]  # entry index -> "<csv> line <n>", for error messages
Place = Callable[[], str]  # "<csv> line <n>" of one entry, made only when an error needs it


def real_folder(folder: Path | str) -> str:
    return os.path.realpath(os.fspath(folder))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Containment:
    """The checks against one dataset folder. Each sub-folder a path passes through is resolved once, from the
    top down, so a folder that is a link leading out is refused before any file under it is stat'ed."""

    def __init__(self, folder: Path | str):
        self.folder = folder
        self.real = real_folder(folder)
        self.given = os.path.normpath(os.path.abspath(os.fspath(folder)))
        self._prefix = os.fspath(folder).rstrip(os.sep) + os.sep
        self._checked: set[str] = set()  # sub-folders already known to lie inside

    def lexical(self, path: str, shown: str, where: Place) -> None:
        normal = os.path.normpath(os.path.abspath(path))
        if not (_inside(normal, self.given) or _inside(normal, self.real)):
            raise DataError(f"{where()}: image path {shown!r} is outside the dataset folder {self.folder}")

    def folders(self, path: str, shown: str, where: Place) -> None:
        """Every folder between the dataset folder and `path`, symbolic links followed, lies inside it."""
        if not path.startswith(self._prefix):
            return  # not built under the folder as given: `resolved` still checks the file itself
        folder = self._prefix
        for part in path[len(self._prefix):].split(os.sep)[:-1]:
            folder = os.path.join(folder, part)
            if folder not in self._checked:
                self._refuse_outside(os.path.realpath(folder), shown, where)
                self._checked.add(folder)

    def resolved(self, path: str, shown: str, where: Place) -> None:
        """The file's real path, every symbolic link followed, lies inside the folder."""
        self.folders(path, shown, where)
        self._refuse_outside(os.path.realpath(path), shown, where)

    def _refuse_outside(self, target: str, shown: str, where: Place) -> None:
        if not _inside(target, self.real):
            raise DataError(f"{where()}: image path {shown!r} leads through a symbolic link to {target}, outside the"
                            f" dataset folder {self.folder}")


def contained(folder: Path | str, written: str, where: str, *, resolve: bool = True) -> Path:
    """`folder / written` when it lies inside `folder`; else a one-line DataError naming `where`."""
    if os.path.isabs(written):
        raise DataError(f"{where}: image path {written!r} is absolute; paths must be relative to {folder}")
    path = os.path.join(os.fspath(folder), written)
    check_contained(folder, [path], lambda _: where, resolve=resolve, written=[written])
    return Path(path)


def check_contained(
    folder: Path | str, files: Sequence[str], where: Where, *, resolve: bool, written: Sequence[str] | None = None
) -> None:
    """Every file (a path built from a CSV value under `folder`) lies inside `folder`; else name the first
    bad row. `written`: the values as the CSV has them, for the message (default: the built paths)."""
    guard = Containment(folder)
    for index, path in enumerate(files):
        shown = written[index] if written is not None else path
        place = functools.partial(where, index)
        guard.lexical(path, shown, place)
        if resolve:
            guard.resolved(path, shown, place)
