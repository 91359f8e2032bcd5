"""Suite -> work units. Pure data, so any executor can run it and a rerun subtracts what is stored.

One fit unit per (encoder, task, seed, fraction); it carries the evaluation conditions it must score.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsbench.datasets.base import sha256_of
from crsbench.suite import Suite, TaskSpec


@dataclass(frozen=True)
class EvalCondition:
    kind: str  # clean | perturbation | shift
    name: str
    severity: int = 0


CLEAN_CONDITION = EvalCondition("clean", "clean", 0)


@dataclass(frozen=True)
class FitUnit:
    encoder: str  # the encoder's label in the suite
    task: str
    seed: int
    fraction: float
    conditions: tuple[EvalCondition, ...]


def conditions_for(
    task: TaskSpec, fraction: float, shift_dataset: str | None, perturbed: tuple[EvalCondition, ...] = ()
) -> tuple[EvalCondition, ...]:
    """Clean test at every fraction; perturbed and shifted data only at full labels, as the protocol says."""
    if fraction != 1.0:
        return (CLEAN_CONDITION,)
    conditions = [CLEAN_CONDITION, *perturbed]
    if task.shift is not None:
        conditions.append(EvalCondition("shift", f"shift:{shift_dataset or task.shift.kind}", 0))
    return tuple(conditions)


def plan(
    suite: Suite,
    shift_datasets: dict[str, str] | None = None,
    perturbed: dict[str, tuple[EvalCondition, ...]] | None = None,
) -> list[FitUnit]:
    """`shift_datasets` names each task's resolved shift dataset, so records say which data it was;
    `perturbed` lists each task's perturbation conditions (they depend on the dataset's modality)."""
    shift_datasets, perturbed = shift_datasets or {}, perturbed or {}
    return [
        FitUnit(
            encoder.label, task.name, seed, fraction,
            conditions_for(task, fraction, shift_datasets.get(task.name), perturbed.get(task.name, ())),
        )
        for encoder in suite.encoder_specs
        for task in suite.tasks
        for seed in suite.seeds
        for fraction in suite.fractions
    ]


def record_key(
    encoder_fingerprint: str,
    task: str,
    dataset_fingerprint: str,
    probe_fingerprint: str,
    seed: int,
    fraction: float,
    condition: EvalCondition,
    eval_fingerprint: str,
) -> str:
    """Everything that determines a record's numbers, and nothing else (not the suite's name or order)."""
    return sha256_of(
        encoder_fingerprint, task, dataset_fingerprint, probe_fingerprint, str(seed), repr(float(fraction)),
        condition.kind, condition.name, str(condition.severity), eval_fingerprint,
    )[:32]
