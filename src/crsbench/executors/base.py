"""The executor seam: how the runner's work functions reach processes.

The runner hands an executor a function and small job values; the executor returns `(job, result)`
pairs as they complete, in any order. Functions must be picklable (module-level, or functools.partial
of one) and their large arguments are bound once in the partial, so an executor that ships work to
other processes ships them once per call of `map`, not once per job. The results store stays with
the caller: executors never write records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Protocol, TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")


class Executor(Protocol):
    name: str
    # rows per extraction task; None: a whole split in one task (the in-process default)
    shard_images: int | None

    def map(
        self, fn: Callable[[Job], Result], jobs: Iterable[Job], *, gpu: bool = False
    ) -> Iterator[tuple[Job, Result]]:
        """Run fn on every job; `gpu` asks for an accelerator where the executor has one."""
        ...

    def close(self) -> None: ...



@dataclass(frozen=True)
class Threads:
    """Thread counts of torch and of the BLAS libraries (numpy, scipy, scikit-learn).

    They change how sums are split, and with them the last bits of an embedding or a fit: a worker
    pinned to the caller's counts computes what the caller would have.
    """

    torch: int
    blas: int

    @classmethod
    def current(cls) -> "Threads":
        import torch
        from threadpoolctl import threadpool_info

        blas = [pool["num_threads"] for pool in threadpool_info() if pool.get("user_api") == "blas"]
        return cls(torch.get_num_threads(), max(blas, default=1))

    @classmethod
    def fixed(cls, n: int) -> "Threads":
        return cls(n, n)

    def pin(self) -> None:
        import torch
        from threadpoolctl import threadpool_limits

        if torch.get_num_threads() != self.torch:
            torch.set_num_threads(self.torch)
        threadpool_limits(limits=self.blas, user_api="blas")
