"""benchmarks/published_comparison.py at its smoke size: it runs, prints the table beside the published
figures, and its pieces hold what its docstring says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "published_comparison.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("published_comparison", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_smoke_size_runs_and_prints_both_definitions_beside_the_published_figures(bench, capsys, tmp_path):
    rows = bench.main(["--smoke", "--seed", "1", "--figure", str(tmp_path / "profiles.png")])
    assert (tmp_path / "profiles.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "published: 21 of 105 reversed, displacement 1.87" in printed
    assert {(r["rho"], r["definition"]) for r in rows} == {(rho, d) for rho in bench.RHOS
                                                           for d in ("mean_of_skills", "components")}
    for row in rows:
        mean, se, low, high = row["n_reversed"]
        assert 0 <= low <= mean <= high <= 105 and 0 < se < 5
    # more correlated axes leave AUROC more in charge: fewer reversals under each definition
    for d in ("mean_of_skills", "components"):
        by_rho = [r["n_reversed"][0] for r in rows if r["definition"] == d]
        assert by_rho[0] > by_rho[-1]


def test_hanley_mcneil_matches_its_closed_form_and_shrinks_with_the_test_set(bench):
    se = bench.hanley_mcneil_se(np.array([0.8]), 1000, 0.3)[0]
    a, n1, n0 = 0.8, 300, 700
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    expected = np.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0))
    assert se == pytest.approx(expected)
    assert bench.hanley_mcneil_se(np.array([0.8]), 20000, 0.3)[0] < se


def test_the_simulated_cohort_has_the_stated_between_axis_correlation(bench):
    """The true-skill correlation is rho; the observed one is close to it (noise and task effects dilute
    it a little). 400 cohorts of 17: the mean off-diagonal correlation of the 15 encoders' observed
    skills lies within 0.1 below rho."""
    rng = np.random.default_rng(0)
    for rho in (0.3, 0.9):
        skills = bench.simulate_skills(rng, rho, 400)[:, : bench.N_ENCODERS]
        flat = skills.reshape(-1, 4)
        corr = np.corrcoef(flat, rowvar=False)[np.triu_indices(4, 1)].mean()
        assert rho - 0.1 < corr <= rho + 0.02


def test_the_real_profiles_are_the_documented_measured_values(bench):
    """The figure's real profiles are those docs/bootstrap.md reports (its "Measured profiles" table)."""
    text = (PATH.parents[1] / "docs" / "bootstrap.md").read_text()
    for rows in bench.REAL_PROFILES.values():
        for auroc, brier_skill, efficiency, robustness in rows:
            assert f"| {auroc:.3f} | {brier_skill:.3f}" in text and f"| {efficiency:.3f} | {robustness:.3f} |" in text
