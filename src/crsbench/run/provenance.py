"""What a run records about itself: the run row, the datasets it read, and each record's identity
columns around the numbers the pipeline computed."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass
from importlib.util import find_spec

import yaml

from crsbench import __version__
from crsbench.plan.conditions import Condition
from crsbench.datasets.base import Dataset
from crsbench.embed.cache import encoder_facts
from crsbench.plan.fit_units import FitUnit
from crsbench.results.records import RunRecord, to_record
from crsbench.run.resolve import Resolved
from crsbench.results.store import ResultsStore
from crsbench.plan.suite import Suite
from crsbench.core.timestamps import now


def numerics(resolved: Resolved) -> dict:
    """The settings that change the bits of embeddings and metrics while leaving cache and record keys
    equal (docs/records.md, "What identical means"): thread counts, devices, precisions, library versions.
    """
    import numpy as np

    settings: dict = {
        "numpy": np.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "encoders": {
            label: {"device": getattr(encoder, "device", "cpu"), "precision": getattr(encoder, "precision", "fp32")}
            for label, encoder in resolved.encoders.items()
        },
    }
    if "torch" in sys.modules or find_spec("torch") is not None:
        import torch

        settings.update(torch=torch.__version__, torch_threads=torch.get_num_threads(),
                        torch_interop_threads=torch.get_num_interop_threads(),
                        torch_deterministic=torch.are_deterministic_algorithms_enabled())
    return settings


def start_run(store: ResultsStore, suite: Suite, resolved: Resolved, run_id: str) -> None:
    store.start_run({
        "run_id": run_id, "started_at": now(), "suite_hash": suite.suite_hash(),
        "suite_name": suite.name, "suite_yaml": yaml.safe_dump(suite.model_dump(mode="json")),
        "crsbench_version": __version__, "host": platform.node(), "pid": os.getpid(),
        "numerics": json.dumps(numerics(resolved), sort_keys=True),
    })
    for task, role, dataset in _datasets_read(resolved):
        store.add_run_dataset(run_id, task, role, dataset.meta.name, dataset.fingerprint(), _dropped(dataset))


def _datasets_read(resolved: Resolved):
    yield from ((task, "task", d) for task, d in resolved.datasets.items())
    yield from ((task, "shift", d) for task, d in resolved.shifts.items())


def _dropped(dataset: Dataset) -> dict:
    """Examples a dataset left out and why (published layouts count them); {} when it drops nothing."""
    dropped = getattr(dataset, "dropped", None)
    return dict(dropped() if callable(dropped) else dropped or {})


@dataclass(frozen=True)
class RunIdentity:
    """What every record of one session shares."""

    run_id: str
    suite_hash: str
    probe_fingerprint: str


def assemble_record(
    unit: FitUnit, condition: Condition, numbers: dict, key: str, run: RunIdentity, resolved: Resolved
) -> RunRecord:
    """One run record: the computed numbers plus what identifies them."""
    encoder, dataset = encoder_facts(resolved.encoders[unit.encoder]), resolved.datasets[unit.task]
    return to_record({
        **numbers,
        "record_key": key,
        "run_id": run.run_id,
        "suite_hash": run.suite_hash,
        "probe_fingerprint": run.probe_fingerprint,
        "encoder": unit.encoder,
        "encoder_revision": encoder.revision,
        "encoder_fingerprint": encoder.fingerprint,
        "encoder_pixels": encoder.pixels.describe(),
        "task": unit.task,
        "dataset": dataset.meta.name,
        "dataset_fingerprint": dataset.fingerprint(),
        "task_type": dataset.meta.task_type,
        "seed": unit.seed,
        "fraction": unit.fraction,
        "refit": unit.refit,
        "crsbench_version": __version__,
        "created_at": now(),
    })
