"""What the subgroup stage (scoring/subgroups.py) reads, assembled from the case-and-seed bootstrap: per task
and set with stored attributes, the fitted probes' vectors at 100 % labels and the bootstrap's own case
weights, replayed from the generator state it recorded before the task's draws (task_draws.replayed_counts),
so no second set of draws is made."""

from __future__ import annotations

import numpy as np

from crsbench.results.predictions import Predictions
from crsbench.scoring.subgroups import SubgroupInput, vector_probabilities
from crsbench.scoring.task_draws import TaskPlan, replayed_counts


def subgroup_inputs(plans: tuple[TaskPlan, ...] | list[TaskPlan], stored: Predictions, task_types: dict[str, str],
                    draw_states: dict[str, dict] | None, n_draws: int) -> list[SubgroupInput]:
    """One SubgroupInput per task's test set, and shift set, that has stored attributes. draw_states None: the
    point only (no bootstrap ran), every weight 1."""
    out = []
    for plan in plans:
        roles = [("test", plan.test_set, {k: (v,) for k, v in plan.full.items()})]
        if plan.shift_set is not None and plan.shift:
            roles.append(("shift", plan.shift_set, {k: tuple(v) for k, v in plan.shift.items()}))
        counts = None
        for role, test_set, vectors in roles:
            attributes = stored.attributes(test_set)
            if not attributes:
                continue
            cases = stored.case_set(test_set)
            if draw_states is None:
                weights = np.ones((1, len(cases.case_id)))
            else:
                counts = counts or replayed_counts(plan, stored, draw_states[plan.task], n_draws)
                weights = counts.weights(role)
            digests = [d for ds in vectors.values() for d in ds]
            probabilities = vector_probabilities(stored, digests, task_types[plan.task])
            n_classes = stored.probabilities(digests[0]).shape[1]
            out.append(SubgroupInput(plan.task, role, task_types[plan.task], n_classes, cases.labels, cases.cluster,
                                     attributes, vectors, dict(plan.prior), weights, probabilities))
    return out
