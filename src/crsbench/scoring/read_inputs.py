"""The first half of a score of a results folder: everything the score needs, read once into a
`ScoringInputs` (the records' view, the stored predictions, the suite's reference, baselines, class
names and `crs:` block)."""

from __future__ import annotations

from pathlib import Path

from crsbench.crs.definition import CRSConfig
from crsbench.results.record_set import Records
from crsbench.results.stored_suites import suite_class_names, suite_reference, suite_score_settings
from crsbench.scoring.inputs import ScoringInputs, inputs_key


def read_scoring_inputs(
    results: str | Path,
    reference: str | None = None,
    config: CRSConfig | None = None,
    *,
    suite_hash: str | None = None,
    partial: bool = False,
    class_names: dict[str, tuple[str, ...]] | None = None,
    **settings,
) -> ScoringInputs:
    """`config` is a crs.CRSConfig; without it, the suite's `crs:` block with CRSConfig fields given by name
    (`n_boot=2000`) applied over it. The suite's baselines are left out of the rank statistics. An
    incomplete grid is refused unless `partial`. `class_names` (task -> names): by default the suite's
    declared names."""
    from crsbench.results import predictions

    if config is not None and settings:
        raise ValueError(f"give either config or settings by name, not both ({sorted(settings)})")
    suite_crs, baselines = suite_score_settings(results, suite_hash)
    config = config or CRSConfig(**{**suite_crs, **settings})
    view = Records.load(results, suite_hash, partial)
    stored = predictions.load_predictions(results) if config.resample == "cases" else None
    names = {**suite_class_names(results, suite_hash), **(class_names or {})}
    reference = reference or suite_reference(results, suite_hash)
    key = inputs_key(view.frame, stored, reference, baselines, names, config, view.refits)
    return ScoringInputs(view, stored, reference, tuple(baselines), names, config, key, source=Path(results))
