"""How the score's uncertainty is estimated: the bootstrap's draws, engine, interval, resampling and target,
and the weight sensitivity's draws (what the score is: crs.definition.CRSDefinition).

It sits in crs/ beside the definition, not in scoring/ where it is used, because a suite's `crs:` block
holds both and the suite (plan/) validates that block when it is loaded, below scoring/ in the layers.
The engines' functions are one table in scoring/task_draws.py (AUROC_ENGINES); its names are the `bootstrap_engine`
values here (tests/scoring/test_bootstrap_batched.py holds the two equal).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_N_BOOT = 10_000
DEFAULT_LEVEL = 0.95
INTERVAL_METHODS: tuple[str, ...] = ("percentile", "expanded")
# percentile on every path: what the default case-and-seed bootstrap's coverage was measured with (docs/bootstrap.md)
DEFAULT_INTERVAL = "percentile"


class StatisticsSettings(BaseModel):
    """n_boot=0 skips the bootstrap, n_weight_draws=0 the weight sensitivity; `seed` drives both."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_boot: int = Field(DEFAULT_N_BOOT, ge=0, description="bootstrap draws")
    seed: int = Field(0, description="seed of the bootstrap and of the sensitivity draws")
    level: float = Field(DEFAULT_LEVEL, gt=0, lt=1, description="interval level")
    interval: Literal["percentile", "expanded"] = Field(DEFAULT_INTERVAL, description="bootstrap interval method")
    n_weight_draws: int = Field(1000, ge=0, description="draws of the axis-weight sensitivity")
    weight_concentration: float = Field(1.0, gt=0, allow_inf_nan=False, description="Dirichlet concentration")
    resample: Literal["cases", "seeds"] = Field(
        "cases", description="bootstrap: paired test-case clusters and seeds, or seeds only (ignores test-set uncertainty)"
    )
    target: Literal["training-samples", "fitted-probes"] = Field(
        "training-samples", description="what the intervals and the tier are about: the CRS expected over training "
        "samples of the run's size (where the records hold refits), or these fitted probes only"
    )
    bootstrap_engine: Literal["auto", "batched", "reference", "linearised"] = Field(
        "auto", description="how the case bootstrap computes each draw's AUROCs: exactly (batched, reference), by "
        "one matrix product (linearised), or exactly while that is cheap (auto)"
    )
