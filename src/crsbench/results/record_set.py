"""Run records as one value, validated once.

`Records.of(frame)` checks the columns, coerces the keys' types, reads old schemas in today's conventions
and refuses records of several grids (`records.normalise_keys`); what it holds is then passed from stage
to stage (the axes, the bootstrap, the seed aggregation, the report) without being checked again. A subset
of valid records is valid, so filtering keeps the value. `Records.load` reads a results folder and takes
its view in one step: one suite's records, each encoder's newest version, and how they cover the grid the
suite asked for (refused when incomplete, unless a labelled partial view is asked for).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from crsbench.results import records as schema
from crsbench.results.coverage import GridStatus, check_grid


@dataclass(frozen=True, eq=False)
class Records:
    frame: pd.DataFrame  # validated: never mutated in place (pandas copies on write)
    grid: GridStatus | None = None  # how the records cover the suite's grid, once a view was taken
    # refit records (refit >= 1; docs/bootstrap.md, "Training samples"), apart from the grid; empty when none
    refits: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)

    @classmethod
    def of(cls, records: "Records | pd.DataFrame") -> "Records":
        if isinstance(records, Records) and len(records.frame):
            return records
        # an empty view is checked again, so scoring it is the schema's one-line refusal
        frame = records.frame if isinstance(records, Records) else records
        refits = records.refits if isinstance(records, Records) else schema.normalise_refits(frame)
        return cls(schema.normalise_keys(frame), refits=refits)

    @classmethod
    def load(cls, results: str | Path, suite_hash: str | None = None, partial: bool = False) -> "Records":
        from crsbench.results.store import load_records, load_runs

        return cls.view(load_records(results), load_runs(results), suite_hash, partial)

    @classmethod
    def view(cls, frame: pd.DataFrame, runs: pd.DataFrame | None = None, suite_hash: str | None = None,
             partial: bool = False) -> "Records":
        """The records to score or show: one suite's, each encoder's newest version, checked against the
        grid the suite asked for (`coverage.check_grid`). An empty selection is an empty value."""
        if suite_hash:
            frame = schema.select_suite(frame, suite_hash)
        if frame.empty:
            return cls(frame, GridStatus(None, 0, ()))
        frame, superseded = schema.newest_encoder_versions(frame)
        refits = schema.normalise_refits(frame)
        frame, status = check_grid(schema.normalise_keys(frame), runs, suite_hash, partial)
        return cls(frame, dataclasses.replace(status, superseded=superseded), refits_for(refits, frame))

    def where(self, mask: pd.Series) -> "Records":
        """The records where `mask` holds (still valid: a subset of one grid is one grid)."""
        return dataclasses.replace(self, frame=self.frame[mask], refits=refits_for(self.refits, self.frame[mask]))

    def seed_means(self) -> pd.DataFrame:
        """Mean, std and n over seeds for each evaluation (`records.aggregate_seeds`)."""
        return schema.seed_aggregate(self.frame)

    def headline(self) -> pd.DataFrame:
        """The seed means at clean test and 100 % labels: what `crsbench results` shows."""
        return schema.clean_full_label(self.seed_means())

    @property
    def encoders(self) -> tuple[str, ...]:
        return tuple(sorted(self.frame["encoder"].unique())) if len(self.frame) else ()

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(sorted(self.frame["task"].unique())) if len(self.frame) else ()

    def __len__(self) -> int:
        return len(self.frame)


def validated(records: "Records | pd.DataFrame") -> pd.DataFrame:
    """The validated frame of `records`: checked now if it is a plain DataFrame, as is if a Records value."""
    return Records.of(records).frame


def refits_for(refits: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """The refit records of the encoders and tasks `frame` holds."""
    if refits.empty or frame.empty:
        return refits.iloc[0:0] if len(refits) else refits
    return refits[refits["encoder"].isin(frame["encoder"].unique()) & refits["task"].isin(frame["task"].unique())]
