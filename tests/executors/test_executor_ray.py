"""The Ray executor on a local cluster: the same records as in-process, and no record lost or
duplicated when a worker or the coordinator is killed (real SIGKILLs, by pid)."""

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from crsbench import api  # noqa: E402
from crsbench.executors.ray_executor import RayExecutor  # noqa: E402
from crsbench.plan.fit_units import plan  # noqa: E402
from crsbench.run.runner import SuiteRun  # noqa: E402
from crsbench.plan.suite import parse_suite  # noqa: E402

# one worker: one Ray cluster for the module, and the session's quick demo (built once, for its other readers
# too) is the in-process side of the comparison
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("quick-demo")]

SESSION = ["run_id", "created_at", "fit_seconds", "eval_seconds", "suite_hash"]  # the output path is in the hash
TASK_TITLE = "ray::run_chunk"  # Ray titles a worker process by the task it is running


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the in-process runs and (through the executor) the workers: one thread each
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING",
             _temp_dir=str(tmp_path_factory.mktemp("ray")))
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    torch.set_num_threads(threads)


def _table(results) -> pd.DataFrame:
    frame = api.records(results)
    assert frame["record_key"].is_unique
    return frame.drop(columns=SESSION).set_index("record_key").sort_index()


def test_demo_quick_gives_identical_records_in_process_and_on_ray(cluster, tmp_path, quick_demo):
    local_results, local = quick_demo  # the session's in-process run of the same suite
    executor = RayExecutor(shard_images=64)
    on_ray = api.run(api.demo_suite(quick=True, output=tmp_path / "ray", use_medmnist=False),
                     cache_dir=tmp_path / "cache-ray", executor=executor)
    assert local.written == on_ray.written == local.planned_records
    assert on_ray.forward_passes == local.forward_passes  # the workers computed every embedding anew
    pd.testing.assert_frame_equal(_table(local_results), _table(tmp_path / "ray"), check_exact=True)


def _small_suite(output, cache, seeds=(0, 1, 2)) -> dict:
    sizes = {"n_train": 120, "n_val": 30, "n_test": 60}
    return {
        "name": "ray-faults", "output": str(output), "cache": str(cache),
        "encoders": [{"name": "efficientnet-lite0", "label": "lite0-64", "options": {"input_size": 64}},
                     "raw-pixels"],
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **sizes},
                   "shift": {"kind": "demo", "specialty": "derm", "site": "B", **sizes},
                   "perturbations": ["gaussian_noise"]},
                  {"name": "cxr", "dataset": {"kind": "demo", "specialty": "cxr", **sizes}}],
        "seeds": list(seeds), "fractions": [0.25, 1.0], "probe": {"c_grid": [0.01, 1.0]},
        "perturbations": {"select": "none", "severities": [1, 4]}, "batch_size": 16,
        "executor": {"kind": "ray", "shard_images": 32},
    }


def _running_task_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if title.startswith(TASK_TITLE):
                pids.append(int(entry.name))
    return pids


def test_worker_killed_mid_task_is_retried_and_the_grid_completes(cluster, tmp_path):
    suite = parse_suite(_small_suite(tmp_path / "out", tmp_path / "cache"))
    killed, stop = [], threading.Event()

    def kill_one_running_task():
        while not stop.is_set() and not killed:
            for pid in _running_task_pids():
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.01)

    killer = threading.Thread(target=kill_one_running_task, daemon=True)
    killer.start()
    try:
        summary = SuiteRun(suite).run()  # the suite's own executor block: ray, on the test's cluster
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was seen running a task"
    assert summary.written == summary.planned_records
    records = api.records(tmp_path / "out")
    assert len(records) == summary.planned_records == records["record_key"].nunique()


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_coordinator_killed_then_rerun_resumes_with_no_lost_or_duplicate_record(cluster, tmp_path):
    import yaml

    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(_small_suite(tmp_path / "out", tmp_path / "cache", seeds=range(6))))
    db = tmp_path / "out" / "results.sqlite"
    command = [sys.executable, "-m", "crsbench", "run", str(path), "--executor", "ray", "--address", cluster]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # the test's workers run one thread (see the fixture)

    coordinator = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while _count(db) < 4 and coordinator.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert coordinator.poll() is None, "the run ended before it could be killed; make the grid larger"
    os.kill(coordinator.pid, signal.SIGKILL)
    coordinator.wait()
    at_kill = _count(db)

    rerun = subprocess.run(command, env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    records = api.records(tmp_path / "out")
    planned = sum(len(unit.conditions) for unit in plan(parse_suite(yaml.safe_load(path.read_text()))))
    assert 4 <= at_kill < planned
    assert len(records) == planned == records["record_key"].nunique()
    assert records["run_id"].nunique() == 2  # what the killed session committed was kept, not redone
