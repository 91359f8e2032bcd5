"""Every script in benchmarks/ runs at its `--smoke` size and prints its table's header, so none rots.

Found by glob: a new script without `--smoke` or without a declared header fails here. Each script
declares, as module-level string constants read without importing it:
  HEADER             what a line of its table's header starts with;
  NEEDS_SHARED_DATA  (optional) the paths under ../shared/data it reads: where one is absent the
                     script is skipped, naming it.
Not timed: a smoke run checks that the script still runs, not its speed."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _shared_data import shared_file

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


def declared(script: Path) -> dict[str, object]:
    """The script's module-level constants whose values are literals (HEADER, NEEDS_SHARED_DATA, ...)."""
    values = {}
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return values


def test_the_glob_finds_the_benchmarks():
    assert {"extraction_speed.py", "probe_speed.py", "score_scale.py"} <= {s.name for s in SCRIPTS}


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_the_benchmark_runs_at_its_smoke_size_and_prints_its_header(script, tmp_path):
    constants = declared(script)
    header = constants.get("HEADER")
    assert isinstance(header, str) and header, f"{script.name} declares no HEADER (what its table's header starts with)"
    assert '"--smoke"' in script.read_text(), f"{script.name} has no --smoke size"
    for needed in constants.get("NEEDS_SHARED_DATA", ()):
        shared_file(*needed.split("/"))
    src = str(BENCHMARKS.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(script), "--smoke"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, f"{script.name} --smoke exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert any(line.startswith(header) for line in done.stdout.splitlines()), (
        f"{script.name} --smoke printed no line starting {header!r} (in {seconds:.0f} s):\n{done.stdout[-2000:]}")


@pytest.fixture(scope="module")
def gpu_suite():
    spec = importlib.util.spec_from_file_location("gpu_suite", BENCHMARKS / "gpu_suite.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_suite"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_scoring_store_scale_is_the_largest_whose_build_fits_the_time_and_half_the_disk(gpu_suite):
    # 10 s fixed + 200 s per unit of scale; 1 MB fixed + 10 GB per unit of scale
    seconds = {0.01: 12.0, 0.05: 20.0}
    sizes = {0.01: 101_000_000, 0.05: 501_000_000}
    plenty = 10**15
    assert gpu_suite.largest_scale(seconds, 60.0, sizes, plenty, floor=0.01) == 0.25  # (60 - 10) / 200
    assert gpu_suite.largest_scale(seconds, 1_000.0, sizes, plenty, floor=0.01) == 1.0  # never above the published shape
    assert gpu_suite.largest_scale(seconds, 5.0, sizes, plenty, floor=0.01) == 0.01  # below the fixed cost: the floor
    assert gpu_suite.largest_scale(seconds, 60.0, sizes, 2_002_000_000, floor=0.01) == 0.1  # (1,001 MB - 1 MB) / 10 GB: the disk binds


def test_a_larger_build_measured_no_slower_gives_the_smaller_scale_not_the_largest(gpu_suite):
    noisy = {0.01: 20.0, 0.05: 19.0}  # all 19 s taken as per-case: 380 s per unit of scale
    assert gpu_suite.largest_scale(noisy, 60.0, {0.01: 1, 0.05: 5}, 10**15, floor=0.01) == 0.15
