"""What is stored against what the suite asked for.

The runs table keeps each suite's YAML; `plan(suite)` turns it, without reading data, into the expected
grid of (encoder, task, seed, fraction, condition) cells. A results view compares the records with it:
a complete grid is scored as is; an incomplete one is refused (naming what is missing) unless a
partial view is asked for, which then keeps only the cells every encoder present has, so encoders are
compared like with like, and is labelled partial wherever it is shown.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import yaml

from crsbench.errors import DataError
from crsbench.results.stored_suites import stored_suites, suite_file_spelling

CELL: tuple[str, ...] = ("encoder", "task", "seed", "fraction", "condition_kind", "condition", "severity")
Cell = tuple  # values in CELL order
PARTIAL_HINT = "pass --partial (partial=True in the API) for a labelled partial view of the evaluations all encoders share"


class IncompleteGridError(DataError):
    """Records that do not cover the suite's grid, asked for a final view."""


def _cell(encoder: str, task: str, seed: int, fraction: float, kind: str, condition: str, severity: int) -> Cell:
    return (str(encoder), str(task), int(seed), round(float(fraction), 9), str(kind), str(condition), int(severity))


def suite_from_yaml(text: str):
    """The Suite a run stored, or None when it can no longer be read here (an encoder or dataset kind
    not installed, a suite written by another version)."""
    from crsbench.errors import CRSBenchError
    from crsbench.plan.suite import parse_suite

    try:
        data = yaml.safe_load(text)
        data["encoders"] = [suite_file_spelling(choice) for choice in data.get("encoders", [])]
        return parse_suite(data, source="stored suite")
    except (CRSBenchError, ValueError, AttributeError, TypeError, yaml.YAMLError):
        return None


def expected_cells(suite) -> set[Cell]:
    from crsbench.plan.fit_units import plan

    return {
        _cell(unit.encoder, unit.task, unit.seed, unit.fraction, c.kind, c.name, c.severity)
        for unit in plan(suite)
        if not unit.refit  # refits are a dimension of their own, not cells of the grid
        for c in unit.conditions
    }


def stored_cells(records: pd.DataFrame) -> list[Cell]:
    return [_cell(*row) for row in records[list(CELL)].itertuples(index=False, name=None)]


@dataclass(frozen=True)
class GridStatus:
    """How the stored records cover the grid the suite(s) asked for."""

    expected: int | None  # cells the suites asked for; None when no suite could be read
    present: int  # of those (or of all records, when no suite is known), cells stored
    missing: tuple[Cell, ...]  # expected cells without a record, and cells other encoders have
    partial_view: bool = False  # records were cut to the cells every encoder present shares
    kept: int = 0  # records in the view
    unreadable_suites: tuple[str, ...] = ()
    dropped_encoders: tuple[str, ...] = field(default=())  # encoders with no record at all
    superseded: tuple[str, ...] = ()  # encoders whose older versions' records were left out (one sentence each)

    @property
    def complete(self) -> bool:
        return not self.missing

    def describe_missing(self) -> str:
        """Which encoders, tasks, seeds, fractions and conditions are missing, with record counts."""
        if not self.missing:
            return "nothing missing"
        parts = []
        for name, index in (("encoders", 0), ("tasks", 1), ("seeds", 2), ("fractions", 3)):
            counts = Counter(cell[index] for cell in self.missing)
            parts.append(f"{name} " + ", ".join(f"{value} ({n})" for value, n in sorted(counts.items(), key=str)))
        conditions = Counter(
            cell[5] if cell[4] != "perturbation" else f"{cell[5]}@{cell[6]}" for cell in self.missing
        )
        parts.append("conditions " + ", ".join(f"{value} ({n})" for value, n in sorted(conditions.items())))
        of = f" of {self.expected}" if self.expected is not None else ""
        return f"{len(self.missing)}{of} planned records missing: " + "; ".join(parts)

    def label(self) -> str:
        """The label a partial view carries wherever it is shown."""
        return f"PARTIAL VIEW ({self.kept} records on the evaluations all encoders share; {self.describe_missing()})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete, "partial_view": self.partial_view, "expected": self.expected,
            "present": self.present, "missing": len(self.missing), "kept": self.kept,
            "missing_description": self.describe_missing(),
            "dropped_encoders": list(self.dropped_encoders), "unreadable_suites": list(self.unreadable_suites),
            "superseded": list(self.superseded),
        }


def planned_cells(runs: pd.DataFrame, suite_hash: str | None = None) -> tuple[set[Cell] | None, tuple[str, ...]]:
    """The union of the grids of the suites that ran on these results (one suite with `suite_hash`)."""
    first_of_each: dict[str, str] = {}
    for stored in stored_suites(runs, suite_hash):
        first_of_each.setdefault(stored.suite_hash, stored.text)
    cells: set[Cell] = set()
    unreadable = []
    for suite_id, text in first_of_each.items():
        suite = suite_from_yaml(text)
        if suite is None:
            unreadable.append(suite_id)
        else:
            cells |= expected_cells(suite)
    return (cells if cells else None), tuple(unreadable)


def check_grid(records: pd.DataFrame, runs: pd.DataFrame | None = None, suite_hash: str | None = None,
               partial: bool = False) -> tuple[pd.DataFrame, GridStatus]:
    """The records to show and how they cover the grid.

    Complete: all records. Incomplete and `partial`: the records of the cells every encoder present has
    (like with like). Incomplete otherwise: IncompleteGridError naming what is missing.
    """
    planned, unreadable = planned_cells(runs, suite_hash) if runs is not None else (None, ())
    cells = stored_cells(records)
    have = set(cells)
    encoders = sorted({cell[0] for cell in have})
    missing = set(planned - have) if planned is not None else set()
    # like with like: a cell one encoder has, another lacks, is missing too (also with no suite known)
    by_encoder = {e: {cell[1:] for cell in have if cell[0] == e} for e in encoders}
    union = set().union(*by_encoder.values()) if by_encoder else set()
    missing |= {(e, *rest) for e in encoders for rest in union - by_encoder[e]}
    expected = len(planned) if planned is not None else None
    present = len(have & planned) if planned is not None else len(have)
    dropped = tuple(sorted({cell[0] for cell in missing} - set(encoders)))
    if not missing:
        return records, GridStatus(expected, present, (), kept=len(records), unreadable_suites=unreadable)
    ordered = tuple(sorted(missing, key=lambda c: tuple(map(str, c))))
    if not partial:
        status = GridStatus(expected, present, ordered, unreadable_suites=unreadable, dropped_encoders=dropped)
        raise IncompleteGridError(
            f"incomplete results: {status.describe_missing()}; no tier or ranking is given from an incomplete "
            f"grid: run the suite again to complete it (a rerun writes only what is missing), or {PARTIAL_HINT}"
        )
    shared = set.intersection(*by_encoder.values()) if by_encoder else set()
    if planned is not None:
        shared = {rest for rest in shared if all((e, *rest) in planned for e in encoders)}
    keep = [cell[1:] in shared for cell in cells]
    view = records[keep]
    if view.empty:
        raise IncompleteGridError(f"incomplete results: no evaluation is shared by every encoder present "
                                  f"({', '.join(encoders)}); {ordered and GridStatus(expected, present, ordered).describe_missing()}")
    status = GridStatus(expected, present, ordered, partial_view=True, kept=len(view),
                        unreadable_suites=unreadable, dropped_encoders=dropped)
    return view, status

