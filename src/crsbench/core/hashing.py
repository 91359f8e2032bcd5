"""The content hash every key of the project is made with (datasets, encoders, probes, plans, records)."""

from __future__ import annotations

import hashlib


def sha256_of(*parts: bytes | str) -> str:
    """SHA-256 of the parts, each followed by a NUL byte, so ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\x00")
    return digest.hexdigest()
