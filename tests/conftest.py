from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_file(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    return path


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory, monkeypatch):
    """No test reads or writes the user's caches, and none can find data by accident."""
    root = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    monkeypatch.delenv("CRSBENCH_DATA", raising=False)
    monkeypatch.delenv("CRSBENCH_CACHE", raising=False)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
