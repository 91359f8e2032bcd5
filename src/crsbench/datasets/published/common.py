"""Machinery shared by the published-dataset adapters.

- finding the dataset root (an explicit `root`, else an environment variable) and its official files;
- reading the official CSVs strictly (every value kept as text, blanks kept as "");
- counting every row that is left out, by reason (`dropped`), so nothing disappears silently;
- the missing-image policy (fail, or drop and count);
- fixed splits: drawn once, written to a split file with a checksum of the source listing, and read back
  by every later run, so every encoder and every run sees the same splits (`fixed_splits`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from crsbench.core.atomic import atomic_write
from crsbench.core.hashing import sha256_of
from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.base import DatasetMeta, file_sha256
from crsbench.datasets.image_files import FileSplits, RowPlaces, load_image
from crsbench.datasets.kind import DatasetKind, FileKindOptions, MaxSide, Number, PathLike
from crsbench.datasets.labels import refuse_repeated_columns
from crsbench.datasets.paths import check_contained
from crsbench.datasets.subgroups import AttributeSpec, attribute_values
from crsbench.errors import DataError

SHOWN = 5  # how many offending names an error message lists
MISSING_POLICIES = ("fail", "drop")
SPLIT_FILE_FORMAT = 1
SPLITS_FOLDER = ".crsbench-splits"  # under the dataset root, when it is writable
_UNEXPANDED_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


# ----- roots and files


def resolve_root(root: str | Path | None, env_var: str, title: str) -> Path:
    """The dataset folder: `root` when given, else `$env_var`; a clear error when neither points at a folder."""
    if root is None or str(root).strip() == "":
        root = os.environ.get(env_var, "")
        if not root.strip():
            raise DataError(f"{title}: no dataset folder given; pass `root` (suite option) or set ${env_var}")
    text = str(root)
    unexpanded = _UNEXPANDED_VARIABLE.search(text)
    if unexpanded:  # the suite loader leaves ${VAR} as is when VAR is unset
        raise DataError(f"{title}: root {text!r} uses ${unexpanded.group(1)}, which is not set; set it to the dataset folder")
    path = Path(text).expanduser()
    if not path.is_dir():
        raise DataError(f"{title}: dataset folder not found: {path}")
    return path


def find_file(folder: Path, names: Sequence[str], title: str) -> Path:
    """The first of `names` that exists in `folder` (official files ship as .csv or .csv.gz)."""
    for name in names:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise DataError(f"{title}: {names[0]} not found in {folder} (looked for {', '.join(names)})")


def explicit_file(path: str | Path, title: str) -> Path:
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"{title}: CSV not found: {path}")
    return path


def read_table(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    """The CSV as text (blank cells stay ""), with `columns` required; .gz files are read transparently."""
    text = dict(dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8-sig")
    try:
        # the header as written: pandas renames a repeated column (`label.1`), which would hide it
        refuse_repeated_columns(path, pd.read_csv(path, header=None, nrows=1, **text).iloc[0].tolist())
        frame = pd.read_csv(path, **text)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: empty file, expected a header row") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, pd.errors.ParserError) as error:
        raise DataError(f"{path}: not a readable CSV ({error})") from error
    frame.columns = [str(c).strip() for c in frame.columns]
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise DataError(f"{path}: missing column(s) {', '.join(absent)} (columns: {', '.join(frame.columns)})")
    if frame.empty:
        raise DataError(f"{path}: no data rows")
    return frame


def csv_line(position: int) -> int:
    """The CSV line of the row at `position` (header = line 1), for error messages."""
    return int(position) + 2


def release_attributes(table: pd.DataFrame, specs: Sequence[AttributeSpec], path: Path) -> dict[str, np.ndarray]:
    """Patient attributes from a release CSV's own columns, those of `specs` it has (datasets.subgroups): rows
    in `table`'s order, its index the row's position in the CSV (for the line an unreadable age is named by).
    A release's "Unknown" is the UNKNOWN subgroup, like a blank. Never part of a fingerprint."""
    out = {}
    for spec in specs:
        if spec.column not in table.columns:
            continue
        raw = table[spec.column].astype(str).str.strip().replace({"Unknown": ""}).tolist()
        out[spec.name] = attribute_values(raw, spec, f"{path} column '{spec.column}'",
                                          lambda i: f"line {csv_line(table.index[i])}")
    return out


def listed(names: Iterable[Any]) -> str:
    names = [str(n) for n in names]
    return ", ".join(names[:SHOWN]) + (", ..." if len(names) > SHOWN else "")


def check_unique(values: pd.Series, path: Path, column: str) -> None:
    repeated = sorted(set(values[values.duplicated(keep=False)]))
    if repeated:
        raise DataError(f"{path}: {len(repeated)} ids listed more than once in column '{column}': {listed(repeated)}")


def check_allowed(values: pd.Series, allowed: Iterable[str], path: Path, column: str) -> None:
    """Every value of `column` is one of `allowed`; otherwise name the first offending line and value."""
    allowed = set(allowed)
    bad = np.flatnonzero(~values.isin(allowed).to_numpy())
    if len(bad):
        first = bad[0]  # the index is the row's position in the CSV, also after rows were filtered out
        raise DataError(
            f"{path} line {csv_line(values.index[first])}: unknown value {values.iloc[first]!r} in column '{column}'"
            f" ({len(bad)} rows; expected one of {', '.join(sorted(allowed)) or '(none)'})"
        )


# ----- drop accounting and missing images


def count_drop(dropped: dict[str, int], reason: str, n: int) -> None:
    if n:
        dropped[reason] = dropped.get(reason, 0) + int(n)


def apply_missing_policy(
    files: Sequence[str], ids: Sequence[str], policy: str, where: Callable[[int], str], dropped: dict[str, int]
) -> np.ndarray:
    """A keep-mask: all True, or False for missing files when the policy is 'drop' (counted).

    `where(i)` names entry i's CSV and line, so the error points at the row listing the first missing image.
    """
    missing = np.array([not os.path.isfile(f) for f in files], dtype=bool)
    if missing.any() and policy == "fail":
        positions = np.flatnonzero(missing)
        names = [ids[i] for i in positions]
        raise DataError(
            f"{where(int(positions[0]))}: {len(names)} listed images not found: {listed(names)} (first:"
            f" {files[positions[0]]}; fix the copy, or pass missing: drop to leave them out and count them)"
        )
    count_drop(dropped, "missing_image", int(missing.sum()))
    return ~missing


# ----- fixed splits


def source_checksum(csv_paths: Sequence[Path], ids: Sequence[str]) -> str:
    """What the splits were drawn from: the official CSV bytes plus the sorted ids of the kept images."""
    return sha256_of(*[file_sha256(p) for p in csv_paths], "\n".join(sorted(map(str, ids))))


def cache_splits_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "crsbench" / "splits"


def options_hash(options: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()[:12]


def split_file_candidates(root: Path, dataset: str, options: dict[str, Any]) -> list[Path]:
    """Where a split file lives, in the order tried: under the root, else in the user cache.

    The cache name also carries a hash of the resolved root, so two copies of a dataset do not share
    (and falsely invalidate) one split file.
    """
    name = f"{dataset}-{options_hash(options)}"
    root_tag = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]
    return [root / SPLITS_FOLDER / f"{name}.json.gz", cache_splits_folder() / f"{name}-{root_tag}.json.gz"]


def fixed_splits(
    dataset: str,
    root: Path,
    options: dict[str, Any],
    checksum: str,
    ids: np.ndarray,
    draw: Callable[[], np.ndarray],
    resplit: bool = False,
) -> tuple[np.ndarray, Path]:
    """The split of each id: read from the split file when there is one, else drawn once and written."""
    candidates = split_file_candidates(root, dataset, options)
    if not resplit:
        for path in candidates:
            if path.is_file():
                return _read_split_file(path, dataset, checksum, ids), path
    assignment = np.asarray(draw()).astype(str)
    payload = {
        "format": SPLIT_FILE_FORMAT,
        "dataset": dataset,
        "options": options,
        "source_checksum": checksum,
        "splits": {name: sorted(ids[assignment == name].tolist()) for name in SPLITS},
    }
    return assignment, _write_split_file(candidates, payload)


def _read_split_file(path: Path, dataset: str, checksum: str, ids: np.ndarray) -> np.ndarray:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            payload = json.load(handle)
        stored = payload["source_checksum"]
        lookup = {image_id: name for name in SPLITS for image_id in payload["splits"][name]}
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError) as error:
        raise DataError(f"{dataset}: split file {path} is unreadable ({error}); delete it or pass resplit: true") from error
    if stored != checksum:
        raise DataError(
            f"{dataset}: the source changed since the splits were fixed in {path} (listing checksum"
            f" {stored[:12]}, now {checksum[:12]}); pass resplit: true (or --resplit) to draw new splits,"
            " which makes earlier results incomparable"
        )
    try:
        return np.array([lookup[i] for i in ids.tolist()])
    except KeyError as error:  # same checksum but an id absent: the file was edited by hand
        raise DataError(f"{dataset}: split file {path} lacks id {error}; delete it or pass resplit: true") from None


def _write_split_file(candidates: list[Path], payload: dict) -> Path:
    errors = []
    for path in candidates:  # a user's dataset folder may be read-only: fall back to the cache
        try:
            atomic_write(path, lambda out: _write_gzip_json(out, payload))  # a reader never sees half a file
            return path
        except OSError as error:
            errors.append(f"{path.parent}: {error.strerror or error}")
    raise DataError(f"{payload['dataset']}: cannot write the split file ({'; '.join(errors)})")


def _write_gzip_json(out, payload: dict) -> None:
    # compresslevel 1: fast, and the ids compress well anyway; no file name in the header (it would be the
    # temporary file's)
    with gzip.GzipFile(filename="", mode="wb", compresslevel=1, fileobj=out) as handle:
        handle.write(json.dumps(payload).encode())


# ----- the dataset built from a listing


@dataclass
class Listing:
    """What an adapter read from the official files: one entry per kept image, before splitting."""

    ids: np.ndarray
    files: list[str]  # plain strings: building 200k Path objects up front costs seconds
    labels: np.ndarray
    groups: np.ndarray
    sources: tuple[Path, ...]  # the CSVs whose bytes go into the source checksum
    official_split: np.ndarray | None = None  # a release's own split, else drawn here
    strata: np.ndarray | None = None  # what the drawn split is stratified on, when not `labels`
    dropped: dict[str, int] = field(default_factory=dict)
    image_folder: Path | None = None  # every file must lie inside it (None: the dataset root)
    lines: np.ndarray | None = None  # the CSV line that listed each entry, for error messages
    line_sources: np.ndarray | None = None  # index into `sources` of that CSV (None: sources[0])
    # attribute -> subgroup per entry (datasets.subgroups): read where the release carries them, never in the
    # fingerprint
    attributes: dict[str, np.ndarray] = field(default_factory=dict)

    def where(self, i: int) -> str:
        """`<csv> line <n>` of entry i (the CSV alone when lines are unknown)."""
        source = self.sources[0 if self.line_sources is None else int(self.line_sources[i])]
        return f"{source}" if self.lines is None else f"{source} line {int(self.lines[i])}"

    def places(self) -> RowPlaces | None:
        """Each entry's CSV line, for the errors of reading its image; None when lines are unknown."""
        return None if self.lines is None else RowPlaces(self.sources, self.lines, self.line_sources)

    def keep(self, mask: np.ndarray) -> "Listing":
        kept = np.flatnonzero(mask)
        return Listing(
            ids=self.ids[kept],
            files=[self.files[i] for i in kept],
            labels=self.labels[kept],
            groups=self.groups[kept],
            sources=self.sources,
            official_split=None if self.official_split is None else self.official_split[kept],
            strata=None if self.strata is None else self.strata[kept],
            dropped=self.dropped,
            image_folder=self.image_folder,
            lines=None if self.lines is None else self.lines[kept],
            line_sources=None if self.line_sources is None else self.line_sources[kept],
            attributes={name: values[kept] for name, values in self.attributes.items()},
        )


class PublishedOptions(FileKindOptions):
    """Options every published dataset takes: where it is, how images are decoded, what happens to missing
    images, and whether the fixed splits are drawn again."""

    root: Optional[PathLike] = None
    max_side: MaxSide = None
    missing: str = "fail"
    check_images: bool = True
    resplit: bool = False

    def drawn_split(self) -> tuple[list, int]:
        """The fractions and seed of the split drawn once; none for a release with its own split."""
        return [], 0


class DrawnSplitOptions(PublishedOptions):
    """For releases without an official split: the fractions and seed of the split drawn once."""

    fractions: list[Number] = [0.7, 0.1, 0.2]
    split_seed: int = 0

    def drawn_split(self) -> tuple[list, int]:
        return list(self.fractions), self.split_seed


class PublishedDataset(FileSplits, DatasetKind):
    """A dataset read from an official release; subclasses read the release into a `Listing` (`_build`)."""

    meta: DatasetMeta
    options: PublishedOptions

    def _finish(self, root: Path, listing: Listing, meta: DatasetMeta, split_options: dict, label_options=None) -> None:
        """Checks the images (when asked), fixes the splits and keeps what `split()` needs.

        `split_options` name the split file (they change the splits; the drawn split's fractions and seed
        are added); `label_options` change only the labels (e.g. the uncertainty policy), so they enter the
        fingerprint but share one split file.
        """
        o = self.options
        self.root = root
        self.meta = meta
        self.dropped: dict[str, int] = listing.dropped
        if o.missing not in MISSING_POLICIES:
            raise DataError(f"{meta.name}: missing must be one of {', '.join(MISSING_POLICIES)}, got {o.missing!r}")
        # every path comes from a CSV: it must lie inside the release (symbolic links followed when the
        # files are stat'ed anyway, and again for each image when it is decoded)
        self.image_folder = Path(listing.image_folder or root)
        check_contained(self.image_folder, listing.files, listing.where, resolve=o.check_images)
        if o.check_images:
            listing = listing.keep(apply_missing_policy(listing.files, listing.ids, o.missing, listing.where, self.dropped))
        if len(listing.ids) == 0:
            raise DataError(f"{meta.name}: no images left under {root} (dropped: {self.dropped})")
        self.ids, self.files, self.labels, self.groups = listing.ids, listing.files, listing.labels, listing.groups
        self.attributes = dict(listing.attributes)
        self.places = listing.places()
        fractions, split_seed = o.drawn_split()
        self.split_options = {**split_options, "fractions": fractions, "split_seed": split_seed}
        self.source_checksum = source_checksum(listing.sources, self.ids)
        self.assignment, self.split_file = fixed_splits(
            meta.name, root, self.split_options, self.source_checksum, self.ids,
            lambda: listing.official_split if listing.official_split is not None else self._draw(listing),
            resplit=o.resplit,
        )  # fmt: skip
        self.label_options = dict(label_options or {})
        self._fingerprint = sha256_of(
            self.source_checksum, json.dumps([self.split_options, self.label_options], sort_keys=True),
            str(self.max_side), "\n".join(self.assignment.tolist()),
        )  # fmt: skip

    def _draw(self, listing: Listing) -> np.ndarray:
        from crsbench.datasets.splits import grouped_stratified_split

        strata = listing.strata if listing.strata is not None else listing.labels
        fractions, split_seed = self.options.drawn_split()
        try:
            return grouped_stratified_split(strata, listing.groups, tuple(fractions), split_seed)
        except ValueError as error:
            raise DataError(f"{self.meta.name}: cannot split ({error})") from error

    # ----- the Dataset protocol

    def fingerprint(self) -> str:
        return self._fingerprint

    # ----- reporting

    def split_sizes(self) -> dict[str, int]:
        return {name: int((self.assignment == name).sum()) for name in SPLITS}

    def class_counts(self) -> pd.DataFrame:
        """Images per class (single-label) or positives per label (multi-label), by split, with a total."""
        columns = {name: _per_class(self.labels[self.assignment == name], self.meta.n_classes) for name in SPLITS}
        frame = pd.DataFrame(columns, index=list(self.meta.class_names))
        frame["total"] = frame.sum(axis=1)
        return frame

    def masked_counts(self) -> pd.DataFrame | None:
        """Masked (U-Ignore) entries per label and split; None for single-label datasets."""
        if self.labels.ndim != 2:
            return None
        columns = {name: np.isnan(self.labels[self.assignment == name]).sum(axis=0) for name in SPLITS}
        frame = pd.DataFrame(columns, index=list(self.meta.class_names))
        frame["total"] = frame.sum(axis=1)
        return frame

    def unreadable_images(self, limit: int | None = None) -> list[tuple[str, str]]:
        """(id, reason) for images that cannot be decoded; decodes every image, so it is slow on big sets."""
        bad = []
        for i, (image_id, path) in enumerate(zip(self.ids.tolist(), self.files)):
            try:
                load_image(Path(path), 8)  # small: a JPEG decodes at its coarsest scale
            except DataError as error:
                bad.append((image_id, str(error) if self.places is None else f"{self.places[i]}: {error}"))
                if limit is not None and len(bad) >= limit:
                    break
        return bad


def _per_class(labels: np.ndarray, n_classes: int) -> np.ndarray:
    if labels.ndim == 2:
        return np.nansum(labels, axis=0).astype(np.int64)
    return np.bincount(labels, minlength=n_classes)
