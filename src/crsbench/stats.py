"""Statistics on the CRS: paired-seed bootstrap, AUROC-vs-CRS rank agreement, weight sensitivity.

The bootstrap resamples seed indices with replacement, one draw shared by every encoder and task
(the seed fixes the label subset every encoder sees, so seeds are paired), and recomputes the whole
chain for each draw: axes from per-seed values, reference-relative profile, spread and noise floor,
dominance, CRS, ranks. A draw is a row of seed counts, so the seed-means of all draws are one
matrix product and the CRS chain runs on a (draws, encoders, axes) array; nothing loops over draws
except memory-bounded chunks.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.axes import AxisScores, seed_standard_error, seed_weighted_axis_values
from crsbench.crs import (
    COMPONENTS,
    DEFAULT_CONFIG,
    DEFAULT_INTERVAL,
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    INTERVAL_METHODS,
    ChainSettings,
    CRSConfig,
    crs_array,
    reference_index,
    validate_axis_table,
)
from crsbench.errors import DataError

__all__ = ["DEFAULT_N_BOOT", "DEFAULT_LEVEL", "DEFAULT_INTERVAL", "INTERVAL_METHODS"]  # re-exported from crs

DEFAULT_CHUNK = 2048

CASE_RESAMPLING_UNAVAILABLE = (
    "hierarchical test-case resampling needs per-case predictions, but run records hold aggregate "
    "metrics only (docs/records.md); the bootstrap resamples seeds alone. Per-case predictions "
    "would have to be stored to resample cases without faking their correlation across encoders."
)


# --------------------------------------------------------------------------- draws


def seed_resample_counts(rng: np.random.Generator, n_seeds: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_seeds) counts: how often each seed appears in a resample of n_seeds with replacement."""
    return rng.multinomial(n_seeds, np.full(n_seeds, 1.0 / n_seeds), size=n_draws)


def crs_from_counts(
    cube: np.ndarray,
    task_mask: np.ndarray,
    counts: np.ndarray,
    ref: int,
    chain: ChainSettings,
    *,
    chunk_size: int = DEFAULT_CHUNK,
) -> np.ndarray:
    """CRS (B, E) for each row of seed counts, the full chain recomputed per draw, vectorised per chunk."""
    counts = np.atleast_2d(counts)
    out = np.empty((counts.shape[0], cube.shape[0]))
    for start in range(0, counts.shape[0], chunk_size):
        part = counts[start : start + chunk_size]
        values = seed_weighted_axis_values(cube, task_mask, part)
        noise = seed_standard_error(cube, task_mask, part)
        out[start : start + len(part)] = crs_array(values, ref, chain, noise).crs
    return out


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


def paired_seed_bootstrap(
    axis_scores: AxisScores,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    chunk_size: int = DEFAULT_CHUNK,
) -> BootstrapResult:
    """Paired-seed bootstrap of the CRS over the seeds of `axis_scores` (see the module docstring).

    Draws `config.n_boot` seed resamples from `config.seed`. `config.resample_cases` asks for
    hierarchical (seed, then test case) resampling; records hold no per-case predictions, so it
    raises DataError rather than pretend.
    """
    if config.resample_cases:
        raise DataError(CASE_RESAMPLING_UNAVAILABLE)
    if config.n_boot < 1:
        raise ValueError(f"n_boot is {config.n_boot}: need at least one draw")
    encoders = list(axis_scores.encoders)
    ref = reference_index(encoders, reference)
    chain = config.chain(axis_scores.axes)
    n_seeds = len(axis_scores.seeds)
    point = crs_from_counts(axis_scores.cube, axis_scores.task_mask, np.ones((1, n_seeds)), ref, chain)[0]
    counts = seed_resample_counts(np.random.default_rng(config.seed), n_seeds, config.n_boot)
    draws = crs_from_counts(axis_scores.cube, axis_scores.task_mask, counts, ref, chain, chunk_size=chunk_size)
    return summarise_draws(encoders, point, draws, n_seeds=n_seeds, level=config.level, method=config.interval)


def summarise_draws(
    encoders: Sequence[str],
    point: np.ndarray,
    draws: np.ndarray,
    *,
    n_seeds: int,
    level: float = DEFAULT_LEVEL,
    method: str = DEFAULT_INTERVAL,
) -> BootstrapResult:
    """Intervals, rank distribution, pairwise probabilities and the leading tier from CRS draws."""
    encoders = list(encoders)
    n = len(encoders)
    index = pd.Index(encoders, name="encoder")
    low, high = bootstrap_interval(draws, level, method, n_seeds)
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


# --------------------------------------------------------------------------- AUROC versus CRS


@dataclass(frozen=True)
class RankAgreement:
    """How far the CRS ranking departs from the AUROC ranking."""

    spearman: float
    kendall_tau_b: float
    n_reversed: int
    n_pairs: int
    mean_abs_rank_displacement: float
    reversed_pairs: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {
                    "spearman": self.spearman,
                    "kendall_tau_b": self.kendall_tau_b,
                    "n_reversed": self.n_reversed,
                    "n_pairs": self.n_pairs,
                    "mean_abs_rank_displacement": self.mean_abs_rank_displacement,
                }
            ]
        )


def descending_ranks(values: pd.Series, method: str = "average") -> pd.Series:
    """Rank 1 = largest value; ties get the average rank (or `method`, as scipy.stats.rankdata)."""
    return pd.Series(sps.rankdata(-values.to_numpy(dtype=float), method=method), index=values.index)


def rank_agreement(auroc: pd.Series, crs: pd.Series) -> RankAgreement:
    """Spearman, Kendall tau-b, reversed pairs (strictly opposite order) and mean |rank shift|.

    A pair tied on either score is not counted as reversed. Ranks use the average for ties.
    """
    if set(auroc.index) != set(crs.index):
        raise ValueError("auroc and crs must cover the same encoders")
    crs = crs.reindex(auroc.index)
    for name, series in (("auroc", auroc), ("crs", crs)):
        if not np.all(np.isfinite(series.to_numpy(dtype=float))):
            raise ValueError(f"{name} values must be finite for the rank agreement")
    a, c = auroc.to_numpy(dtype=float), crs.to_numpy(dtype=float)
    n = len(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input or n < 2: scipy warns and returns NaN
        spearman = float(sps.spearmanr(a, c).statistic) if n >= 2 else float("nan")
        kendall = float(sps.kendalltau(a, c, variant="b").statistic) if n >= 2 else float("nan")
    i, j = np.triu_indices(n, k=1)
    reversed_mask = (a[i] - a[j]) * (c[i] - c[j]) < 0
    rows = []
    for p, q in zip(i[reversed_mask], j[reversed_mask]):
        hi, lo = (p, q) if a[p] > a[q] else (q, p)  # encoder_a is the one AUROC prefers
        rows.append(
            {
                "encoder_a": auroc.index[hi],
                "encoder_b": auroc.index[lo],
                "auroc_a": a[hi],
                "auroc_b": a[lo],
                "crs_a": c[hi],
                "crs_b": c[lo],
            }
        )
    reversed_pairs = pd.DataFrame(rows, columns=["encoder_a", "encoder_b", "auroc_a", "auroc_b", "crs_a", "crs_b"])
    displacement = np.abs(descending_ranks(auroc) - descending_ranks(crs)).mean() if n else float("nan")
    return RankAgreement(
        spearman=spearman,
        kendall_tau_b=kendall,
        n_reversed=int(reversed_mask.sum()),
        n_pairs=n * (n - 1) // 2,
        mean_abs_rank_displacement=float(displacement),
        reversed_pairs=reversed_pairs,
    )


# --------------------------------------------------------------------------- weight sensitivity


def weight_sensitivity(
    table: pd.DataFrame,
    reference: str,
    config: CRSConfig = DEFAULT_CONFIG,
    *,
    vary: Sequence[str] = ("components", "axes"),
    noise_se: Mapping[str, float] | pd.Series | None = None,
) -> pd.DataFrame:
    """How the ranking moves when weights are drawn from a symmetric Dirichlet(config.weight_concentration).

    `config.n_weight_draws` draws from `config.seed`. `vary` names what is drawn ("components",
    "axes"); the rest stays at the configured weights. The Dirichlet mean is equal weights (the
    default); a larger concentration keeps draws nearer to it. Per encoder: p_top (share of draws
    ranked first, ties included), mean_rank, rank_p05, rank_median, rank_p95, and rank_default
    (rank under the configured weights).
    """
    validate_axis_table(table)
    unknown = sorted(set(vary) - {"components", "axes"})
    if unknown:
        raise ValueError(f"unknown vary entries {unknown}; expected 'components' and/or 'axes'")
    n_draws = config.n_weight_draws
    if n_draws < 1:
        raise ValueError(f"n_draws is {n_draws}: need at least one")
    ref = reference_index(table.index, reference)
    axes = list(table.columns)
    rng = np.random.default_rng(config.seed)
    default = config.chain(axes)
    components = np.broadcast_to(default.component_weights, (n_draws, len(COMPONENTS)))
    axis_w = np.broadcast_to(default.axis_weights, (n_draws, len(axes)))
    if "components" in vary:
        components = rng.dirichlet(np.full(len(COMPONENTS), config.weight_concentration), size=n_draws)
    if "axes" in vary:
        axis_w = rng.dirichlet(np.full(len(axes), config.weight_concentration), size=n_draws)
    noise = None
    if noise_se is not None:
        noise = pd.Series(noise_se, dtype=float).reindex(axes).to_numpy()
    values = np.broadcast_to(table.to_numpy(dtype=float), (n_draws, *table.shape))
    drawn = replace(default, axis_weights=axis_w, component_weights=components)
    scores = crs_array(values, ref, drawn, noise).crs
    default_scores = crs_array(values[:1], ref, default, noise).crs
    ranks = competition_ranks(scores)
    return pd.DataFrame(
        {
            "p_top": (ranks == 1).mean(axis=0),
            "mean_rank": ranks.mean(axis=0),
            "rank_p05": np.percentile(ranks, 5, axis=0),
            "rank_median": np.median(ranks, axis=0),
            "rank_p95": np.percentile(ranks, 95, axis=0),
            "rank_default": competition_ranks(default_scores)[0],
        },
        index=pd.Index(table.index, name="encoder"),
    )
