"""Suite -> work units. Pure data from the suite alone (no dataset is read), so any executor can run
it and a rerun subtracts what is stored.

One fit unit per (encoder, task, seed, fraction); it carries the evaluation conditions it must score.
The names a condition needs (a shift dataset's name, the modality that picks perturbations) come from
each dataset kind's declared `DatasetInfo`, computed from its options.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsbench.plan.conditions import CLEAN, Condition
from crsbench.core.hashing import sha256_of
from crsbench.plan.perturbation_choice import task_perturbations
from crsbench.plan.suite import Suite, TaskSpec


@dataclass(frozen=True)
class FitUnit:
    encoder: str  # the encoder's label in the suite
    task: str
    seed: int
    fraction: float
    conditions: tuple[Condition, ...]
    refit: int = 0  # k >= 1: the k-th refit at 100 % labels on a paired resample of the training split


def full_label_conditions(suite: Suite, task: TaskSpec) -> tuple[Condition, ...]:
    """Clean, then the task's perturbations, then its shift dataset (when it has one)."""
    perturbed = task_perturbations(suite, task, task.dataset.info().modality)
    shift = (Condition.shift(task.shift.info().name or task.shift.kind),) if task.shift is not None else ()
    return (CLEAN, *perturbed, *shift)


def plan(suite: Suite) -> list[FitUnit]:
    """Clean test at every fraction; perturbed and shifted data only at full labels, as the protocol says.
    Then the suite's refits: per (encoder, task) and k = 1..refits, one probe at 100 % labels on the k-th
    resample of the training split, scored on every 100 % condition (recorded under the first seed)."""
    full = {task.name: full_label_conditions(suite, task) for task in suite.tasks}
    grid = [
        FitUnit(encoder.label, task.name, seed, fraction, full[task.name] if fraction == 1.0 else (CLEAN,))
        for encoder in suite.encoders
        for task in suite.tasks
        for seed in suite.seeds
        for fraction in suite.fractions
    ]
    refits = [
        FitUnit(encoder.label, task.name, suite.seeds[0], 1.0, full[task.name], refit=k)
        for encoder in suite.encoders
        for task in suite.tasks
        for k in range(1, suite.refits + 1)
    ]
    return grid + refits


def record_key(
    encoder_fingerprint: str,
    task: str,
    dataset_fingerprint: str,
    probe_fingerprint: str,
    seed: int,
    fraction: float,
    condition: Condition,
    eval_fingerprint: str,
    refit: int = 0,
) -> str:
    """Everything that determines a record's numbers, and nothing else (not the suite's name or order).
    A refit's index enters only when it is one, so the run's own records keep their keys."""
    refit_part = (f"refit {refit}",) if refit else ()
    return sha256_of(
        encoder_fingerprint, task, dataset_fingerprint, probe_fingerprint, str(seed), repr(float(fraction)),
        condition.kind, condition.name, str(condition.severity), eval_fingerprint, *refit_part,
    )[:32]
