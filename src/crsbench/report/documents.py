"""The values of the terminal's tables as JSON documents (`--json`): the results and the scores, every cell
unrounded, NaN as null. docs/cli.md writes these documents down; a change to a key is a new schema number."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crsbench.crs.definition import COMPONENTS
from crsbench.report.claims import target_line
from crsbench.report.terminal import partial_prefix, task_rows
from crsbench.results.records import clean_full_label
from crsbench.scoring.axes import AXES
from crsbench.scoring.refits import fitted_probes_summary

if TYPE_CHECKING:  # annotations only: the documents take the scored value
    from crsbench.scoring.score_report import ScoreReport

RESULTS_SCHEMA = "crsbench.results/1"
SCORES_SCHEMA = "crsbench.score/1"


def _number(value) -> float | int | str | None:
    """A cell as JSON has it: NaN and NA as null, numpy scalars as Python's, text as it is."""
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    return float(value) if isinstance(value, (float, np.floating)) else str(value)


def _flag(value) -> bool | None:
    """A yes/no cell: None where it is not known (no bootstrap, so no tier)."""
    return None if _number(value) is None else bool(value)


def results_data(aggregate: pd.DataFrame, grid=None) -> dict:
    """What `results_table` shows, as values: clean test at 100% labels, per encoder (best mean AUROC first)
    and task, the mean AUROC and ECE over seeds."""
    frame = clean_full_label(aggregate)
    order = frame.groupby("encoder")["auroc_mean"].mean().sort_values(ascending=False, kind="stable")
    encoders = []
    for encoder, mean_auroc in order.items():
        rows = frame[frame["encoder"] == encoder].set_index("task")
        tasks = {str(t): {"auroc": _number(r["auroc_mean"]), "ece": _number(r["ece_mean"])} for t, r in rows.iterrows()}
        encoders.append({"encoder": str(encoder), "mean_auroc": _number(mean_auroc), "tasks": tasks})
    partial = bool(grid is not None and grid.partial_view)
    return {"schema": RESULTS_SCHEMA, "partial_view": partial, "grid": grid.label() if partial else None,
            "n_seeds": int(frame["n_seeds"].max()) if len(frame) else 0,
            "tasks": sorted(str(t) for t in frame["task"].unique()), "encoders": encoders}


def _score_fields(beside: tuple[str, ...], ranks: bool) -> tuple[str, ...]:
    """The score columns a table shows, by their names in the scores frame (docs/cli.md)."""
    return (*AXES, *beside, *COMPONENTS, "crs", "ci_low", "ci_high", "p_rank1", "in_leading_tier",
            *(("auroc_rank", "crs_rank") if ranks else ()))


def _encoder_rows(frame: pd.DataFrame, fields: tuple[str, ...]) -> list[dict]:
    rows = []
    for encoder, row in frame.iterrows():
        values = {f: _flag(row.get(f)) if f == "in_leading_tier" else _number(row.get(f)) for f in fields}
        rows.append({"encoder": str(encoder), "reference": bool(row.get("is_reference", False)),
                     "baseline": bool(row.get("baseline", False)),
                     "not_assessable": bool(row.get("not_assessable", False)), **values})
    return rows


def scores_data(report: ScoreReport) -> dict:
    """What the score tables and the lines under them show, as values (unrounded)."""
    agreement = report.agreement.table.iloc[0].to_dict() if len(report.agreement.table) else None
    tasks = [{"task": str(task), "leading_tier": list((report.tier.members_by_task or {}).get(task, ())),
              "encoders": _encoder_rows(rows, _score_fields(beside, ranks=False))}
             for task, rows, beside in task_rows(report)]
    return {
        "schema": SCORES_SCHEMA,
        "reference": report.reference,
        "partial_view": bool(partial_prefix(report)),
        "interval": {"level": report.settings.level, "label": report.intervals.label, "target": target_line(report),
                     "fitted_probes": fitted_probes_summary(report.intervals.fitted_probes)},
        "axes_used": list(report.axes_used),
        "axes_missing": dict(report.axes_missing),
        "axes_partial": dict(report.axes_partial),
        "leading_tier": list(report.tier.members),
        "encoders": _encoder_rows(report.point.scores, _score_fields(("ece",), ranks=True)),
        "tasks": tasks,
        "rank_agreement": {k: _number(v) for k, v in agreement.items()} if agreement else None,
        "notes": list(report.notes),
        # the components, both definitions' orders and the pairs they part on (docs/cli.md)
        **json_ready(report.summary(), ("definition", "components", "pareto_front", "pareto_pairs", "orders",
                                        "disagreements", "rank_agreement_by_definition", "subgroups")),
    }


def json_ready(document: dict, keys: tuple[str, ...]) -> dict:
    """`keys` of a summary with every cell as JSON has it (numpy scalars as Python's, NaN as null)."""
    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return _number(value)

    return {k: plain(document[k]) for k in keys if k in document}
