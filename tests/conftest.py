from __future__ import annotations

import contextlib
import os

import pytest


# Under pytest-xdist each worker is one process on a share of the cores: BLAS, OpenMP and torch
# threads are sized to that share (read when those libraries load, which is after this file).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
if _WORKERS > 1:
    _SHARE = str(max(1, len(os.sched_getaffinity(0)) // _WORKERS) if hasattr(os, "sched_getaffinity")
                 else max(1, (os.cpu_count() or 1) // _WORKERS))
    for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, _SHARE)


_GROUPED = "CRSBENCH_TESTS_BY_GROUP"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Plain `pytest` (no path, no -n) spreads the fast loop over every core when pytest-xdist is there;
    `-n 0` or `-p no:xdist` keeps one process, and a run of named files or tests stays in one process."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    if (getattr(config.option, "numprocesses", 0) is None
            and config.args_source == pytest.Config.ArgsSource.TESTPATHS
            and not config.getoption("usepdb", False) and "PYTEST_XDIST_WORKER" not in os.environ):
        config.option.numprocesses = "auto"
    # tests marked xdist_group("...") share an expensive module or session fixture: one worker runs them
    # all, so it is built once rather than once per worker (xdist would otherwise pick "load"). A worker
    # parses the command line afresh, so it learns of the choice from the environment it inherits.
    if "PYTEST_XDIST_WORKER" in os.environ:
        if os.environ.get(_GROUPED) == "1":
            config.option.loadgroup = True
    elif config.option.numprocesses and config.option.dist == "no":
        config.option.dist = "loadgroup"
        os.environ[_GROUPED] = "1"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The slow tests first, each file's in its own order: spread over workers, the long ones start early and
    the short ones fill in at the end, instead of one long test running alone while the other workers idle.
    (trylast: after pytest has grouped the tests by their fixtures' parameters.)"""
    items[:] = [item for item in items if item.get_closest_marker("slow")] + \
               [item for item in items if not item.get_closest_marker("slow")]


@contextlib.contextmanager
def _isolated_build(tmp_path_factory, name: str):
    """A folder for a session-wide build, made with the isolation `_isolated_caches` gives each test (a session
    fixture is made before any test's own fixtures apply)."""
    root = tmp_path_factory.mktemp(name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(root / "xdg"))
        patch.delenv("CRSBENCH_DATA", raising=False)
        patch.setenv("CRSBENCH_CACHE", str(root / "cache"))
        os.environ.setdefault("OMP_NUM_THREADS", "2")  # as every test gets it
        yield root


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny suite (_tiny_results) run once per session: the folder holding its suite, out/ and cache/.
    Read it only; a test that scores or reports into it takes a copy (_tiny_results.copied_results)."""
    from _tiny_results import tiny_results

    with _isolated_build(tmp_path_factory, "tiny-run") as root:
        tiny_results(root)
    return root


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory):
    """The quick demo suite on generated data (no MedMNIST), run once per session (minutes on two cores):
    (its results folder, the run's summary). Read it only; a test that writes a report into it takes a copy."""
    import torch

    from crsbench import api

    # one torch thread, as a Ray worker runs (tests/executors/test_executor_ray.py compares the records bit for
    # bit): a convolution summed over another number of threads can move a record's sixth decimal
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with _isolated_build(tmp_path_factory, "quick-demo") as root:
            summary = api.run(api.demo_suite(quick=True, output=root / "results", use_medmnist=False),
                              cache_dir=root / "cache")
    finally:
        torch.set_num_threads(threads)
    return root / "results", summary


@pytest.fixture(scope="session")
def quick_demo_results(quick_demo):
    return quick_demo[0]


@pytest.fixture(autouse=True)
def _isolated_caches(tmp_path_factory, monkeypatch):
    """No test reads or writes the user's caches, and none can find data by accident."""
    root = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    monkeypatch.delenv("CRSBENCH_DATA", raising=False)
    monkeypatch.delenv("CRSBENCH_CACHE", raising=False)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
