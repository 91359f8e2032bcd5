"""Containment: every image path a CSV names must lie inside the dataset's folder.

A labels CSV is data, not trusted configuration: a row naming `../../etc/passwd`, an absolute path, the
image of a sibling folder, or a symbolic link that leads out of the folder would otherwise be opened
and trained on. Every reader checks its paths here, and the error names the CSV line.

Two checks, both against the folder with its own symbolic links resolved (so a dataset folder that is
itself a link, or lives on another disk, is fine):

- `lexical`: the path as written, normalised, without touching the disk (cheap enough for 400k rows);
- `resolved`: the file's real path, every symbolic link followed (one `realpath` per file).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from crsbench.errors import DataError

Where = Callable[[int], str]  # entry index -> "<csv> line <n>", for error messages


def real_folder(folder: Path | str) -> str:
    return os.path.realpath(os.fspath(folder))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


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
    real = real_folder(folder)
    given = os.path.normpath(os.path.abspath(os.fspath(folder)))
    for index, path in enumerate(files):
        lexical = os.path.normpath(os.path.abspath(path))
        if not (_inside(lexical, given) or _inside(lexical, real)):
            shown = written[index] if written is not None else path
            raise DataError(f"{where(index)}: image path {shown!r} is outside the dataset folder {folder}")
        if resolve:
            target = os.path.realpath(path)
            if not _inside(target, real):
                shown = written[index] if written is not None else path
                raise DataError(
                    f"{where(index)}: image path {shown!r} leads through a symbolic link to {target}, outside the"
                    f" dataset folder {folder}"
                )
