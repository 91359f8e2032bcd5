"""The in-process executor: runs fit units one after another and yields each result at once."""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")


class LocalExecutor:
    name = "local"

    def map(self, fn: Callable[[Job], Result], jobs: Iterable[Job]) -> Iterator[tuple[Job, Result]]:
        for job in jobs:
            yield job, fn(job)
