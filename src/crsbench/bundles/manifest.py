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
    """What a reader accepts before it reads a byte of content (a zip bomb or a huge member is refused)."""

    members: int = 100_000
    member_bytes: int = 8 << 30  # one file, uncompressed
    total_bytes: int = 32 << 30  # all files, uncompressed
    json_bytes: int = 64 << 20  # a JSON member (parsed whole)
    memory_bytes: int = 32 << 20  # probability vectors held in memory; past it, memory-mapped from a temporary file
    json_depth: int = 32  # nesting of any JSON value (a bundle's own JSON nests 6 deep; Python's parser recurses)
    ratio: float = 200.0  # uncompressed / compressed, for members above a megabyte


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
