"""The settings a score was computed under, as one typed value.

Every output prints them (the JSON summary, the report's provenance, the advice's constants), so they
travel with the `ScoreReport`. Read them by attribute; the value is also a read-only mapping with the
keys of the JSON summary, so `dict(settings)` is what `summary.json` holds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScoreContext:
    """What a caller knows of the inputs beyond the records, carried into the report as it is built: the
    inputs' fingerprint (scoring.inputs.inputs_key), notes that lead (a partial view, a comparison's
    departures), the results view the records are (coverage.GridStatus.as_dict), and a comparison of
    bundles' departures and sources."""

    inputs_key: str = ""
    lead_notes: tuple[str, ...] = ()
    grid: dict[str, Any] | None = None
    departures: tuple[str, ...] = ()
    sources: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ScoreSettings(Mapping):
    reference: str
    anchors: dict[str, float]
    scales: dict[str, float]
    delta: float
    margin: float
    axis_weights: dict[str, float]  # normalised over the axes used
    axis_task_coverage: dict[str, int]  # tasks each axis could be measured on
    baselines: tuple[str, ...]
    n_boot: int
    seed: int
    level: float
    interval: str
    n_seeds: int
    seeds: tuple[int, ...]
    tasks: tuple[str, ...]
    n_weight_draws: int
    weight_concentration: float
    resample: str
    calibration_axis: str
    definition: str = "mean_of_skills"  # which CRS ranks (docs/crs.md section 2); the other is shown beside
    # the components' constants: tolerance and balance_tau in skill units, component_weights (sum 1)
    components: dict[str, Any] = dataclasses.field(default_factory=dict)
    grid: dict[str, Any] | None = None  # the results view the scores rest on (coverage.GridStatus.as_dict)
    # a comparison of bundles: how it departed from like for like, and the bundles it merged
    departures: tuple[str, ...] = ()
    sources: tuple[dict[str, Any], ...] = ()

    @property
    def partial_view(self) -> bool:
        return bool((self.grid or {}).get("partial_view"))

    # the mapping view: JSON-ready values (tuples as lists); `grid` only once a view is attached,
    # `departures` and `sources` only for a comparison of bundles, so a plain score's summary keeps its keys
    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        value = getattr(self, key)
        return list(value) if isinstance(value, tuple) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def _keys(self) -> tuple[str, ...]:
        compared = bool(self.sources or self.departures)  # a comparison always says what it departed from
        optional = {"grid": self.grid is not None, "departures": compared, "sources": compared}
        return tuple(f.name for f in dataclasses.fields(self) if optional.get(f.name, True))
