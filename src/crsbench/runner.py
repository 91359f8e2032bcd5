"""Runs a suite, resumable, as a short sequence of named steps:

plan (pure, from the suite) -> resolve (build encoders and datasets) -> keys (one per planned record)
-> missing (subtract the store) -> per (encoder, task): fit every pending probe from train/val, then
evaluate one condition at a time, committing each record as it is produced.

At most one evaluation matrix is held at a time (a published-scale task has dozens of conditions, each
a [n_test, d] matrix); fitted probes are small and stay in memory while the conditions stream past.
A unit with some records missing is refitted (deterministically) and only its missing records are written.
"""

from __future__ import annotations

import os
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from crsbench.class_support import report_and_check
from crsbench.conditions import Condition
from crsbench.embed import CachedEmbedder, Embedder, EmbeddingCache
from crsbench.executors import LocalExecutor
from crsbench.keys import missing, unit_keys
from crsbench.pipeline import FittedUnit, evaluate, fit_unit
from crsbench.plan import FitUnit, plan
from crsbench.probe import ProbeConfig
from crsbench.progress import Progress, SilentProgress
from crsbench.provenance import RunIdentity, assemble_record, now, start_run
from crsbench.resolve import resolve
from crsbench.store import ResultsStore
from crsbench.suite import Suite
from crsbench.task_data import TaskData

Commit = Callable[[FitUnit, Condition, dict], bool]  # stores one record; False when it already existed


def default_cache_dir() -> Path:
    base = os.environ.get("CRSBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "crsbench"
    )
    return Path(base) / "embeddings"


@dataclass
class RunSummary:
    run_id: str
    output: Path
    planned_records: int
    written: int
    skipped: int
    forward_passes: int
    cache_rejected: list[str] = field(default_factory=list)


class SuiteRun:
    def __init__(self, suite: Suite, progress: Progress | None = None, executor=None, cache_dir: str | Path | None = None):
        self.suite = suite
        self.progress = progress or SilentProgress()
        self.executor = executor or LocalExecutor()
        self.output = Path(suite.output)
        self.probe_config = ProbeConfig(tuple(suite.probe.c_grid), suite.probe.max_iter, suite.probe.tol)
        self.cache = EmbeddingCache(cache_dir or suite.cache or default_cache_dir())
        self.embedder = Embedder(batch_size=suite.batch_size, progress=self.progress, num_workers=suite.num_workers)
        self.embeddings = CachedEmbedder(self.embedder, self.cache)

    def run(self) -> RunSummary:
        units = plan(self.suite)
        resolved = resolve(self.suite)
        report_and_check(resolved.datasets, self.progress.log)  # class counts shown; an unusable class refused
        keys = unit_keys(units, resolved, self.probe_config.fingerprint())
        run = RunIdentity(uuid.uuid4().hex[:12], self.suite.suite_hash(), self.probe_config.fingerprint())
        with ResultsStore(self.output / "results.sqlite") as store:
            start_run(store, self.suite, resolved, run.run_id)
            todo = missing(keys, store.existing_keys())

            def commit(unit: FitUnit, condition: Condition, numbers: dict) -> bool:
                return store.add(assemble_record(unit, condition, numbers, keys[unit][condition], run, resolved))

            written = 0
            with self.progress.task("probe fits", total=len(todo), unit="fit") as bar:
                for (encoder, task), jobs in _by_encoder_and_task(todo).items():
                    written += self._run_pair(TaskData(self.embeddings, resolved, encoder, task), jobs, commit, bar)
            store.finish_run(run.run_id, now(), written)
        planned = sum(len(k) for k in keys.values())
        return RunSummary(
            run.run_id, self.output, planned, written, planned - written, self.embedder.forward_passes, list(self.cache.rejected)
        )

    def _run_pair(self, data: TaskData, jobs: dict[FitUnit, tuple[Condition, ...]], commit: Commit, bar) -> int:
        fits = self._fit_all(data, list(jobs), bar)
        conditions = sorted({c for needed in jobs.values() for c in needed}, key=Condition.sort_key)
        return sum(
            self._evaluate(data, condition, [fits[unit] for unit, needed in jobs.items() if condition in needed], commit)
            for condition in conditions
        )

    def _fit_all(self, data: TaskData, units: list[FitUnit], bar) -> dict[FitUnit, FittedUnit]:
        """Every pending probe of the pair; the training matrices are released on return."""
        work = partial(fit_unit, data=data.training(), config=self.probe_config, fitted={})
        fits = {}
        for unit, fitted in self.executor.map(work, units):
            fits[unit] = fitted
            bar.advance(1)
        return fits

    def _evaluate(self, data: TaskData, condition: Condition, fits: list[FittedUnit], commit: Commit) -> int:
        """Score the fits on one condition; its evaluation matrix is released on return."""
        work = partial(evaluate, condition=condition, eval_set=data.eval_set(condition))
        return sum(commit(fitted.unit, condition, numbers) for fitted, numbers in self.executor.map(work, fits))


def _by_encoder_and_task(todo: dict[FitUnit, tuple[Condition, ...]]) -> dict[tuple[str, str], dict]:
    groups: dict[tuple[str, str], dict] = defaultdict(dict)
    for unit, conditions in todo.items():
        groups[(unit.encoder, unit.task)][unit] = conditions
    return groups
