"""Statistics on the CRS: the seed-only paired bootstrap and the sensitivity of the ranking to the weights
(AUROC-vs-CRS rank agreement: scoring/rank_agreement.py; the summary of the draws: scoring/bootstrap_summary.py).

The seed-only bootstrap resamples seed indices with replacement, one draw shared by every encoder
and task (the seed fixes the label subset every encoder sees, so seeds are paired), and recomputes
the whole chain per draw: seed-mean axes per task, the CRS per task and on the cross-task means,
ranks. It ignores test-set uncertainty: at 100% labels every seed trains on the same rows, so
discrimination, calibration and robustness barely move between seeds. Every output of it says so
(SEED_ONLY_LABEL).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from crsbench.scoring.axes import AxisScores, seed_weighted_axis_values
from crsbench.crs.definition import DEFAULT_CONFIG, CRSConfig, crs_chain, reference_index, validate_axis_table
from crsbench.scoring.bootstrap_summary import BootstrapResult, competition_ranks, summarise

SEED_ONLY_LABEL = "seed-only bootstrap (ignores test-set uncertainty)"
OVERALL = "overall"

DEFAULT_CHUNK = 2048

# --------------------------------------------------------------------------- draws


def seed_resample_counts(rng: np.random.Generator, n_seeds: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_seeds) counts: how often each seed appears in a resample of n_seeds with replacement."""
    return rng.multinomial(n_seeds, np.full(n_seeds, 1.0 / n_seeds), size=n_draws)


def scope_axis_values(axis_scores: AxisScores, counts: np.ndarray, scope: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Axis values (B, E, A_scope) for B seed-count draws: one task's seed means, or the cross-task means."""
    counts = np.atleast_2d(np.asarray(counts, dtype=float))
    if scope == OVERALL:
        return seed_weighted_axis_values(axis_scores.cube, axis_scores.task_mask, counts), axis_scores.axes
    cube, axes = axis_scores.task_values(axis_scores.tasks.index(scope))  # (E, S, A_t)
    values = np.einsum("bs,esa->bea", counts, cube) / counts.sum(axis=1)[:, None, None]
    return values, axes


def crs_from_counts(
    axis_scores: AxisScores,
    counts: np.ndarray,
    ref: int,
    config: CRSConfig,
    scope: str = OVERALL,
    *,
    chunk_size: int = DEFAULT_CHUNK,
) -> tuple[np.ndarray, np.ndarray]:
    """(CRS (B, E), discrimination (B, E) or NaN) per row of seed counts, the chain recomputed per draw."""
    counts = np.atleast_2d(counts)
    n_enc = len(axis_scores.encoders)
    crs, auroc = np.empty((counts.shape[0], n_enc)), np.full((counts.shape[0], n_enc), np.nan)
    for start in range(0, counts.shape[0], chunk_size):
        part = slice(start, start + chunk_size)
        values, axes = scope_axis_values(axis_scores, counts[part], scope)
        crs[part] = crs_chain(values, ref, config.chain(axes)).crs
        if "discrimination" in axes:
            auroc[part] = values[..., axes.index("discrimination")]
    return crs, auroc


# --------------------------------------------------------------------------- the bootstrap


@dataclass(frozen=True)
class SeedBootstrap:
    """The seed-only bootstrap per scope ("overall" and each task), labelled as ignoring test-set noise."""

    results: dict[str, BootstrapResult]
    auroc_draws: np.ndarray  # (n_boot, N) cross-task discrimination per draw, for the rank statistics
    axis_draws: np.ndarray  # (n_boot, N, A) cross-task axis values per draw: the components'
    method: str  # the interval method (settings' `interval`)
    label: str = SEED_ONLY_LABEL

    @property
    def overall(self) -> BootstrapResult:
        return self.results[OVERALL]


def paired_seed_bootstrap(
    axis_scores: AxisScores,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    chunk_size: int = DEFAULT_CHUNK,
) -> SeedBootstrap:
    """Paired-seed bootstrap of the CRS per task and across tasks (see the module docstring).

    Draws `config.n_boot` seed resamples from `config.seed`, shared by every scope, and summarises them
    as the case bootstrap does (bootstrap_summary.summarise). It ignores test-set uncertainty
    (scoring.case_bootstrap resamples test cases too).
    """
    if config.n_boot < 1:
        raise ValueError(f"n_boot is {config.n_boot}: need at least one draw")
    encoders = list(axis_scores.encoders)
    ref = reference_index(encoders, reference)
    n_seeds = len(axis_scores.seeds)
    counts = seed_resample_counts(np.random.default_rng(config.seed), n_seeds, config.n_boot)
    results, auroc_draws = {}, None
    for scope in (*axis_scores.tasks, OVERALL):
        point, _ = crs_from_counts(axis_scores, np.ones((1, n_seeds)), ref, config, scope)
        draws, auroc = crs_from_counts(axis_scores, counts, ref, config, scope, chunk_size=chunk_size)
        results[scope] = summarise(encoders, np.vstack([point, draws]), reference=ref, level=config.level,
                                   method=config.interval, n_seeds=n_seeds)
        auroc_draws = auroc
    return SeedBootstrap(results, auroc_draws, axis_draws=scope_axis_values(axis_scores, counts, OVERALL)[0],
                         method=config.interval)


# --------------------------------------------------------------------------- sensitivity


SENSITIVITY_PARTS: tuple[str, ...] = ("axes", "components")  # components: under the components definition only


def weight_sensitivity(
    table: pd.DataFrame,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    vary: Sequence[str] = SENSITIVITY_PARTS,
) -> pd.DataFrame:
    """How the ranking moves when the axis weights (and, under the components definition, the component
    weights) are drawn instead of fixed.

    `config.n_weight_draws` draws from `config.seed` of the axis weights from a symmetric Dirichlet
    (config.weight_concentration; its mean is equal weights), and of the component weights likewise. The anchors and spans are not drawn:
    they are the axes' definitions (no value, perfect), not judgements. Per encoder: p_top,
    mean_rank, rank_p05, rank_median, rank_p95, rank_default and place_depends (the 5-95% rank
    range is more than one place).
    """
    validate_axis_table(table)
    unknown = sorted(set(vary) - set(SENSITIVITY_PARTS))
    if unknown:
        raise ValueError(f"unknown vary entries {unknown}; expected some of {list(SENSITIVITY_PARTS)}")
    n_draws = config.n_weight_draws
    if n_draws < 1:
        raise ValueError(f"n_draws is {n_draws}: need at least one")
    ref = reference_index(table.index, reference)
    axes = list(table.columns)
    rng = np.random.default_rng(config.seed)
    default = config.chain(axes)
    a = len(axes)
    weights = rng.dirichlet(np.full(a, config.weight_concentration), n_draws) if "axes" in vary else \
        np.broadcast_to(default.axis_weights, (n_draws, a))
    settings = replace(default, axis_weights=weights)
    if "components" in vary and default.definition == "components":  # drawn after the axis weights: those stay
        settings = replace(settings, component_weights=rng.dirichlet(np.full(3, config.weight_concentration), n_draws))
    values = table.to_numpy(dtype=float)
    ranks = competition_ranks(crs_chain(values[None], ref, settings).crs)
    default_ranks = competition_ranks(crs_chain(values, ref, default).crs)[0]
    low, high = np.percentile(ranks, 5, axis=0), np.percentile(ranks, 95, axis=0)
    return pd.DataFrame(
        {
            "p_top": (ranks == 1).mean(axis=0),
            "mean_rank": ranks.mean(axis=0),
            "rank_p05": low,
            "rank_median": np.median(ranks, axis=0),
            "rank_p95": high,
            "rank_default": default_ranks,
            "place_depends": high > low,
        },
        index=pd.Index(table.index, name="encoder"),
    )
