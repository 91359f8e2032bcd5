"""Executors run the runner's work functions; the store stays in the caller, so records have a single
writer. `build_executor(spec)` makes one from a suite's `executor:` block (suite.ExecutorSpec)."""

from __future__ import annotations

from crsbench.executors.base import Executor
from crsbench.executors.local import LocalExecutor


def _local(spec) -> Executor:
    return LocalExecutor(threads=spec.threads)


def _ray(spec) -> Executor:
    from crsbench.executors.ray_executor import RayExecutor  # imports Ray only when asked for

    return RayExecutor(address=spec.address, shard_images=spec.shard_images, threads=spec.threads,
                       max_retries=spec.max_retries)


EXECUTORS = {"local": _local, "ray": _ray}


def build_executor(spec) -> Executor:
    return EXECUTORS[spec.kind](spec)


__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "build_executor"]
