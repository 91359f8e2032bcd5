"""A results repository: a folder of bundles, one per submission (in folders of their own or side by
side), read as the sources of one leaderboard. No bundle is skipped silently: one that cannot be read
or is not comparable with those before it is refused with its one-line reason, and the rest are scored.

The order is the bundles' paths inside the folder, sorted, so the same folder gives the same cohort,
the same refusals and the same page bytes wherever it is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from crsbench.bundles.compare import NotComparable, comparable
from crsbench.bundles.content import Bundle, from_results
from crsbench.bundles.read import BundleError, read_bundle
from crsbench.errors import DataError
from crsbench.results.store import database_path

SUFFIX = ".crsb"


@dataclass(frozen=True)
class Refusal:
    source: str  # the bundle's path inside the repository (or as given)
    reason: str  # one line


@dataclass
class Gathered:
    bundles: list[Bundle]
    refused: list[Refusal] = field(default_factory=list)


def is_results_folder(path: Path) -> bool:
    return path.suffix == ".sqlite" or (path.is_dir() and database_path(path).is_file())


def repository_bundles(folder: Path) -> list[Path]:
    """Every bundle file under `folder`, by its path inside it."""
    return sorted((p for p in folder.rglob(f"*{SUFFIX}") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())


def _one_line(error: Exception) -> str:
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip())


def gather(sources: Sequence[str | Path], allow: Sequence[str] = ()) -> Gathered:
    """The readable, comparable bundles of `sources` (bundle files, results folders, repository folders)
    and each refused one with its reason. A bundle named on its own that cannot be read still fails the
    call: only a repository's members are refused and passed over."""
    out = Gathered([])
    for source in map(Path, sources):
        if source.is_dir() and not is_results_folder(source):
            found = repository_bundles(source)
            if not found:
                raise DataError(f"{source}: no {SUFFIX} bundle in this folder and not a results folder")
            for path in found:
                name = f"{source.name}/{path.relative_to(source).as_posix()}"
                try:
                    bundle = read_bundle(path)
                except BundleError as exc:  # the reason without the path: the page is the same wherever the folder is
                    out.refused.append(Refusal(name, _one_line(exc).removeprefix(f"{path}: ")))
                    continue
                bundle.source = name
                _admit(out, bundle, allow)
        else:
            bundle = from_results(source, with_subgroups=True) if is_results_folder(source) else read_bundle(source)
            comparable([*out.bundles, bundle], allow)  # a source named on its own is never passed over
            out.bundles.append(bundle)
    if not out.bundles:
        raise DataError("no bundle could be read: " + "; ".join(f"{r.source}: {r.reason}" for r in out.refused))
    return out


def _admit(out: Gathered, bundle: Bundle, allow: Sequence[str]) -> None:
    try:
        comparable([*out.bundles, bundle], allow)
    except NotComparable as exc:
        out.refused.append(Refusal(bundle.source, _one_line(exc)))
        return
    out.bundles.append(bundle)
