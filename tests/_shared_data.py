"""The real data beside the repository (../shared/data): tests that read it skip, saying why, where it is absent.

A module of its own rather than conftest, so that test files import it by one unambiguous name (a
second conftest.py below tests/ would otherwise answer an import of conftest)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_file(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    return path
