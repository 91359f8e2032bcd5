"""AUROC versus CRS: how far the CRS ranking of the encoders departs from the AUROC ranking (Spearman,
Kendall tau-b, reversed pairs, mean rank shift), at the point and with bootstrap intervals over the draws
of either bootstrap (scoring/statistics.py, scoring/case_bootstrap.py)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.crs.statistics_settings import DEFAULT_INTERVAL, DEFAULT_LEVEL
from crsbench.scoring.bootstrap_summary import bootstrap_interval


@dataclass(frozen=True)
class RankAgreement:
    """How far the CRS ranking departs from the AUROC ranking."""

    spearman: float
    kendall_tau_b: float
    n_reversed: int
    n_pairs: int
    mean_abs_rank_displacement: float
    reversed_pairs: pd.DataFrame
    encoders: tuple[str, ...] = ()

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
        encoders=tuple(auroc.index),
    )


def rank_statistics_draws(auroc: np.ndarray, crs: np.ndarray) -> dict[str, np.ndarray]:
    """Spearman, Kendall tau-b, reversed pairs and mean |rank shift| per row of (B, N) draws."""
    auroc, crs = np.atleast_2d(auroc), np.atleast_2d(crs)
    n = auroc.shape[1]
    ra, rc = sps.rankdata(-auroc, axis=1), sps.rankdata(-crs, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        da, dc = ra - ra.mean(axis=1, keepdims=True), rc - rc.mean(axis=1, keepdims=True)
        spearman = (da * dc).sum(axis=1) / np.sqrt((da**2).sum(axis=1) * (dc**2).sum(axis=1))
        i, j = np.triu_indices(n, k=1)
        sa, sc = np.sign(auroc[:, i] - auroc[:, j]), np.sign(crs[:, i] - crs[:, j])
        kendall = (sa * sc).sum(axis=1) / np.sqrt((sa != 0).sum(axis=1) * (sc != 0).sum(axis=1))
    return {
        "spearman": spearman,
        "kendall_tau_b": kendall,
        "n_reversed": (sa * sc < 0).sum(axis=1).astype(float),
        "mean_abs_rank_displacement": np.abs(ra - rc).mean(axis=1),
    }


def rank_agreement_intervals(
    agreement: RankAgreement,
    encoders: Sequence[str],
    auroc_draws: np.ndarray,
    crs_draws: np.ndarray,
    *,
    n_seeds: int,
    level: float = DEFAULT_LEVEL,
    method: str = DEFAULT_INTERVAL,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary with a bootstrap interval per statistic and n_resolved, reversed pairs with `resolved`).

    `encoders` orders the draws' columns; only the encoders in `agreement` (the cohort without
    floor baselines) are used. A reversed pair is resolved when the bootstrap interval of its
    AUROC difference and that of its opposite CRS difference both exclude 0.
    """
    columns = [list(encoders).index(e) for e in agreement.encoders]
    auroc, crs = auroc_draws[:, columns], crs_draws[:, columns]
    stats_draws = rank_statistics_draws(auroc, crs)
    summary = agreement.summary()
    for name, draws in stats_draws.items():
        low, high = bootstrap_interval(draws, level, method, n_seeds)
        summary[f"{name}_low"], summary[f"{name}_high"] = low, high
    pairs = agreement.reversed_pairs.copy()
    position = {e: k for k, e in enumerate(agreement.encoders)}
    resolved = []
    for pair in pairs.itertuples():
        a, b = position[pair.encoder_a], position[pair.encoder_b]
        auroc_low, _ = bootstrap_interval(auroc[:, a] - auroc[:, b], level, method, n_seeds)
        crs_low, _ = bootstrap_interval(crs[:, b] - crs[:, a], level, method, n_seeds)
        resolved.append(bool(auroc_low > 0 and crs_low > 0))
    pairs["resolved"] = pd.Series(resolved, index=pairs.index, dtype=bool)
    summary["n_resolved"] = int(sum(resolved))
    return summary, pairs
