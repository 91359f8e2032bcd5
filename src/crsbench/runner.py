"""Runs a suite: plan -> embed (cached) -> probe -> evaluate -> run records, resumable.

The store is consulted before any work: a unit whose records all exist is skipped, and a unit with
some records missing is refitted (deterministically) and only the missing records are written.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import yaml

from crsbench import __version__
from crsbench.datasets.base import Dataset
from crsbench.datasets.registry import get_dataset
from crsbench.embed import CLEAN, CachedEmbedder, Embedder, EmbeddingCache, EmbeddingRequest
from crsbench.encoders.base import Encoder
from crsbench.errors import CRSBenchError
from crsbench.executors import LocalExecutor
from crsbench.pipeline import EvalSet, TaskEmbeddings, run_unit
from crsbench.plan import EvalCondition, FitUnit, plan, record_key
from crsbench.probe import ProbeConfig
from crsbench.robustness import PerturbationCondition, task_perturbations
from crsbench.shift import align_shift_labels, shift_label_indices
from crsbench.progress import Progress, SilentProgress
from crsbench.store import ResultsStore
from crsbench.suite import Suite


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


@dataclass
class _Resolved:
    encoders: dict[str, Encoder]
    datasets: dict[str, Dataset]
    shifts: dict[str, Dataset]
    perturbed: dict[str, tuple[EvalCondition, ...]]


def _resolve(suite: Suite) -> _Resolved:
    encoders = {choice.label: _named(f"encoders.{i}", choice.build) for i, choice in enumerate(suite.encoder_specs)}
    datasets = {t.name: _named(f"tasks.{i}.dataset", get_dataset, t.dataset.kind, **t.dataset.options())
                for i, t in enumerate(suite.tasks)}
    shifts = {t.name: _named(f"tasks.{i}.shift", get_dataset, t.shift.kind, **t.shift.options())
              for i, t in enumerate(suite.tasks) if t.shift}
    for task in suite.tasks:  # fail before any work when a shift's labels cannot be aligned
        if task.shift:
            shift_label_indices(datasets[task.name].meta, shifts[task.name].meta, task.shift_label_map)
    perturbed = {t.name: task_perturbations(suite, t, datasets[t.name].meta.modality) for t in suite.tasks}
    return _Resolved(encoders, datasets, shifts, perturbed)


def _named(field: str, build, *args, **options):
    """Build an encoder or dataset; a failure names the suite field it came from."""
    try:
        return build(*args, **options)
    except CRSBenchError as error:
        raise type(error)(f"{field}: {error}") from None


def _image_condition(condition: EvalCondition, seed: int):
    return PerturbationCondition(condition.name, condition.severity, seed) if condition.kind == "perturbation" else CLEAN


def _datasets_read(r: _Resolved):
    yield from ((task, "task", d) for task, d in r.datasets.items())
    yield from ((task, "shift", d) for task, d in r.shifts.items())


def _dropped(dataset: Dataset) -> dict:
    """Examples a dataset left out and why (published layouts count them); {} when it drops nothing."""
    dropped = getattr(dataset, "dropped", None)
    return dict(dropped() if callable(dropped) else dropped or {})


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class SuiteRun:
    def __init__(self, suite: Suite, progress: Progress | None = None, executor=None, cache_dir: str | Path | None = None):
        self.suite = suite
        self.progress = progress or SilentProgress()
        self.executor = executor or LocalExecutor()
        self.output = Path(suite.output)
        self.probe_config = ProbeConfig(tuple(suite.probe.c_grid), suite.probe.max_iter, suite.probe.tol)
        cache_root = cache_dir or suite.cache or default_cache_dir()
        self.cache = EmbeddingCache(cache_root)
        self.embedder = Embedder(batch_size=suite.batch_size, progress=self.progress, num_workers=suite.num_workers)
        self.embeddings = CachedEmbedder(self.embedder, self.cache)

    def _keys(self, unit: FitUnit, r: _Resolved) -> dict[EvalCondition, str]:
        encoder, dataset = r.encoders[unit.encoder], r.datasets[unit.task]
        shift = r.shifts.get(unit.task)
        evaluated_on = {  # what, beyond the task's own test split, the record's numbers depend on
            "clean": lambda c: "",
            "shift": lambda c: shift.fingerprint() + repr(sorted((self._task(unit.task).shift_label_map or {}).items())),
            "perturbation": lambda c: _image_condition(c, self._perturbation_seed).cache_id(),
        }
        return {
            c: record_key(
                encoder.meta.fingerprint(), unit.task, dataset.fingerprint(), self.probe_config.fingerprint(),
                unit.seed, unit.fraction, c, evaluated_on[c.kind](c),
            )
            for c in unit.conditions
        }

    def _task(self, name: str):
        return next(t for t in self.suite.tasks if t.name == name)

    @property
    def _perturbation_seed(self) -> int:
        return self.suite.perturbations.seed if self.suite.perturbations else 0

    def run(self) -> RunSummary:
        r = _resolve(self.suite)
        units = plan(self.suite, {task: d.meta.name for task, d in r.shifts.items()}, r.perturbed)
        run_id = uuid.uuid4().hex[:12]
        with ResultsStore(self.output / "results.sqlite") as store:
            store.start_run({
                "run_id": run_id, "started_at": _now(), "suite_hash": self.suite.suite_hash(),
                "suite_name": self.suite.name, "suite_yaml": yaml.safe_dump(self.suite.model_dump(mode="json")),
                "crsbench_version": __version__, "host": platform.node(),
            })
            for task, role, dataset in _datasets_read(r):
                store.add_run_dataset(run_id, task, role, dataset.meta.name, dataset.fingerprint(), _dropped(dataset))
            stored = store.existing_keys()
            keys = {unit: self._keys(unit, r) for unit in units}
            pending = [u for u in units if any(k not in stored for k in keys[u].values())]
            planned = sum(len(k) for k in keys.values())
            written = 0
            groups: dict[tuple[str, str], list[FitUnit]] = defaultdict(list)
            for unit in pending:
                groups[(unit.encoder, unit.task)].append(unit)
            with self.progress.task("probe fits", total=len(pending), unit="fit") as bar:
                for (encoder_label, task), group in groups.items():
                    jobs = [(u, tuple(c for c, k in keys[u].items() if k not in stored)) for u in group]
                    needed = {c for _, conditions in jobs for c in conditions}
                    data = self._task_embeddings(r, encoder_label, task, needed)
                    work = partial(_run_job, data=data, config=self.probe_config, fitted={})
                    for (unit, _), results in self.executor.map(work, jobs):
                        for result in results:
                            record = self._record(unit, result, r, keys, run_id)
                            written += store.add(record)
                        bar.advance(1)
            store.finish_run(run_id, _now(), written)
        return RunSummary(
            run_id, self.output, planned, written, planned - written, self.embedder.forward_passes, list(self.cache.rejected)
        )

    def _task_embeddings(self, r: _Resolved, encoder_label: str, task: str, needed: set[EvalCondition]) -> TaskEmbeddings:
        """Embeddings for the fits plus every evaluation set a pending record needs (cached)."""
        encoder, dataset = r.encoders[encoder_label], r.datasets[task]

        def embed(d, split, condition=CLEAN):
            return self.embeddings.embed(EmbeddingRequest(encoder, d, split, condition))

        train, val = embed(dataset, "train"), embed(dataset, "val")
        test_labels = dataset.split("test").labels
        eval_sets = {}
        for condition in sorted(needed, key=lambda c: (c.kind, c.name, c.severity)):
            if condition.kind == "shift":
                shift = r.shifts[task]
                shifted = embed(shift, "test")
                labels = align_shift_labels(shift.split("test").labels, dataset.meta, shift.meta, self._task(task).shift_label_map)
                eval_sets[condition] = EvalSet(shifted.matrix, labels, shifted.content_hash)
            else:
                matrix = embed(dataset, "test", _image_condition(condition, self._perturbation_seed))
                eval_sets[condition] = EvalSet(matrix.matrix, test_labels, matrix.content_hash)
        return TaskEmbeddings(
            task_type=dataset.meta.task_type,
            n_classes=dataset.meta.n_classes,
            x_train=train.matrix,
            y_train=dataset.split("train").labels,
            x_val=val.matrix,
            y_val=dataset.split("val").labels,
            train_hash=train.content_hash,
            eval_sets=eval_sets,
        )

    def _record(self, unit: FitUnit, result: dict, r: _Resolved, keys, run_id: str) -> dict:
        encoder, dataset = r.encoders[unit.encoder], r.datasets[unit.task]
        condition = EvalCondition(result["condition_kind"], result["condition"], result["severity"])
        return {
            **result,
            "record_key": keys[unit][condition],
            "run_id": run_id,
            "suite_hash": self.suite.suite_hash(),
            "encoder": unit.encoder,
            "encoder_revision": encoder.meta.revision,
            "encoder_fingerprint": encoder.meta.fingerprint(),
            "task": unit.task,
            "dataset": dataset.meta.name,
            "dataset_fingerprint": dataset.fingerprint(),
            "task_type": dataset.meta.task_type,
            "seed": unit.seed,
            "fraction": unit.fraction,
            "probe_fingerprint": self.probe_config.fingerprint(),
            "crsbench_version": __version__,
            "created_at": _now(),
        }


def _run_job(job, data: TaskEmbeddings, config: ProbeConfig, fitted: dict) -> list[dict]:
    unit, conditions = job
    return run_unit(unit, data, config, conditions, fitted)
