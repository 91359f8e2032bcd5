"""The optional fifth axis, `worst_subgroup` (crs.definition.SUBGROUP_AXIS), off unless the crs block names
`subgroup_axis` (docs/crs.md, docs/subgroups.md): per task, encoder and seed, the AUROC of the worst assessable
subgroup of the attributes named, on the test set's stored predictions at 100 % labels; a skill against chance,
as discrimination.

The rule for what counts: the subgroups assessable on the task's test set (scoring.subgroups.assessable_reason,
the subgroup and its rest each with enough cases and of each class), which read labels and attributes only, so
every encoder of a task has the same ones. A task whose test set has none of them (no assessable subgroup, or
none of the attributes) does not count towards the axis, named in a note, as a task lacking any axis's records;
where no task has one the axis is missing, with the reason. The same subgroups are read in every bootstrap draw
(`worst_auroc` under the draw's case weights) and in every refit (its record's subgroup metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.metrics.weighted import WeightedMetrics, case_major
from crsbench.scoring.subgroups import (assessable_reason, attribute_digest, label_columns, scored_probabilities,
                                        stored_metrics, subgroup_order)

MISSING_REASON = "no task's test set has an assessable subgroup of the attributes named"


@dataclass(frozen=True)
class WorstSubgroups:
    """The subgroups the axis reads, per task: (attribute, digest of its values, subgroup) and the case mask of
    each, in one order; `attributes`: what the crs block named."""

    attributes: tuple[str, ...]
    groups: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    masks: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)


def counted_subgroups(task_type: str, labels: np.ndarray, n_classes: int, attributes: dict[str, np.ndarray],
                      named: Sequence[str]) -> tuple[tuple[tuple[str, str, str], ...], tuple[np.ndarray, ...]]:
    """The assessable subgroups of the attributes named, with their case masks (the axis's rule above)."""
    columns = label_columns(task_type, labels, n_classes)
    names = [str(c) for c in range(len(columns))]
    groups, masks = [], []
    for attribute in named:
        values = attributes.get(attribute)
        if values is None:
            continue
        digest = attribute_digest(values)
        for group in subgroup_order(values):
            mask = values == group
            if not assessable_reason(mask, columns, names) and not assessable_reason(~mask, columns, names):
                groups.append((attribute, digest, group))
                masks.append(mask)
    return tuple(groups), tuple(masks)


def worst_auroc(task_type: str, labels: np.ndarray, probabilities: np.ndarray, masks: Sequence[np.ndarray],
                weights) -> np.ndarray:
    """The smallest subgroup AUROC per weight row, weights (B, n) or case-major (n, B), over the masks given."""
    by_case = np.asarray(case_major(weights))
    return np.min([WeightedMetrics(task_type, labels[m], probabilities[m]).auroc(by_case[m].T) for m in masks], axis=0)


def worst_subgroup_values(frame: pd.DataFrame, predictions, named: Sequence[str]) -> tuple[pd.Series, WorstSubgroups, list[str]]:
    """The axis per (encoder, task, seed) from the clean 100 % records of `frame` (validated records) and their
    stored predictions; the subgroups it read; notes on the tasks that do not count towards it."""
    full = frame[(frame["condition_kind"] == "clean") & (frame["fraction"] == 1.0)]
    located = full.merge(predictions.index[["record_key", "test_set", "probs"]], on="record_key", how="left")
    values, notes = {}, []
    counted = WorstSubgroups(tuple(named))
    for task, rows in located.groupby("task", sort=True):
        rows = rows[rows["probs"].notna()]
        test_sets = rows["test_set"].unique()
        if len(test_sets) != 1:
            notes.append(f"{task}: no stored predictions on one test set: it does not count towards the subgroup axis")
            continue
        cases = predictions.case_set(test_sets[0])
        task_type = str(rows["task_type"].iloc[0])
        n_classes = predictions.probabilities(rows["probs"].iloc[0]).shape[1]
        groups, masks = counted_subgroups(task_type, cases.labels, n_classes, predictions.attributes(test_sets[0]), named)
        if not groups:
            notes.append(f"{task}: no assessable subgroup of {', '.join(named)} on its test set: it does not count "
                         "towards the subgroup axis")
            continue
        counted.groups[task], counted.masks[task] = groups, masks
        one = np.ones((1, len(cases.labels)))
        worst = {}
        for row in rows.itertuples():
            if row.probs not in worst:
                probs = scored_probabilities(predictions.probabilities(row.probs), task_type)
                worst[row.probs] = float(worst_auroc(task_type, cases.labels, probs, masks, one)[0])
            values[(row.encoder, task, int(row.seed))] = worst[row.probs]
    index = pd.MultiIndex.from_tuples(list(values), names=["encoder", "task", "seed"]) if values else None
    return pd.Series(list(values.values()), index=index, dtype=float), counted, notes


def refit_worst(refit_rows: pd.DataFrame, groups: tuple[tuple[str, str, str], ...], encoders: Sequence[str]) -> np.ndarray | None:
    """One refit's axis value per encoder (E,), from its clean record's subgroup metrics over the subgroups the
    axis reads; None where some encoder's record lacks one of them (written before its attributes)."""
    clean = refit_rows[(refit_rows["condition_kind"] == "clean")]
    if "subgroup_metrics" not in clean.columns:
        return None
    out = []
    for encoder in encoders:
        mine = clean[clean["encoder"] == encoder]
        if mine.empty or mine["subgroup_metrics"].iloc[0] is None:
            return None
        metrics = mine["subgroup_metrics"].iloc[0]
        picked = [stored_metrics(metrics, attribute, digest).get(group, {}).get("auroc")
                  for attribute, digest, group in groups]
        if any(v is None for v in picked):
            return None
        out.append(min(picked))
    return np.asarray(out, dtype=float)
