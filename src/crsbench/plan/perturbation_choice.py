"""Perturbed test conditions: which perturbations a task is evaluated on (the image operation itself
is `Condition.apply`)."""

from __future__ import annotations

from typing import Sequence

from crsbench.plan.conditions import Condition


def perturbation_names(modality: str, selection: str | list[str]) -> tuple[str, ...]:
    """`auto`: the dataset's modality set; a modality name: that set; `none`: nothing; a list: exactly those."""
    from crsbench.perturbations import get_perturbation, modality_set

    if isinstance(selection, list):
        return tuple(get_perturbation(name).name for name in selection)
    if selection == "none":
        return ()
    chosen = modality if selection == "auto" else selection
    return tuple(spec.name for spec in modality_set(chosen))


def perturbation_conditions(names: Sequence[str], severities: Sequence[int], seed: int = 0) -> tuple[Condition, ...]:
    return tuple(Condition.perturbation(name, s, seed) for name in names for s in severities)


def task_perturbations(suite, task, modality: str) -> tuple[Condition, ...]:
    """The perturbed conditions of one task: the suite's selection unless the task overrides it."""
    if suite.perturbations is None and task.perturbations is None:
        return ()
    selection = task.perturbations if task.perturbations is not None else suite.perturbations.select
    severities = suite.perturbations.severities if suite.perturbations else [1, 2, 3, 4, 5]
    seed = suite.perturbations.seed if suite.perturbations else 0
    return perturbation_conditions(perturbation_names(modality, selection), severities, seed)
