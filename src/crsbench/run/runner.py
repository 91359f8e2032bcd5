"""Runs a suite, resumable, as a short sequence of named steps:

plan (pure, from the suite) -> resolve (build encoders and datasets) -> keys (one per planned record)
-> missing (subtract the store) -> embed (every matrix the missing records read that the cache lacks,
as executor jobs) -> per (encoder, task): fit every pending probe from train/val, then evaluate one
condition at a time, committing each record as it is produced.

The executor (suite `executor:`, local by default) runs the jobs; only this process writes records.

At most one evaluation matrix is held at a time (a published-scale task has dozens of conditions, each
a [n_test, d] matrix); fitted probes are small and stay in memory while the conditions stream past.
A unit with some records missing is refitted (deterministically) and only its missing records are written.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from crsbench.run.class_support import report_and_check
from crsbench.plan.conditions import Condition
from crsbench.datasets.decoded import DecodedStore
from crsbench.embed.cache import CachedEmbedder, Embedder, EmbeddingCache, default_cache_dir
from crsbench.run.embedding_jobs import extract_missing, register_context, release_context
from crsbench.executors import Executor, build_executor
from crsbench.run.record_keys import missing, unit_keys
from crsbench.run.output_lock import OutputLock
from crsbench.run.evaluate import Evaluation, FittedUnit, as_evaluation_of, evaluate, fit_unit
from crsbench.plan.fit_units import FitUnit, plan
from crsbench.results.predictions import CaseSet, PredictionFiles, index_statements
from crsbench.probe.linear import ProbeConfig
from crsbench.core.progress import Progress, SilentProgress
from crsbench.run.provenance import RunIdentity, assemble_record, start_run
from crsbench.core.timestamps import now
from crsbench.run.resolve import resolve
from crsbench.results.store import ResultsStore, database_path
from crsbench.plan.suite import Suite
from crsbench.run.subgroup_sets import write_subgroup_sets
from crsbench.run.task_data import TaskData

# stores one record with its predictions; False when it already existed
Commit = Callable[[FitUnit, Condition, Evaluation, CaseSet], bool]


@dataclass
class RunSummary:
    run_id: str
    output: Path
    planned_records: int
    written: int
    skipped: int
    forward_passes: int
    cache_rejected: list[str] = field(default_factory=list)
    aborted_runs: list[str] = field(default_factory=list)  # earlier runs on the output that never finished
    cache_orphans_removed: int = 0


class SuiteRun:
    def __init__(self, suite: Suite, progress: Progress | None = None, executor: Executor | None = None,
                 cache_dir: str | Path | None = None, wait_s: float = 0.0):
        self.suite = suite
        self.wait_s = wait_s  # how long to wait for another run holding the output
        self.progress = progress or SilentProgress()
        self._given_executor = executor
        self.executor: Executor | None = executor
        self.output = Path(suite.output)
        self.probe_config = ProbeConfig(tuple(suite.probe.c_grid), suite.probe.max_iter, suite.probe.tol)
        self.cache = EmbeddingCache(cache_dir or suite.cache or default_cache_dir())
        self.decoded = DecodedStore(self.cache.root / "decoded")  # each image file decoded once, for every encoder
        self.embedder = Embedder(batch_size=suite.batch_size, progress=self.progress, num_workers=suite.num_workers,
                                 decoded=self.decoded)
        self.embeddings = CachedEmbedder(self.embedder, self.cache)

    def run(self) -> RunSummary:
        self.executor = self._given_executor or build_executor(self.suite.executor)
        try:
            return self._run()
        finally:
            if self._given_executor is None:  # one the caller passed is the caller's to close
                self.executor.close()

    def _run(self) -> RunSummary:
        units = plan(self.suite)
        resolved = resolve(self.suite)
        report_and_check(resolved.datasets, self.progress.log)  # class counts shown; an unusable class refused
        keys = unit_keys(units, resolved, self.probe_config.fingerprint())
        run = RunIdentity(uuid.uuid4().hex[:12], self.suite.suite_hash(), self.probe_config.fingerprint())
        with OutputLock(self.output, self.wait_s), ResultsStore(database_path(self.output)) as store:
            start_run(store, self.suite, resolved, run.run_id)
            aborted = store.mark_aborted(except_run=run.run_id)
            todo = missing(keys, store.existing_keys())

            files = PredictionFiles(self.output)
            write_subgroup_sets(self.output, resolved, self.progress.log)  # beside the records: no key depends on them

            def commit(unit: FitUnit, condition: Condition, evaluation: Evaluation, cases: CaseSet) -> bool:
                record = assemble_record(unit, condition, evaluation.numbers, keys[unit][condition], run, resolved)
                if unit.refit:  # the training-sample spread reads a refit's metrics only: no prediction files
                    return store.add(record)
                # files first (atomic, idempotent), then the record and its index rows in one transaction
                test_set, test_set_row = files.write_case_set(cases)
                digest = files.write_probabilities(evaluation.probabilities)
                return store.add(record, index_statements(record.record_key, test_set, digest, test_set_row))

            extracted = self._embed(todo, resolved)
            written = 0
            try:
                with self.progress.task("probe fits", total=len(todo), unit="fit") as bar:
                    for (encoder, task), jobs in _by_encoder_and_task(todo).items():
                        written += self._run_pair(TaskData(self.embeddings, resolved, encoder, task), jobs, commit, bar)
            except BaseException:
                # interrupted or failed: say so, when the store can still be written (a SIGKILL is marked
                # by the next run instead)
                try:
                    store.finish_run(run.run_id, now(), written, status="aborted")
                except Exception:  # noqa: BLE001 - the original error is the one to report
                    pass
                raise
            store.finish_run(run.run_id, now(), written)
        planned = sum(len(k) for k in keys.values())
        return RunSummary(
            run.run_id, self.output, planned, written, planned - written, self.embedder.forward_passes + extracted,
            list(self.cache.rejected), aborted, self.cache.orphans_removed,
        )

    def _embed(self, todo: dict[FitUnit, tuple[Condition, ...]], resolved) -> int:
        """Every embedding the pending records read, computed by the executor before any fit."""
        suite = self.suite
        in_process = Embedder(batch_size=suite.batch_size, progress=self.progress, num_workers=suite.num_workers,
                              decoded=self.decoded)
        register_context(self.suite, resolved, in_process)
        try:
            return extract_missing(self.suite, todo, resolved, self.cache, self.executor, self.progress)
        finally:
            release_context()  # the encoders' models are not needed again in this process

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
        """Score the fits on one condition; its evaluation matrix is released on return. Units that share
        one probe (every seed at 100% labels) are scored once: the probe is deterministic, so scoring it
        again would give the same numbers five times over."""
        work = partial(evaluate, condition=condition, eval_set=data.eval_set(condition))
        cases = data.case_set(condition)
        sharing = defaultdict(list)  # the first unit of each probe -> every unit of that probe
        first_of = {}
        for fitted in fits:
            sharing[first_of.setdefault(id(fitted.probe), fitted.unit)].append(fitted)
        written = 0
        for first, evaluation in self.executor.map(work, [units[0] for units in sharing.values()]):
            # committed as each evaluation arrives: a stopped run keeps every record scored before it
            for fitted in sharing[first.unit]:
                written += commit(fitted.unit, condition, as_evaluation_of(fitted, evaluation), cases)
        return written


def _by_encoder_and_task(todo: dict[FitUnit, tuple[Condition, ...]]) -> dict[tuple[str, str], dict]:
    groups: dict[tuple[str, str], dict] = defaultdict(dict)
    for unit, conditions in todo.items():
        groups[(unit.encoder, unit.task)][unit] = conditions
    return groups
