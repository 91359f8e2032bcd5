"""Probe and evaluate one fit unit on embedding matrices: numeric code, no I/O, no models.

`run_unit` is what an executor ships to a worker: its inputs are arrays and small values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from crsbench import metrics
from crsbench.plan import EvalCondition, FitUnit
from crsbench.probe import ProbeConfig, fit_probe
from crsbench.subsets import fraction_subset


@dataclass(frozen=True)
class EvalSet:
    x: np.ndarray
    y: np.ndarray
    embedding_hash: str


@dataclass(frozen=True)
class TaskEmbeddings:
    """Everything one (encoder, task) pair needs, as arrays."""

    task_type: str
    n_classes: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    train_hash: str
    eval_sets: dict  # EvalCondition -> EvalSet


def positives(task_type: str, y: np.ndarray, n_classes: int) -> list[int]:
    if task_type == "multi_label":
        return [int(v) for v in np.nansum(y, axis=0)]
    return [int(v) for v in np.bincount(y.astype(int), minlength=n_classes)]


def run_unit(
    unit: FitUnit,
    data: TaskEmbeddings,
    config: ProbeConfig,
    conditions: tuple[EvalCondition, ...],
    fitted: dict | None = None,
) -> list[dict]:
    """Fit the unit's probe once, then score it on each requested condition.

    `fitted` memoises probes by training subset: at 100% labels every seed draws the whole training
    split, so the five seeds share one fit (the probe is a deterministic function of its subset).
    """
    subset = fraction_subset(data.task_type, data.y_train, unit.task, unit.seed, unit.fraction)
    x_fit, y_fit = data.x_train[subset], data.y_train[subset]
    started = time.perf_counter()
    memo_key = subset.tobytes()
    probe = fitted.get(memo_key) if fitted is not None else None
    if probe is None:
        probe = fit_probe(data.task_type, x_fit, y_fit, data.x_val, data.y_val, data.n_classes, config)
        if fitted is not None:
            fitted[memo_key] = probe
    fit_seconds = time.perf_counter() - started
    results = []
    for condition in conditions:
        eval_set = data.eval_sets[condition]
        started = time.perf_counter()
        scores = metrics.evaluate(data.task_type, eval_set.y, probe.predict_proba(eval_set.x))
        results.append(
            {
                **scores,
                "condition_kind": condition.kind,
                "condition": condition.name,
                "severity": condition.severity,
                "n_train": int(len(subset)),
                "positives_train": positives(data.task_type, y_fit, data.n_classes),
                "probe_c": probe.summary_c,
                "probe_val_nll": probe.val_nll,
                "probe_converged": probe.converged,
                "probe_grad_norm": probe.grad_norm,
                "embedding_hash_train": data.train_hash,
                "embedding_hash_eval": eval_set.embedding_hash,
                "fit_seconds": fit_seconds,
                "eval_seconds": time.perf_counter() - started,
            }
        )
    return results
