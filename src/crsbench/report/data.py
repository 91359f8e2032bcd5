"""What every figure and table of one report reads: the score value, the records it scored, where they
came from, and the per-case predictions where stored. Below the page and the figure modules, which
all read it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.report import evidence, sources
from crsbench.report.figure_style import Palette

if TYPE_CHECKING:  # annotations only
    from crsbench.results.predictions import Predictions
    from crsbench.scoring.score_report import ScoreReport

PREDICTIONS_MISSING = (
    "reliability diagrams need per-case predictions (stored under RESULTS/predictions/ by runs of a crsbench "
    "version that stores them); these results have none, and the run records' aggregate metrics cannot "
    "give a reliability curve"
)
RELIABILITY_ENCODERS = 3  # leading encoders per task in a reliability diagram


def load_stored_predictions(results: str | Path | None):
    """The per-case predictions of a results folder, or None where this version or these results lack them."""
    if results is None:
        return None
    try:
        from crsbench.results.predictions import load_predictions  # type: ignore[import-not-found]
    except ImportError:
        return None
    return load_predictions(results)


@dataclass
class ReportData:
    """What every figure and table of one report reads."""

    report: ScoreReport
    records: pd.DataFrame  # normalised run records (the scored ones)
    provenance: sources.Provenance
    predictions: Predictions | None = None
    predictions_missing: str = PREDICTIONS_MISSING
    seconds_per_image: dict | None = None  # measured embedding cost per encoder, when the caller has it

    @cached_property
    def encoders(self) -> list[str]:
        return evidence.encoder_order(self.report)

    @cached_property
    def tasks(self) -> list[str]:
        return [str(t) for t in self.report.settings.tasks] or self.provenance.tasks

    @cached_property
    def palette(self) -> Palette:
        return Palette.of(self.encoders, tuple(self.report.baselines))

    @cached_property
    def label_curves(self) -> pd.DataFrame:
        return evidence.label_efficiency_curves(self.records)

    @cached_property
    def robustness_curves(self) -> pd.DataFrame:
        return evidence.robustness_curves(self.records)

    @cached_property
    def shift_drops(self) -> pd.DataFrame:
        return evidence.shift_drops(self.records)

    def reliability_encoders(self, task: str) -> list[str]:
        """The task's leading tier (its best CRS first), else its best CRS, at most RELIABILITY_ENCODERS."""
        by_task = self.report.point.scores_by_task
        order = [str(e) for e in by_task.loc[by_task["task"] == task, "encoder"]]
        tier = set(self.report.tier.members_by_task.get(task, ()))
        chosen = [e for e in order if e in tier] or order[:1]
        return chosen[:RELIABILITY_ENCODERS]

    def reliability_curve(self, task: str, encoder: str) -> pd.DataFrame | None:
        index = self.predictions.index
        rows = index[(index["task"] == task) & (index["encoder"] == encoder) & (index["condition_kind"] == "clean")
                     & (index["fraction"].astype(float) == evidence.FULL_LABELS)]
        if rows.empty:
            return None
        labels, probs = [], []
        for row in rows.itertuples():
            labels.append(self.predictions.case_set(row.test_set).labels)
            probs.append(self.predictions.probabilities(row.record_key))
        import numpy as np

        return evidence.reliability_bins(np.concatenate(labels), np.concatenate(probs))
