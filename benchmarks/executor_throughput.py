"""Executor throughput: one grid in-process and on a local Ray cluster of 1 and 2 workers, in one run.

The grid is the quick demo's encoders and tasks (generated data) with `--seeds` seeds. The embedding
cache is filled first by an in-process run (its images/s is printed: the per-image extraction cost);
then every executor runs the same grid from that warm cache into a fresh results folder, so the
timings compare what executors change: fits and evaluations, their scheduling and data transfer.
Records must be identical across executors (checked). Then the Ray scheduling overhead per task: a
no-op through the executor, one task per job, timed one at a time (latency) and all at once (cost).
Run: python benchmarks/executor_throughput.py [--seeds 3 --tasks 200 --ray-workers 1 2] [--smoke]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd
import ray
import torch

from crsbench import api
from crsbench.executors import LocalExecutor
from crsbench.executors.ray_executor import RayExecutor

SESSION = ["run_id", "created_at", "fit_seconds", "eval_seconds", "suite_hash"]
HEADER = "grid from a warm cache"
SMOKE = dict(seeds=1, tasks=10, images=4, ray_workers=[1], one_task=True)


def suite(output: Path, seeds: int, one_task: bool = False):
    base = api.demo_suite(quick=True, output=output, use_medmnist=False)
    update = {"seeds": list(range(seeds))}
    if one_task:  # the smoke size: the fundus task alone (no shift set), no refits
        update.update(tasks=[t for t in base.tasks if t.name == "fundus"], refits=0)
    return base.model_copy(update=update)


def timed_grid(root: Path, name: str, seeds: int, executor, one_task: bool = False) -> tuple[float, int, pd.DataFrame]:
    started = time.perf_counter()
    summary = api.run(suite(root / name, seeds, one_task), cache_dir=root / "cache", executor=executor)
    elapsed = time.perf_counter() - started
    records = api.records(root / name).drop(columns=SESSION).set_index("record_key").sort_index()
    return elapsed, summary.written, records


def extraction_cost(images: int) -> float:
    """Seconds per image for efficientnet-lite0 at its 224-pixel input, on this machine's CPU."""
    import numpy as np

    from crsbench.plan.conditions import CLEAN
    from crsbench.datasets.base import ArrayImages
    from crsbench.embed.cache import Embedder
    from crsbench.encoders.registry import get_encoder

    encoder = get_encoder("efficientnet-lite0")
    pixels = ArrayImages(np.random.default_rng(0).integers(0, 256, (images, 224, 224, 3), dtype=np.uint8))
    ids = [str(i) for i in range(images)]
    Embedder(batch_size=32).extract(encoder, ArrayImages(pixels.array[:32]), ids[:32], CLEAN, "warm-up")
    started = time.perf_counter()
    Embedder(batch_size=32).extract(encoder, pixels, ids, CLEAN, "timed")
    return (time.perf_counter() - started) / images


def noop(job: int) -> int:
    return job


def scheduling_overhead(executor: RayExecutor, tasks: int) -> tuple[float, float]:
    """(ms per task one at a time, ms per task with all submitted at once); one job per task."""
    list(executor.map(noop, range(4), gpu=True))  # start the workers before timing
    started = time.perf_counter()
    for job in range(min(tasks, 50)):
        list(executor.map(noop, [job], gpu=True))
    latency = (time.perf_counter() - started) / min(tasks, 50)
    started = time.perf_counter()
    list(executor.map(noop, range(tasks), gpu=True))
    return 1000 * latency, 1000 * (time.perf_counter() - started) / tasks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=200, help="no-op tasks for the overhead figure")
    parser.add_argument("--images", type=int, default=128, help="images for the per-image extraction cost")
    parser.add_argument("--ray-workers", type=int, nargs="+", default=[1, 2], help="local Ray cluster sizes")
    parser.add_argument("--one-task", action="store_true", help="the fundus task alone, no refits")
    parser.add_argument("--smoke", action="store_true", help=f"seconds: {SMOKE}")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    torch.set_num_threads(1)  # one thread per process everywhere: 1 or 2 workers on this machine's cores

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        warm = api.run(suite(root / "warm", args.seeds, args.one_task), cache_dir=root / "cache")
        seconds = time.perf_counter() - started
        print(f"cache fill, in-process: {warm.forward_passes} encoder batches, {seconds:.1f} s for the grid "
              f"(extraction and {warm.written} records)")

        rows, reference = [], None
        elapsed, written, reference = timed_grid(root, "local", args.seeds, LocalExecutor(), args.one_task)
        rows.append(("local (in-process)", elapsed, written))
        overhead = None
        for workers in args.ray_workers:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level="ERROR", _temp_dir=str(root / "ray"))
            executor = RayExecutor()
            list(executor.map(noop, range(2 * workers)))  # workers started before the clock runs
            elapsed, written, records = timed_grid(root, f"ray{workers}", args.seeds, executor, args.one_task)
            pd.testing.assert_frame_equal(records, reference, check_exact=True)
            rows.append((f"ray, {workers} worker{'s' if workers > 1 else ''}", elapsed, written))
            if workers == max(args.ray_workers):
                overhead = scheduling_overhead(executor, args.tasks)
            ray.shutdown()

    local_rate = rows[0][2] / rows[0][1]
    print(f"\n{HEADER} ({rows[0][2]} records; identical records on every executor)")
    print(f"{'executor':<22}{'seconds':>9}{'records/s':>11}{'vs local':>10}")
    for name, elapsed, written in rows:
        print(f"{name:<22}{elapsed:>9.2f}{written / elapsed:>11.1f}{written / elapsed / local_rate:>9.2f}x")
    cost = extraction_cost(args.images)
    print(f"\nextraction, efficientnet-lite0 at 224 px, 1 CPU thread: {1000 * cost:.1f} ms per image")
    print(f"\nray scheduling overhead per task ({max(args.ray_workers)} workers, no-op): {overhead[0]:.1f} ms one at a time, "
          f"{overhead[1]:.2f} ms each with {args.tasks} submitted at once")


if __name__ == "__main__":
    main()
