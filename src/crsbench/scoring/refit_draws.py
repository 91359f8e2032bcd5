"""A task's training-sample draws (scoring/refits.py): the normal weights g of its K refits and the t's scale per
bootstrap draw, drawn once and kept, so every quantity of the task (its axes, its subgroups) gets its term from
the very same draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RefitDraws:
    """One task's training-sample draws: g (n_draws, K), row 0 zero, and the t's scale sqrt(df / chi2_b)
    (n_draws,). Kept by the bootstrap, so any quantity of the task with the same K refits' deviations gets the
    term of the very same draws as its axes (the subgroup stage's)."""

    g: np.ndarray
    scale: np.ndarray

    def normal(self, deviations: np.ndarray) -> np.ndarray:
        """sum_k g_bk dev_k / sqrt(K - 1): (n_draws, ...) for deviations (K, ...)."""
        return np.einsum("bk,k...->b...", self.g, deviations) / np.sqrt(len(deviations) - 1)

    def term(self, deviations: np.ndarray) -> np.ndarray:
        """The t term (n_draws, ...) of deviations (K, ...): `normal` times each draw's scale."""
        return self.term_and_normal(deviations)[0]

    def term_and_normal(self, deviations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`term` and `normal` of the same deviations, the sum over refits made once."""
        normal = self.normal(deviations)
        return normal * self.scale.reshape(-1, *([1] * (normal.ndim - 1))), normal


def refit_draws(k: int, n_draws: int, rng: np.random.Generator, df: int | None = None) -> RefitDraws:
    """A task's g and t scale for K refits, drawn from rng in that order; df: K - 1 unless given."""
    df = k - 1 if df is None else df
    g = rng.standard_normal((n_draws, k))
    chi2 = rng.chisquare(df, n_draws)
    g[0] = 0.0
    return RefitDraws(g, np.sqrt(df / chi2))
