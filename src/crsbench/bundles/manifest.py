"""What a results bundle is: its format and protocol versions, the names its files may have, the limits a
reader holds it to, and its manifest (every file's SHA-256 and size, and what the bundle holds).

The bundle's id is the SHA-256 of its manifest: the manifest names every other file by hash, so the id
addresses the whole content, and two bundles of the same results have the same id and the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

FORMAT = "crsbench-bundle"
FORMAT_VERSION = 1
# What a record measures and how scores are made from it (metric conventions, split rule, perturbation
# definitions, axes). Bundles of different protocol versions are not compared unless --allow protocol.
PROTOCOL_VERSION = "crs-bench-1"
MANIFEST = "manifest.json"

# member names: relative, lower-risk characters only, no `..`, no absolute or drive paths
MEMBER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,120}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,120}){0,3}$")


@dataclass(frozen=True)
class Limits:
    """What a reader accepts, each bound checked before the work it bounds (docs/bundles.md, "Bounds"):
    the zip's directory before it is read, a table's row counts and value counts from its Parquet footer
    before any column is read, a setting a bundle carries before it sizes an allocation. The published
    shape (17 encoders, 15,640 records, about 400 MB) sits far inside each. A trusted source may raise
    any of them (`with_overrides`, or CRSBENCH_BUNDLE_LIMITS)."""

    members: int = 4_096  # 8 files and 2 per test set; central-directory entries are counted before it is read
    member_bytes: int = 2 << 30  # one file, uncompressed
    total_bytes: int = 4 << 30  # all files, uncompressed (the published shape: 449 MB)
    ratio: float = 200.0  # uncompressed / compressed, for members above a megabyte
    whole_ratio: float = 20.0  # uncompressed / file size, for bundles above 64 MiB uncompressed (float32 barely compresses)
    json_bytes: int = 8 << 20  # a JSON member (parsed whole: Python objects take several times its bytes)
    json_depth: int = 32  # nesting of any JSON value (a bundle's own JSON nests 6 deep; Python's parser recurses)
    text_chars: int = 4_096  # any string in the JSON (a spec's notes are a paragraph)
    name_chars: int = 200  # an encoder label, task or suite name (names print in every table)
    table_bytes: int = 1 << 30  # a table other than the vectors, decoded whole: its footer's declared size
    records: int = 1_000_000  # rows of records.parquet (the published store: 15,640)
    cases: int = 1_000_000  # cases of one test set (the largest published: 20,000)
    classes: int = 1_000  # probabilities per case of one vector (the published tasks: 5 and 8)
    vector_values: int = 20_000_000  # n x k of one vector (80 MB of float32; the largest published: 100,000)
    group_values: int = 16_000_000  # floats in one row group of vectors (the writer puts 4 million)
    encoders: int = 64  # encoder labels per bundle: the bootstrap holds encoders x draws arrays
    tasks: int = 64  # tasks per bundle
    cohort_encoders: int = 256  # encoder labels of all the sources compared together (a repository's leaderboard)
    attributes: int = 32  # subgroup attributes of one test set (the data sets read today carry at most 3)
    subgroups: int = 1_000  # distinct values of one attribute (CheXpert's age bands: 10)
    n_weight_draws: int = 10_000  # the bundle's `crs: n_weight_draws` is capped here (the default is 1,000)
    n_boot: int = 100_000  # the bundle's `crs: n_boot` is capped here (commands pass their own --n-boot)
    memory_bytes: int = 32 << 20  # probability vectors held in memory; past it, memory-mapped from a temporary file
    accept_confusable_names: bool = False  # names alike up to confusables accepted (and flagged), for a trusted source

    def with_overrides(self, text: str) -> "Limits":
        """These limits with `name=value,...` applied (e.g. `total_bytes=17179869184,encoders=500`)."""
        from dataclasses import fields, replace

        kinds = {f.name: type(getattr(self, f.name)) for f in fields(self)}
        changes: dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, value = item.partition("=")
            name = name.strip()
            if name not in kinds:
                raise ValueError(f"bundle limit {name!r} is not one of {', '.join(kinds)}")
            try:
                changes[name] = value.strip().lower() in ("1", "true", "yes") if kinds[name] is bool else kinds[name](value)
            except ValueError:
                raise ValueError(f"bundle limit {name}: {value.strip()!r} is not a number") from None
        return replace(self, **changes)


def reader_limits() -> "Limits":
    """The default limits, raised where CRSBENCH_BUNDLE_LIMITS says so (a trusted source)."""
    import os

    text = os.environ.get(LIMITS_VARIABLE, "")
    return DEFAULT_LIMITS.with_overrides(text) if text else DEFAULT_LIMITS


LIMITS_VARIABLE = "CRSBENCH_BUNDLE_LIMITS"
DEFAULT_LIMITS = Limits()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def json_bytes(value: Any) -> bytes:
    """Canonical JSON: sorted keys, fixed separators, UTF-8, one trailing newline (byte-stable)."""
    return (json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def manifest_value(files: dict[str, bytes], contents: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    """The manifest of `files` (name -> bytes, the manifest itself aside)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **facts,
        "contents": contents,
        "files": {name: {"sha256": sha256_hex(data), "bytes": len(data)} for name, data in sorted(files.items())},
    }


def bundle_id(manifest: bytes) -> str:
    return sha256_hex(manifest)
