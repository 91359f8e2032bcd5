"""The sample-size advice, checked by simulation: advise n from a tier's bound, draw test sets of n,
count how often the tier's bound separates the pair.

Population: a per-case CRS difference d_i ~ N(mu, sigma) between the top and a rival, so the tier's
one-sided bound on a test set of n is mean - q * sd / sqrt(n) with q = z_0.95 (one rival: the
simultaneous bound is the single one). The advice reads the tier row of a pilot test set whose
difference and standard error are the population's (the advice's premise: "if the difference is as
measured"); the stated chance is SEPARATION_POWER at n_power and one half at n_half.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy.stats import norm

from crsbench.selection import advice

MU, SIGMA, PILOT = 1.0, 8.0, 120
Q = float(norm.ppf(0.95))
REPEATS = 4000


def _advised() -> pd.Series:
    se = SIGMA / math.sqrt(PILOT)
    table = pd.DataFrame({"diff": [0.0, MU], "se": [0.0, se], "diff_low": [0.0, MU - Q * se]}, index=["top", "rival"])
    report = SimpleNamespace(tier=SimpleNamespace(table=table, members=("top", "rival")),
                             settings=SimpleNamespace(level=0.95),
                             point=SimpleNamespace(scores=pd.DataFrame({"crs": [MU, 0.0]}, index=["top", "rival"])))
    return advice.separation_table(report, advice.Evidence(n_test=PILOT, n_seeds=3)).loc["rival"]


def _separated_share(n: int, rng: np.random.Generator) -> float:
    d = rng.normal(MU, SIGMA, size=(REPEATS, n))
    bound = d.mean(axis=1) - Q * d.std(axis=1, ddof=1) / math.sqrt(n)
    return float((bound > 0).mean())


def test_the_advised_number_of_cases_separates_at_the_stated_rate():
    row = _advised()
    assert row["diff_low"] < 0  # the pilot did not separate them
    rng = np.random.default_rng(0)
    mc = math.sqrt(advice.SEPARATION_POWER * (1 - advice.SEPARATION_POWER) / REPEATS)  # 0.0063
    share = _separated_share(int(row["n_power"]), rng)
    assert abs(share - advice.SEPARATION_POWER) < 3 * mc + 0.01, share
    half = _separated_share(int(row["n_half"]), rng)
    assert abs(half - 0.5) < 3 * math.sqrt(0.25 / REPEATS) + 0.01, half
    # and the pilot's own size separates them less often than half the time (Phi(mu / se - q) = 0.39)
    assert _separated_share(PILOT, rng) < 0.45
