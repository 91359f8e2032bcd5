"""Fit a unit's probe, and score a fitted probe on one condition: numeric code, no I/O, no models.

These are what an executor ships to a worker: their inputs are arrays and small values. A fitted unit
is small (a probe and a few numbers), so the runner keeps every fit of an (encoder, task) while it
streams the evaluation matrices one condition at a time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from crsbench.metrics import calibration
from crsbench.metrics import classification as metrics
from crsbench.plan.conditions import Condition
from crsbench.plan.fit_units import FitUnit
from crsbench.probe.linear import FittedProbe, ProbeConfig, fit_probe
from crsbench.plan.subsets import fraction_subset, refit_resample
from crsbench.scoring.subgroups import subgroup_metrics


@dataclass(frozen=True)
class TrainingData:
    """What every fit of one (encoder, task) pair needs, as arrays."""

    task_type: str
    n_classes: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    train_hash: str


@dataclass(frozen=True)
class EvalSet:
    x: np.ndarray
    y: np.ndarray
    embedding_hash: str
    subgroups: dict[str, np.ndarray] = field(default_factory=dict)  # attribute -> subgroup per case


@dataclass(frozen=True)
class FittedUnit:
    """A unit's probe and what its records say about the fit."""

    unit: FitUnit
    probe: FittedProbe
    task_type: str
    n_train: int
    positives_train: list[int]
    train_hash: str
    fit_seconds: float


def positives(task_type: str, y: np.ndarray, n_classes: int) -> list[int]:
    if task_type == "multi_label":
        return [int(v) for v in np.nansum(y, axis=0)]
    return [int(v) for v in np.bincount(y.astype(int), minlength=n_classes)]


def fit_unit(unit: FitUnit, data: TrainingData, config: ProbeConfig, fitted: dict | None = None) -> FittedUnit:
    """Fit the unit's probe on its label fraction of the training split, tuned on validation.

    `fitted` memoises probes by training subset: at 100% labels every seed draws the whole training
    split, so the five seeds share one fit (the probe is a deterministic function of its subset).
    """
    if unit.refit:
        subset = refit_resample(unit.task, unit.refit, len(data.y_train))
    else:
        subset = fraction_subset(data.task_type, data.y_train, unit.task, unit.seed, unit.fraction)
    y_fit = data.y_train[subset]
    started = time.perf_counter()
    memo_key = subset.tobytes()
    probe = fitted.get(memo_key) if fitted is not None else None
    if probe is None:
        probe = fit_probe(data.task_type, data.x_train[subset], y_fit, data.x_val, data.y_val, data.n_classes, config)
        if fitted is not None:
            fitted[memo_key] = probe
    return FittedUnit(
        unit, probe, data.task_type, int(len(subset)), positives(data.task_type, y_fit, data.n_classes),
        data.train_hash, time.perf_counter() - started,
    )


@dataclass(frozen=True)
class Evaluation:
    """One fitted probe scored on one condition: the record's numbers, and the per-case probabilities that
    are stored beside the record (not in it)."""

    numbers: dict
    probabilities: np.ndarray  # float32 [n_cases, n_classes]


def evaluate(fitted: FittedUnit, condition: Condition, eval_set: EvalSet) -> Evaluation:
    """One record's numbers: the fitted probe scored on one condition's evaluation set."""
    started = time.perf_counter()
    logits = fitted.probe.logits(eval_set.x)  # once for both the probabilities and their tempered version
    probabilities = fitted.probe.proba_from_logits(logits)
    scores = metrics.evaluate(fitted.task_type, eval_set.y, probabilities)
    tempered = fitted.probe.proba_from_logits(logits, tempered=True)
    numbers = {
        **scores,
        "ece_temperature_scaled": calibration.ece(fitted.task_type, eval_set.y, tempered),
        "probe_temperature": fitted.probe.temperature,
        "condition_kind": condition.kind,
        "condition": condition.name,
        "severity": condition.severity,
        "probe_c": fitted.probe.summary_c,
        "probe_val_nll": fitted.probe.val_nll,
        "probe_converged": fitted.probe.converged,
        "probe_grad_norm": fitted.probe.grad_norm,
        "embedding_hash_eval": eval_set.embedding_hash,
        "eval_seconds": time.perf_counter() - started,
        **_fit_fields(fitted),
    }
    stored = probabilities.astype(np.float32)
    if fitted.unit.refit and condition.kind in ("clean", "shift") and eval_set.subgroups:
        # a refit stores no predictions: its per-subgroup metrics are made here, from the vector as it would be
        # stored, so the subgroup intervals can carry training samples (docs/subgroups.md)
        prior = np.asarray(fitted.positives_train, dtype=float) / fitted.n_train if condition.kind == "clean" else None
        numbers["subgroup_metrics"] = subgroup_metrics(fitted.task_type, eval_set.y, stored, eval_set.subgroups, prior)
        numbers["eval_seconds"] = time.perf_counter() - started
    return Evaluation(numbers, stored)


def _fit_fields(fitted: FittedUnit) -> dict:
    """What a record says about its unit's own fit rather than about the probe's predictions."""
    return {"n_train": fitted.n_train, "positives_train": fitted.positives_train,
            "embedding_hash_train": fitted.train_hash, "fit_seconds": fitted.fit_seconds}


def as_evaluation_of(fitted: FittedUnit, evaluation: Evaluation) -> Evaluation:
    """Another unit's evaluation of the very same probe object (the seeds at 100% labels share one fit),
    as this unit's: the predictions and scores are the probe's, the fit's own fields are this unit's."""
    return Evaluation({**evaluation.numbers, **_fit_fields(fitted)}, evaluation.probabilities)
