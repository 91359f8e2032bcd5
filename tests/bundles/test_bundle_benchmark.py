"""The bundle benchmark runs at its smoke size: it builds a store of the published shape (a few percent
of the cases), splits it into two bundles, and measures verify, score, compare and leaderboard."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "bundle_scale.py"


@pytest.mark.slow
def test_the_bundle_benchmark_runs_at_smoke_size(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bundle_scale", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.main(["--smoke", "--out", str(tmp_path / "work")])
    printed = capsys.readouterr().out
    smoke = module.SMOKE
    assert f"measured: scale {smoke['scale']} of the published shape, {smoke['encoders']} encoders, {smoke['draws']} draws" in printed
    assert [r["command"] for r in rows] == ["verify a.crsb", "score (results folder)", "compare a b", "leaderboard a b"]
    assert all(r["wall_s"] > 0 and r["rss_mb"] > 50 for r in rows)
    assert rows[0]["rss_mb"] < 1024  # verify holds no vector
    assert (tmp_path / "work" / "site" / "index.html").is_file()
