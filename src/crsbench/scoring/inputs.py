"""The inputs of a score, read once, and the score of them: the two halves every scoring command shares.

Whoever reads (scoring.read_inputs from a results folder, bundles.compare from a cohort of bundles) builds a
`ScoringInputs`; `score_inputs` scores it without I/O. `inputs_key` fingerprints everything a score depends
on, the scoring code's own source included, so a stored score is reused only while none of it changed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from crsbench.crs.definition import CRSConfig
from crsbench.results.record_set import Records
from crsbench.results.subgroup_files import subgroup_digest
from crsbench.scoring.settings import ScoreContext


@dataclasses.dataclass(frozen=True)
class ScoringInputs:
    """What a score reads, read once: the records as scored (a validated view), the stored per-case
    predictions (where the bootstrap resamples cases), the reference, floor baselines, class names, the
    CRS settings, and `key`, the fingerprint of them all (inputs_key); `source` where they were read
    (a results folder, or None for a cohort of bundles)."""

    records: Records
    predictions: Any
    reference: str | None
    baselines: tuple[str, ...]
    class_names: dict[str, tuple[str, ...]]
    config: CRSConfig
    key: str
    source: Path | None = None
    context: ScoreContext = ScoreContext()  # a comparison of bundles: its departures and sources

    def with_settings(self, **settings) -> "ScoringInputs":
        """The same records scored with other CRS settings (by name, over these), with their own key."""
        config = CRSConfig(**{**self.config.model_dump(), **settings})
        if config.resample == "cases" and self.predictions is None:
            raise ValueError("these inputs hold no per-case predictions: read them with resample='cases'")
        return dataclasses.replace(self, config=config, key=inputs_key(
            self.records.frame, self.predictions if config.resample == "cases" else None, self.reference,
            self.baselines, self.class_names, config, self.records.refits))


SCORING_MODULE = "crsbench.scoring.score"  # a stored score is reused only while its source is unchanged


def inputs_key(frame, stored, reference, baselines, class_names, config: CRSConfig, refits=None) -> str:
    """SHA-256 of everything a score of these results depends on: the records as scored (the view) and their
    refits, the stored predictions' index (its digests address the files' contents) and test sets, the
    reference, floor baselines, class names, every CRS setting, the package version, and the source of the
    scoring code (scoring.score and every package module it imports, directly or not: core.source_digest)."""
    from crsbench import __version__
    from crsbench.core.source_digest import source_digest

    digest = hashlib.sha256()
    ordered = frame.sort_values("record_key").reset_index(drop=True)
    digest.update(ordered.to_json(orient="split", date_format="iso", default_handler=str).encode())
    if refits is not None and len(refits):  # refits added to a folder change the intervals: score again
        digest.update(refits.sort_values(["record_key"]).reset_index(drop=True)
                      .to_json(orient="split", date_format="iso", default_handler=str).encode())
    if stored is not None:
        digest.update(stored.index.sort_values("record_key").to_csv(index=False).encode())
        digest.update(stored.test_sets.to_csv(index=False).encode())
        digest.update(subgroup_digest(stored.subgroups))  # attributes added or changed: score again
    digest.update(json.dumps({"reference": reference, "baselines": list(baselines),
                              "class_names": {t: list(n) for t, n in sorted((class_names or {}).items())},
                              "config": config.model_dump(mode="json"), "version": __version__,
                              "source": source_digest(SCORING_MODULE)},
                             sort_keys=True).encode())
    return digest.hexdigest()


def score_inputs(inputs: ScoringInputs):
    """The second half of every score (`crsbench score`, `report`, `select`, the bundles' `compare` and
    `leaderboard`): the CRS report of inputs read once (no I/O). A partial view says so in its first note
    and in settings.grid."""
    from crsbench.scoring.score import score_records

    grid = inputs.records.grid
    context = inputs.context
    if grid is not None:  # records taken as a view of a results folder (not a cohort of bundles)
        context = dataclasses.replace(context, grid=grid.as_dict(), lead_notes=(
            *context.lead_notes, *((grid.label(),) if grid.partial_view else ()), *grid.superseded))
    return score_records(inputs.records, inputs.reference, inputs.config, baselines=list(inputs.baselines),
                         predictions=inputs.predictions if inputs.config.resample == "cases" else None,
                         class_names=inputs.class_names or None,
                         context=dataclasses.replace(context, inputs_key=inputs.key))
