"""Training samples in the subgroup intervals: the refits' per-subgroup metrics (results.records.SubgroupMetrics,
made when each refit was evaluated, from predictions that are not stored) read into the subgroup stage's inputs
with the task's own refit draws (scoring/refits.py), so a subgroup's interval covers what the axes' intervals
cover. An attribute is read only where every refit the axes used, of every encoder, carries metrics for the
attribute's values as stored today (the digest matches); otherwise its intervals cover the fitted probes, and
the stage names it (attributes added or changed after the run)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.scoring.refit_draws import RefitDraws
from crsbench.scoring.subgroups import (REFIT_QUANTITIES, SubgroupInput, SubgroupRefits, attribute_digest,
                                        stored_metrics, subgroup_order)


def with_refits(sets: Sequence[SubgroupInput], refits: pd.DataFrame, encoders: Sequence[str],
                ids: dict[str, tuple[int, ...]], draws: dict[str, RefitDraws]) -> tuple[list[SubgroupInput], list[str]]:
    """The sets with their training-sample term where the refits carry it, and "task (set): attribute" for each
    attribute that gets none."""
    out, uncovered = [], []
    for item in sets:
        values = {}
        if item.task in draws and item.task in ids:
            values = refit_values(refits, item, encoders, ids[item.task])
        uncovered += [f"{item.task} ({item.role} set): {a}" for a in sorted(item.attributes) if a not in values]
        out.append(dataclasses.replace(item, refits=SubgroupRefits(draws[item.task], values)) if values else item)
    return out, uncovered


def refit_values(refits: pd.DataFrame, item: SubgroupInput, encoders: Sequence[str],
                 ids: tuple[int, ...]) -> dict[str, dict[str, np.ndarray]]:
    """attribute -> subgroup -> (K, 3, E) values of REFIT_QUANTITIES per refit in `ids` and encoder, for the
    attributes every one of those refits carries on this set (a shift set's several records averaged, as the
    fitted probes' are); the others are left out."""
    if refits is None or refits.empty or "subgroup_metrics" not in refits.columns:
        return {}
    kind = "clean" if item.role == "test" else "shift"
    rows = refits[(refits["task"] == item.task) & (refits["fraction"] == 1.0) & (refits["condition_kind"] == kind)]
    if kind == "clean":
        rows = rows[rows["condition"] == "clean"]
    lists = {(int(k), str(e)): list(group["subgroup_metrics"]) for (k, e), group in rows.groupby(["refit", "encoder"])}
    out = {}
    for attribute, stored in item.attributes.items():
        groups = subgroup_order(stored)
        cube = _cube(lists, attribute, attribute_digest(stored), groups, encoders, ids)
        if cube is not None:
            out[attribute] = {g: cube[:, :, j] for j, g in enumerate(groups)}
    return out


def _cube(lists: dict[tuple[int, str], list], attribute: str, digest: str, groups: list[str], encoders: Sequence[str],
          ids: tuple[int, ...]) -> np.ndarray | None:
    """(K, 3, G, E), or None where some refit record lacks the attribute's metrics for these values."""
    cube = np.full((len(ids), len(REFIT_QUANTITIES), len(groups), len(encoders)), np.nan)
    for r, refit in enumerate(ids):
        for e, encoder in enumerate(encoders):
            records = lists.get((refit, encoder), [])
            if not records:
                return None
            per_record = []
            for metrics in records:
                mine = stored_metrics(metrics, attribute, digest)
                if set(mine) != set(groups):
                    return None
                per_record.append([[np.nan if mine[g][q] is None else mine[g][q] for g in groups]
                                   for q in REFIT_QUANTITIES])
            cube[r, :, :, e] = np.mean(per_record, axis=0)
    return cube
