"""Perturbed test conditions: which perturbations a task is evaluated on, and the image condition
that applies one of them inside the embedding step (before the encoder's own preprocessing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from crsbench.plan import EvalCondition


@dataclass(frozen=True)
class PerturbationCondition:
    """Perturb each batch as torch tensors; image i depends only on (id, name, severity, seed)."""

    name: str
    severity: int
    seed: int = 0

    def cache_id(self) -> str:
        from crsbench.perturbations.registry import get_perturbation

        spec = get_perturbation(self.name)
        # the parameter is part of the key, so retuning a severity invalidates its cached embeddings
        return f"perturb:{self.name}:s{self.severity}:p{spec.param(self.severity)!r}:seed{self.seed}"

    def apply(self, images: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        from crsbench.perturbations import perturb

        return perturb(images, list(ids), self.name, self.severity, self.seed)


def perturbation_names(modality: str, selection: str | list[str]) -> tuple[str, ...]:
    """`auto`: the dataset's modality set; a modality name: that set; `none`: nothing; a list: exactly those."""
    from crsbench.perturbations import get_perturbation, modality_set

    if isinstance(selection, list):
        return tuple(get_perturbation(name).name for name in selection)
    if selection == "none":
        return ()
    chosen = modality if selection == "auto" else selection
    return tuple(spec.name for spec in modality_set(chosen))


def perturbation_conditions(names: Sequence[str], severities: Sequence[int]) -> tuple[EvalCondition, ...]:
    return tuple(EvalCondition("perturbation", name, int(s)) for name in names for s in severities)


def task_perturbations(suite, task, modality: str) -> tuple[EvalCondition, ...]:
    """The perturbed conditions of one task: the suite's selection unless the task overrides it."""
    if suite.perturbations is None and task.perturbations is None:
        return ()
    selection = task.perturbations if task.perturbations is not None else suite.perturbations.select
    severities = suite.perturbations.severities if suite.perturbations else [1, 2, 3, 4, 5]
    return perturbation_conditions(perturbation_names(modality, selection), severities)
