"""Tests marked xdist_group run on one worker (tests/conftest.py picks that distribution), so that an
expensive module or session fixture is built once. Checked on a planted suite run with two workers under
the project's conftest: if grouping silently stopped (a pytest or pytest-xdist release that drops the
group), each cohort's simulation would be built once per worker and this fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

PLANTED = '''
import os
from pathlib import Path

import pytest

OUT = Path(__file__).parent / "workers"


def _note(name):
    OUT.mkdir(exist_ok=True)
    (OUT / name).write_text(os.environ.get("PYTEST_XDIST_WORKER", "none"))


@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    _note(f"grouped-{i}")


@pytest.fixture(scope="module", params=[pytest.param(c, marks=pytest.mark.xdist_group(f"cohort-{c}")) for c in "ab"])
def cohort(request):
    return request.param


@pytest.mark.parametrize("j", range(3))
def test_by_cohort(cohort, j):
    _note(f"{cohort}-{j}")


@pytest.mark.parametrize("k", range(6))
def test_free(k):
    _note(f"free-{k}")
'''


@pytest.mark.slow
def test_grouped_tests_share_one_worker(tmp_path):
    suite = tmp_path / "planted"
    suite.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "conftest.py", suite / "conftest.py")
    (suite / "test_planted.py").write_text(PLANTED)
    # a fresh controller: not this run's worker, whatever runs this test
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST") and k != "CRSBENCH_TESTS_BY_GROUP"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    worker = {path.name: path.read_text() for path in (suite / "workers").iterdir()}
    assert len(worker) == 18 and set(worker.values()) <= {"gw0", "gw1"}, worker
    for group in ("grouped-", "a-", "b-"):
        assert len({w for name, w in worker.items() if name.startswith(group)}) == 1, (group, worker)
