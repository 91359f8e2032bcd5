"""Statistics on the CRS: the seed-only paired bootstrap, the intervals both bootstraps share, and the
sensitivity of the ranking to the weights (AUROC-vs-CRS rank agreement: scoring/rank_agreement.py).

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
from scipy import stats as sps

from crsbench.scoring.axes import AxisScores, seed_weighted_axis_values
from crsbench.crs.definition import (
    DEFAULT_CONFIG,
    DEFAULT_INTERVAL,
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    INTERVAL_METHODS,
    CRSConfig,
    crs_chain,
    reference_index,
    validate_axis_table,
)

__all__ = ["DEFAULT_N_BOOT", "DEFAULT_LEVEL", "DEFAULT_INTERVAL", "INTERVAL_METHODS"]  # re-exported from crs

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


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Rank 1 = best; rank = 1 + number of strictly better encoders, so ties share the better rank."""
    scores = np.atleast_2d(scores)
    return 1 + (scores[:, None, :] > scores[:, :, None]).sum(axis=-1)


# --------------------------------------------------------------------------- intervals


def interval_quantiles(level: float = DEFAULT_LEVEL, method: str = DEFAULT_INTERVAL, n_seeds: int = 5) -> tuple[float, float]:
    """Lower and upper quantiles of the bootstrap distribution that make the interval.

    `percentile`: (alpha/2, 1 - alpha/2). `expanded`: Hesterberg's expanded percentile interval,
    which widens the percentile interval for small samples by using the quantile
    Phi(-sqrt(n/(n-1)) t_{alpha/2, n-1}) instead of alpha/2, where n is the number of seeds: a
    plain percentile interval from n = 5 seeds is too narrow (docs/crs.md, "Coverage").
    """
    if not 0 < level < 1:
        raise ValueError(f"level is {level}: must be in (0, 1)")
    if method not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {method!r}; expected one of {INTERVAL_METHODS}")
    alpha = 1.0 - level
    if method == "percentile" or n_seeds < 2:
        return alpha / 2, 1 - alpha / 2
    t = sps.t.ppf(1 - alpha / 2, n_seeds - 1)
    lower = float(sps.norm.cdf(-np.sqrt(n_seeds / (n_seeds - 1)) * t))
    return lower, 1 - lower


def bootstrap_interval(
    draws: np.ndarray, level: float = DEFAULT_LEVEL, method: str = DEFAULT_INTERVAL, n_seeds: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) over the first axis of `draws`."""
    low_q, high_q = interval_quantiles(level, method, n_seeds)
    low, high = np.quantile(draws, [low_q, high_q], axis=0)
    return low, high


# --------------------------------------------------------------------------- the bootstrap


@dataclass(frozen=True)
class BootstrapResult:
    """Everything the paired-seed bootstrap reports.

    intervals: index encoder; crs (point), ci_low, ci_high, p_rank1.
    rank_distribution: index encoder, columns rank_1..rank_N, P(rank) per encoder (rows sum to 1).
    pairwise: P(CRS row > CRS column), diagonal NaN.
    tier: paired difference to the top encoder: diff (point), diff_low, diff_high, in_leading_tier.
    draws: (n_boot, N) CRS per draw, in `encoders` order.
    """

    encoders: tuple[str, ...]
    intervals: pd.DataFrame
    rank_distribution: pd.DataFrame
    pairwise: pd.DataFrame
    tier: pd.DataFrame
    leading_tier: tuple[str, ...]
    top: str
    draws: np.ndarray
    n_boot: int
    n_seeds: int
    level: float
    method: str


@dataclass(frozen=True)
class SeedBootstrap:
    """The seed-only bootstrap per scope ("overall" and each task), labelled as ignoring test-set noise."""

    results: dict[str, BootstrapResult]
    auroc_draws: np.ndarray  # (n_boot, N) cross-task discrimination per draw, for the rank statistics
    label: str = SEED_ONLY_LABEL
    axis_draws: np.ndarray | None = None  # (n_boot, N, A) cross-task axis values per draw: the components'

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

    Draws `config.n_boot` seed resamples from `config.seed`, shared by every scope. It ignores
    test-set uncertainty (case_bootstrap.case_bootstrap resamples test cases too).
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
        results[scope] = summarise_draws(
            encoders, point[0], draws, n_seeds=n_seeds, level=config.level, method=config.interval, reference=ref
        )
        auroc_draws = auroc
    return SeedBootstrap(results, auroc_draws, axis_draws=scope_axis_values(axis_scores, counts, OVERALL)[0])


def summarise_draws(
    encoders: Sequence[str],
    point: np.ndarray,
    draws: np.ndarray,
    *,
    n_seeds: int,
    level: float = DEFAULT_LEVEL,
    method: str = DEFAULT_INTERVAL,
    reference: int | None = None,
) -> BootstrapResult:
    """Intervals, rank distribution, pairwise probabilities and the leading tier from CRS draws.

    The reference's CRS is 0 in every draw by definition: its interval is NaN (shown as
    "reference"), never a zero-width interval.
    """
    encoders = list(encoders)
    n = len(encoders)
    index = pd.Index(encoders, name="encoder")
    low, high = bootstrap_interval(draws, level, method, n_seeds)
    if reference is not None:
        low[reference] = high[reference] = np.nan
    ranks = competition_ranks(draws)
    rank_probability = np.stack([(ranks == r).mean(axis=0) for r in range(1, n + 1)], axis=1)
    intervals = pd.DataFrame(
        {"crs": point, "ci_low": low, "ci_high": high, "p_rank1": rank_probability[:, 0]}, index=index
    )
    rank_distribution = pd.DataFrame(rank_probability, index=index, columns=[f"rank_{r}" for r in range(1, n + 1)])
    greater = (draws[:, :, None] > draws[:, None, :]).mean(axis=0)
    np.fill_diagonal(greater, np.nan)
    pairwise = pd.DataFrame(greater, index=index, columns=pd.Index(encoders, name="versus"))

    top = int(np.argmax(point))  # ties: the first in encoder order
    difference = draws[:, [top]] - draws
    diff_low, diff_high = bootstrap_interval(difference, level, method, n_seeds)
    unresolved = (diff_low <= 0) & (diff_high >= 0)
    unresolved[top] = True
    tier = pd.DataFrame(
        {"diff": point[top] - point, "diff_low": diff_low, "diff_high": diff_high, "in_leading_tier": unresolved},
        index=index,
    )
    return BootstrapResult(
        encoders=tuple(encoders),
        intervals=intervals,
        rank_distribution=rank_distribution,
        pairwise=pairwise,
        tier=tier,
        leading_tier=tuple(e for e, keep in zip(encoders, unresolved) if keep),
        top=encoders[top],
        draws=draws,
        n_boot=int(draws.shape[0]),
        n_seeds=int(n_seeds),
        level=float(level),
        method=method,
    )


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
