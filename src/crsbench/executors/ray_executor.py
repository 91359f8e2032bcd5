"""The Ray executor: the same work functions on a Ray cluster (`pip install 'crsbench[ray]'`).

Each `map` puts its function (with the arrays bound in it) into the object store once; tasks carry
only a chunk of small jobs and a reference, so an embedding matrix goes from the caller to the
cluster once per call, however many fits or evaluations read it. CPU jobs are chunked so every
worker gets a few tasks (fewer round trips than one task per record); GPU jobs (extraction shards)
run one per task and ask for a GPU when the cluster has one.

A worker that dies mid-task (killed, out of memory, node lost) is replaced and its task rerun by
Ray, up to `max_retries` times; the work functions are deterministic and write nothing but the
embedding cache (atomically), so a rerun task returns what the lost one would have.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, Iterator, TypeVar

from crsbench.errors import CRSBenchError
from crsbench.executors.base import Threads

Job = TypeVar("Job")
Result = TypeVar("Result")

DEFAULT_SHARD_IMAGES = 4096
TASKS_PER_WORKER = 2  # CPU jobs per map are split into about this many tasks per CPU of the cluster


def run_chunk(fn: Callable, jobs: list, threads: Threads) -> list:
    """What a Ray task runs: fn over a chunk of jobs, results in the chunk's order.

    Threads are pinned to the caller's counts: Ray starts workers with OMP_NUM_THREADS=1.
    """
    threads.pin()
    return [fn(job) for job in jobs]


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, shard_images: int | None = None, threads: int | None = None,
                 max_retries: int = 3, init_options: dict | None = None):
        try:
            import ray
        except ImportError:
            raise CRSBenchError("the ray executor needs Ray: pip install 'crsbench[ray]'") from None
        self._ray = ray
        self._owns_cluster = not ray.is_initialized()  # a cluster the caller connected to is left running
        if self._owns_cluster:
            ray.init(address=address, include_dashboard=False, logging_level="WARNING", **(init_options or {}))
        self.shard_images = shard_images or DEFAULT_SHARD_IMAGES
        self.threads = Threads.fixed(threads) if threads else Threads.current()
        self._task = ray.remote(max_retries=max_retries, retry_exceptions=False)(run_chunk)

    def _resources(self) -> dict:
        return {k: v for k, v in self._ray.cluster_resources().items() if k in ("CPU", "GPU")}

    def map(
        self, fn: Callable[[Job], Result], jobs: Iterable[Job], *, gpu: bool = False
    ) -> Iterator[tuple[Job, Result]]:
        jobs = list(jobs)
        if not jobs:
            return
        ray = self._ray
        resources = self._resources()
        on_gpu = gpu and resources.get("GPU", 0) > 0
        if gpu:  # extraction shards: one per task, each a worker's whole share of threads
            chunks = [[job] for job in jobs]
            options = {"num_gpus": 1} if on_gpu else {"num_cpus": min(self.threads.torch, int(resources.get("CPU", 1)))}
        else:
            size = math.ceil(len(jobs) / max(1, TASKS_PER_WORKER * int(resources.get("CPU", 1))))
            chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
            options = {"num_cpus": 1}
        fn_ref = ray.put(fn)
        pending = {self._task.options(**options).remote(fn_ref, chunk, self.threads): chunk for chunk in chunks}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    yield from zip(pending.pop(ref), ray.get(ref))
        finally:
            for ref in pending:  # the caller stopped early (an error, a kill): drop what is left
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._owns_cluster and self._ray.is_initialized():
            self._ray.shutdown()
