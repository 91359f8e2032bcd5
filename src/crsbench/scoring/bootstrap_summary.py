"""The one summary of CRS bootstrap draws, whichever bootstrap drew them (seed-only or case-and-seed).

Draws in, the same tables out: per encoder the point CRS, its interval and P(rank 1); the rank
distribution; pairwise P(CRS e > CRS f); and the leading tier by one rule, the simultaneous confidence
set over the differences to the top (leading_tier). Row 0 of the draws is the point, so the point and
the draws go through one code path.

The interval method (`percentile`, or Hesterberg's `expanded` for few seeds) is the settings' `interval`
and applies to every interval of either bootstrap (docs/bootstrap.md, "Interval method").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.crs.statistics_settings import DEFAULT_INTERVAL, DEFAULT_LEVEL, INTERVAL_METHODS

TIER_COLUMNS: tuple[str, ...] = ("diff", "se", "diff_low", "in_leading_tier")


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Rank 1 = best; rank = 1 + number of strictly better encoders, so ties share the better rank."""
    scores = np.atleast_2d(scores)
    return 1 + (scores[:, None, :] > scores[:, :, None]).sum(axis=-1)


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


def leading_tier(point: np.ndarray, draws: np.ndarray, level: float) -> pd.DataFrame:
    """A simultaneous confidence set for the best encoder, from the N - 1 differences to the top.

    top = argmax of the point CRS. For every other encoder e, D_e = CRS_top - CRS_e with bootstrap
    standard error se_e. Multiplicity is controlled by the max statistic: q is the `level` quantile
    over draws of max_e (D*_e - D_e) / se_e, and the simultaneous lower bounds D_e - q se_e hold
    for all e at once with probability `level`. e leaves the tier only when its bound is above 0;
    an encoder whose difference has no spread (se_e = 0) leaves it when D_e > 0.
    Columns: TIER_COLUMNS (diff, se, diff_low: the simultaneous lower bound, in_leading_tier).
    """
    top = int(np.argmax(point))
    diff = point[top] - point
    diff_draws = draws[:, [top]] - draws
    se = diff_draws.std(axis=0, ddof=1) if len(draws) > 1 else np.zeros_like(diff)
    spread = se > 0
    spread[top] = False
    if spread.any():
        studentised = (diff_draws[:, spread] - diff[spread]) / se[spread]
        q = float(np.quantile(studentised.max(axis=1), level))
    else:
        q = 0.0
    low = np.where(spread, diff - q * se, diff)
    keep = np.where(spread, low <= 0, diff <= 0)
    keep[top] = True
    return pd.DataFrame({"diff": diff, "se": se, "diff_low": low, "in_leading_tier": keep})


@dataclass(frozen=True)
class BootstrapResult:
    """The summary of one scope's CRS draws.

    intervals: index encoder; crs (point), ci_low, ci_high, p_rank1.
    rank_distribution: index encoder, columns rank_1..rank_N, P(rank) per encoder (rows sum to 1).
    pairwise: P(CRS row > CRS column), diagonal NaN.
    tier: the simultaneous leading tier, columns TIER_COLUMNS.
    draws: (n_boot, N) CRS per draw (no point), in `encoders` order.
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


def summarise(encoders: Sequence[str], draws: np.ndarray, *, reference: int | None, level: float, method: str,
              n_seeds: int) -> BootstrapResult:
    """Intervals, rank distribution, pairwise probabilities and the leading tier; row 0 of `draws` is the point.

    The reference's CRS is 0 in every draw by definition: its interval is NaN (shown as "reference"),
    never a zero-width interval.
    """
    encoders = list(encoders)
    point, draws = draws[0], draws[1:]
    n = len(encoders)
    index = pd.Index(encoders, name="encoder")
    low, high = bootstrap_interval(draws, level, method, n_seeds)
    if reference is not None:
        low[reference] = high[reference] = np.nan
    ranks = competition_ranks(draws)
    rank_probability = np.stack([(ranks == r).mean(axis=0) for r in range(1, n + 1)], axis=1)
    intervals = pd.DataFrame({"crs": point, "ci_low": low, "ci_high": high, "p_rank1": rank_probability[:, 0]}, index=index)
    greater = (draws[:, :, None] > draws[:, None, :]).mean(axis=0)
    np.fill_diagonal(greater, np.nan)
    tier = leading_tier(point, draws, level).set_index(index)
    return BootstrapResult(
        encoders=tuple(encoders),
        intervals=intervals,
        rank_distribution=pd.DataFrame(rank_probability, index=index, columns=[f"rank_{r}" for r in range(1, n + 1)]),
        pairwise=pd.DataFrame(greater, index=index, columns=pd.Index(encoders, name="versus")),
        tier=tier,
        leading_tier=tuple(e for e, keep in zip(encoders, tier["in_leading_tier"]) if keep),
        top=encoders[int(np.argmax(point))],
        draws=draws,
        n_boot=int(draws.shape[0]),
        n_seeds=int(n_seeds),
        level=float(level),
        method=method,
    )
