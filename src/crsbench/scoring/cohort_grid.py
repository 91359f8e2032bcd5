"""One grid for every encoder, so that none changes another's score (docs/crs.md, "No encoder changes
another's score"): the scoring's first stage, records and stored predictions in, the records to score
and the notes on what was left out. Pure: no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import pandas as pd

from crsbench.errors import DataError
from crsbench.results.coverage import CELL, check_grid, stored_cells
from crsbench.results.predictions import Predictions

Notes = list[str]

INCOMPLETE = ("refuse", "exclude")
Incomplete = Literal["refuse", "exclude"]


def _condition(cell: tuple) -> str:
    return f"{cell[5]}@{cell[6]}" if cell[4] == "perturbation" else str(cell[5])


_DIMENSIONS = (("task", lambda c: c[1]), ("seed", lambda c: c[2]), ("fraction", lambda c: c[3]), ("condition", _condition))


def _lacks(cells: Sequence[tuple], grid: set[tuple]) -> str:
    """What an encoder's missing cells (CELL order, the encoder first) come to, in one phrase: the tasks,
    seeds, fractions and conditions it lacks altogether, then any other evaluations it lacks, counted."""
    missing = {c[1:] for c in cells}
    whole, explained = [], set()
    for name, value in _DIMENSIONS:
        for v in sorted({value((None, *c)) for c in missing}, key=str):
            alike = {c for c in grid if value((None, *c)) == v}
            if alike <= missing and not alike <= explained:
                whole.append(f"{name} {v}")
                explained |= alike
    rest = [(None, *c) for c in missing - explained]
    parts = list(whole)
    if rest:
        counts = "; ".join(f"{name} " + ", ".join(f"{v} ({n})" for v, n in sorted(Counter(value(c) for c in rest).items(), key=str))
                           for name, value in _DIMENSIONS)
        parts.append(f"{len(rest)} other evaluation(s) ({counts})")
    return ", ".join(parts) + f" ({len(missing)} evaluation(s) the others have)"


def _prediction_gaps(records: pd.DataFrame, predictions: Predictions | None) -> dict[str, int]:
    """Per encoder, its records without stored per-case predictions (none when no predictions are given)."""
    if predictions is None or "record_key" not in records.columns:
        return {}
    stored = set(predictions.index["record_key"])
    missing = ~records["record_key"].isin(stored)
    return {str(e): int(n) for e, n in missing.groupby(records["encoder"]).sum().items()}


def grid_stage(records: pd.DataFrame, predictions: Predictions | None, incomplete: Incomplete = "refuse"
               ) -> tuple[tuple[pd.DataFrame, Predictions | None], Notes]:
    """Every encoder on one grid, so that none changes another's score.

    The grid check is the API's (results.coverage.check_grid without a suite: a cell one encoder has and another
    lacks is missing), on the records with an AUROC; stored predictions count as part of the grid when
    any encoder has all of its. `incomplete="refuse"` (the default): DataError naming each encoder and
    what it lacks. `incomplete="exclude"`: a cell, and the stored predictions, belong to the cohort's
    grid when more than half of the encoders have them; an encoder that lacks any of it is left out and
    cells outside it are dropped, each with a note, so every other encoder is scored on exactly the
    records it has without the newcomers (while they are fewer than the rest). Exactly half leaves no
    majority: refused.
    """
    if incomplete not in INCOMPLETE:
        raise ValueError(f"incomplete must be one of {INCOMPLETE}, got {incomplete!r}")
    if not set(CELL) <= set(records.columns):
        return (records, predictions), []
    scored = records[records["auroc"].notna()] if "auroc" in records.columns else records
    encoders = sorted(scored["encoder"].astype(str).unique())
    if len(encoders) < 2:
        return (records, predictions), []
    gaps = _prediction_gaps(scored, predictions)
    without = sorted(e for e in encoders if gaps.get(e))
    predictions_apart = 0 < len(without) < len(encoders)
    if incomplete == "refuse":
        _, status = check_grid(scored, partial=True)  # IncompleteGridError (a DataError) when nothing is shared
        if status.complete and not predictions_apart:
            return (records, predictions), []
        union = {c[1:] for c in stored_cells(scored)}
        lacking = [f"encoder {e!r} lacks {_lacks([c for c in status.missing if c[0] == e], union)}"
                   for e in encoders if any(c[0] == e for c in status.missing)]
        lacking += [f"encoder {e!r} lacks stored predictions for {gaps[e]} record(s)" for e in without] if predictions_apart else []
        raise DataError("incomplete grid, refused so that no encoder changes another's score: " + "; ".join(lacking)
                        + "; score the complete encoders alone, or pass incomplete='exclude' to leave out the "
                          "encoders that lack part of the grid most encoders share")
    cells = stored_cells(scored)
    have = {e: set() for e in encoders}
    for cell in cells:
        have[str(cell[0])].add(cell[1:])
    holders = Counter(rest for held in have.values() for rest in held)
    half = len(encoders) / 2
    if any(n == half for n in holders.values()) or (predictions_apart and len(without) == half):
        raise DataError(f"incomplete grid with no majority: half of the {len(encoders)} encoders lack evaluations or "
                        "stored predictions the other half has, so none can be told to be the newcomer; score them apart")
    grid = {rest for rest, n in holders.items() if n > half}
    extra = {rest for rest, n in holders.items() if n <= half}
    notes = []
    out = sorted(e for e in encoders if not grid <= have[e] or (predictions_apart and len(without) < half and e in without))
    if len(out) == len(encoders):
        raise DataError("incomplete grid: no encoder has the whole grid most encoders share")
    for e in out:
        lacks = [(e, *rest) for rest in sorted(grid - have[e], key=lambda c: tuple(map(str, c)))]
        what = _lacks(lacks, grid) if lacks else f"stored predictions for {gaps[e]} record(s)"
        notes.append(f"encoder {e!r} left out (incomplete='exclude'): it lacks {what}")
    keep = ~records["encoder"].astype(str).isin(out)
    if extra:
        notes.append(f"{len(extra)} evaluation(s) outside the grid most encoders share dropped (incomplete='exclude')")
        keep &= ~pd.Series([c[1:] for c in stored_cells(records)], index=records.index).isin(extra)
    if predictions_apart and len(without) > half:
        notes.append(f"stored predictions dropped (incomplete='exclude'): {len(without)} of {len(encoders)} encoders "
                     "lack some; the seed-only bootstrap runs")
        predictions = None
    return (records[keep], predictions), notes
