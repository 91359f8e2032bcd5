"""Which encoders another executor can build: one registered only in this Python process cannot be."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crsbench.errors import EncoderError

if TYPE_CHECKING:  # annotations only
    from crsbench.executors import Executor
    from crsbench.plan.suite import Suite


def process_local_encoders(suite: Suite) -> list[str]:
    """The suite's encoders that exist only in this Python process (register_encoder(), api.run(encoders=))."""
    from crsbench.encoders.registry import is_process_local

    return [c.label for c in suite.encoders if c.spec is None and c.name and is_process_local(c.name)]


def check_executor_reach(suite: Suite, executor: Executor | None = None) -> None:
    """An encoder of this process cannot be built by another: refused in one line before any work."""
    kind = executor.name if executor is not None else suite.executor.kind
    local = process_local_encoders(suite)
    if kind != "local" and local:
        raise EncoderError(
            f"encoder {local[0]!r} exists only in this Python process, and the {kind} executor builds encoders "
            "in other processes: run it with executor local, or make it importable there as module:factory "
            "(docs/encoders.md)")
