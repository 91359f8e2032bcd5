"""The in-process executor: runs jobs one after another and yields each result at once."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, TypeVar

from crsbench.executors.base import Threads

Job = TypeVar("Job")
Result = TypeVar("Result")


class LocalExecutor:
    name = "local"
    shard_images = None  # one task per split: the embedding step runs exactly as a plain extraction

    def __init__(self, threads: int | None = None):
        if threads:
            Threads.fixed(threads).pin()

    def map(
        self, fn: Callable[[Job], Result], jobs: Iterable[Job], *, gpu: bool = False
    ) -> Iterator[tuple[Job, Result]]:
        for job in jobs:
            yield job, fn(job)

    def close(self) -> None:
        pass
