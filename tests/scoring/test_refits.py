"""Training samples in the bootstrap (scoring/refits.py): refit deviations drawn as a paired multivariate t,
the fitted probes' intervals kept by name, and stores without refits scored as before, saying so."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench.crs.definition import CRSConfig
from crsbench.scoring.axes import compute_axes
from crsbench.scoring.case_bootstrap import CASE_LABEL, case_bootstrap
from crsbench.scoring.refits import (MIN_REFITS, RefitSpread, cross_task_terms, satterthwaite_df, spread_about,
                                    target_sentence, task_refit_draws, whole_curve)
from crsbench.scoring.score import score_records
from crsbench.simulation.cohort import Design, EncoderTruth, simulate

CONFIG = CRSConfig(n_boot=300, n_weight_draws=0)
DESIGN = Design((EncoderTruth("a", 1.5, refit_sd=0.12), EncoderTruth("b", 1.3, slope=1.3, refit_sd=0.12),
                 EncoderTruth("c", 1.1, refit_sd=0.1)), n_cases=200, fractions=(0.1, 1.0))


@pytest.fixture(scope="module")
def cohort():
    records, stored = simulate(DESIGN, np.random.default_rng(3), refits=6)
    return records, stored, compute_axes(records)


def test_refit_terms_have_the_refits_covariance_as_a_t_and_are_paired():
    rng = np.random.default_rng(0)
    k = 8
    base = rng.normal(size=(k, 1, 2))
    deviations = np.concatenate([base, base, 2 * base], axis=1)  # encoders 0 and 1 moved by the same resample
    deviations -= deviations.mean(axis=0, keepdims=True)
    terms = task_refit_draws(deviations, 200_001, rng)[0]
    assert np.all(terms[0] == 0)
    np.testing.assert_array_equal(terms[:, 0], terms[:, 1])  # one resample for every encoder: paired
    np.testing.assert_allclose(terms[:, 2], 2 * terms[:, 0])
    sample = np.einsum("kea,kfb->eafb", deviations, deviations) / (k - 1)
    drawn = np.einsum("nea,nfb->eafb", terms[1:], terms[1:]) / (len(terms) - 1)
    # multivariate t with k - 1 degrees of freedom: covariance (k - 1) / (k - 3) times the sample covariance;
    # the t's fourth moment makes the Monte Carlo error of this check about 1 %
    np.testing.assert_allclose(drawn, sample * (k - 1) / (k - 3), rtol=0.05, atol=1e-9)


def test_the_curve_moves_with_the_refits_auroc():
    rng = np.random.default_rng(1)
    axes = rng.normal(size=(5, 3, 4))
    names = ("discrimination", "calibration", "label_efficiency", "robustness")
    moved = whole_curve(axes, names)
    dev = moved - moved.mean(axis=0)
    np.testing.assert_allclose(dev[..., 2], (axes - axes.mean(axis=0))[..., 0])
    np.testing.assert_allclose(moved.mean(axis=0)[..., 2], axes.mean(axis=0)[..., 2])
    np.testing.assert_array_equal(moved[..., [0, 1, 3]], axes[..., [0, 1, 3]])


def test_refits_widen_the_intervals_and_the_fitted_probes_keep_todays(cohort):
    records, stored, axis_scores = cohort
    with_refits = case_bootstrap(records, stored, axis_scores, "a", CONFIG)
    without = case_bootstrap(records[records["refit"] == 0], stored, axis_scores, "a", CONFIG)
    assert with_refits.training_samples and with_refits.refits == {"sim": 6}
    assert not without.training_samples and without.label == CASE_LABEL
    # the case and seed counts are the same draws with or without refits: the fitted probes' summaries are today's
    for scope, result in without.results.items():
        pd.testing.assert_frame_equal(with_refits.fitted_probes[scope].intervals, result.intervals)
    wide = with_refits.overall.intervals
    narrow = without.overall.intervals
    assert ((wide["ci_high"] - wide["ci_low"]) > (narrow["ci_high"] - narrow["ci_low"])).loc[["b", "c"]].all()
    np.testing.assert_array_equal(wide["crs"], narrow["crs"])  # the point is the run's own probes
    asked = case_bootstrap(records, stored, axis_scores, "a", CONFIG.model_copy(update={"target": "fitted-probes"}))
    pd.testing.assert_frame_equal(asked.overall.intervals, narrow)
    assert not asked.training_samples


def test_a_refit_missing_a_record_is_left_out_and_named(cohort):
    records, stored, axis_scores = cohort
    gone = records.index[(records["refit"] == 2) & (records["encoder"] == "b") & (records["condition_kind"] == "clean")]
    boot = case_bootstrap(records.drop(gone), stored, axis_scores, "a", CONFIG)
    assert boot.refits == {"sim": 5}
    assert any("refit 2" in note for note in boot.refit_notes)


def test_below_three_refits_a_task_gets_no_t_term_and_every_output_says_so(cohort):
    # two refits would give a t with one degree of freedom (a Cauchy): the task falls back to these fitted probes
    records, stored, axis_scores = cohort
    two = records[records["refit"] <= 2]
    boot = case_bootstrap(two, stored, axis_scores, "a", CONFIG)
    assert MIN_REFITS == 3 and not boot.training_samples and boot.refits == {}
    note = next(note for note in boot.refit_notes if note.startswith("sim: 2 complete refit"))
    assert "1 degree(s) of freedom" in note and "fitted probes only" in note
    plain = case_bootstrap(records[records["refit"] == 0], stored, axis_scores, "a", CONFIG)
    pd.testing.assert_frame_equal(boot.overall.intervals, plain.overall.intervals)
    scored = score_records(two, "a", CONFIG, predictions=stored)
    assert note in scored.notes and note in scored.summary()["notes"]
    assert "training variability is not included" in scored.intervals.target
    three = case_bootstrap(records[records["refit"] <= 3], stored, axis_scores, "a", CONFIG)
    assert three.training_samples and three.refits == {"sim": 3}


def test_every_output_says_what_the_interval_covers(cohort):
    records, stored, _ = cohort
    scored = score_records(records, "a", CONFIG, predictions=stored)
    assert "expected over training samples" in scored.intervals.target
    summary = scored.summary()
    assert summary["interval_target"] == scored.intervals.target
    fitted = summary["fitted_probes"]["by_scope"]["overall"]
    assert set(fitted["intervals"]) == {"a", "b", "c"}
    old = score_records(records[records["refit"] == 0].drop(columns="refit"), "a", CONFIG, predictions=stored)
    assert "training variability is not included" in old.intervals.target
    assert "refits:" in old.intervals.target and "crsbench run" in old.intervals.target
    assert old.summary()["fitted_probes"] is None


def test_the_sentence_for_each_kind_of_bootstrap():
    assert "seeds only" in target_sentence("seeds")
    assert "No bootstrap" in target_sentence("none")
    assert "as asked" in target_sentence("cases", {}, "fitted-probes")
    assert "4 paired refits" in target_sentence("cases", {"t": 4})


def test_the_leading_gap_splits_into_test_cases_training_samples_and_seeds(cohort):
    from crsbench.scoring.gap_variance import gap_sentence

    records, stored, _ = cohort
    gap = score_records(records, "a", CONFIG, predictions=stored).intervals.gap_variance
    parts = gap["variance"]
    assert all(v >= 0 for v in parts.values()) and parts["training samples"] > 0
    assert sum(gap["share"].values()) == pytest.approx(1.0)
    for source, se_after in gap["se_doubled"].items():  # the printed effect follows from the printed parts
        assert se_after ** 2 == pytest.approx(gap["se"] ** 2 - parts[source] / 2)
    assert gap["best"] == max(parts, key=parts.get)
    sentence = gap_sentence(gap)
    assert f"{gap['se']:.2f}" in sentence and "narrow the tier most" in sentence
    old = score_records(records[records["refit"] == 0], "a", CONFIG, predictions=stored).intervals.gap_variance
    assert old["variance"]["training samples"] is None and "unknown" in gap_sentence(old)


def test_satterthwaite_degrees_of_freedom():
    equal = satterthwaite_df([np.array([2.0]), np.array([2.0]), np.array([2.0])], [3, 3, 3])
    assert equal[0] == pytest.approx(9.0)  # equal variances pool every refit
    alone = satterthwaite_df([np.array([0.0, 1.0]), np.array([4.0, 0.0])], [3, 5])
    np.testing.assert_allclose(alone, [5.0, 3.0])  # one task varies: that task's own df
    mixed = satterthwaite_df([np.array([1.0]), np.array([0.25])], [3, 3])
    assert mixed[0] == pytest.approx(1.25**2 / ((1 + 0.0625) / 3))
    assert satterthwaite_df([np.zeros(1), np.zeros(1)], [3, 7])[0] == 3.0


def test_cross_task_terms_are_paired_and_reduce_to_the_tasks_t_where_one_task_varies():
    rng = np.random.default_rng(5)
    k, n = 4, 100_001
    base = rng.normal(size=(k, 1, 1))
    deviations = np.concatenate([base, base], axis=1) - base.mean(axis=0)
    still = np.zeros_like(deviations)
    t_term, normal = task_refit_draws(deviations, n, rng)
    _, quiet = task_refit_draws(still, n, rng)
    terms = cross_task_terms([normal, quiet], [deviations, still], rng.random(n))
    assert np.all(terms[0] == 0)
    np.testing.assert_array_equal(terms[:, 0], terms[:, 1])
    # one task varies: the Satterthwaite df is its K - 1, so the term has the t's quantiles, as the task's own
    quantiles = [0.025, 0.25, 0.75, 0.975]
    np.testing.assert_allclose(np.quantile(terms[1:, 0, 0], quantiles), np.quantile(t_term[1:, 0, 0], quantiles),
                               rtol=0.05)


def _sum_coverage(spreads, combined: bool, runs: int, seed: int, k: int = 4, draws: int = 1000) -> float:
    """How often the 95 % interval of a sum over tasks of refit deviations covers the sum's true deviation,
    each task's spread estimated from k refits; combined: one Satterthwaite-mixed term, else the tasks' t
    terms added."""
    rng = np.random.default_rng(seed)
    spreads = np.asarray(spreads, dtype=float)
    hits = 0
    for _ in range(runs):
        refits = rng.normal(size=(k, len(spreads))) * spreads
        deviations = [(refits[:, [t]] - refits[:, [t]].mean(axis=0))[:, :, None] for t in range(len(spreads))]
        truth = float(rng.normal(size=len(spreads)) @ spreads)
        drawn = [task_refit_draws(d, draws + 1, rng) for d in deviations]
        if combined:
            term = cross_task_terms([n for _, n in drawn], deviations, rng.random(draws + 1))
        else:
            term = sum(t for t, _ in drawn)
        low, high = np.quantile(term[1:, 0, 0], [0.025, 0.975])
        hits += low <= truth <= high
    return hits / runs


@pytest.mark.parametrize("spreads", [(1.0, 1.0, 1.0), (1.0, 0.5, 0.3), (1.0, 0.2, 0.2)])
def test_the_cross_task_term_covers_a_sum_of_tasks_as_stated(spreads):
    """Coverage of the sum's deviation by the cross-task term over 600 simulated runs: Monte Carlo s.e.
    sqrt(0.95 x 0.05 / 600) = 0.009, so the 0.92-0.98 band is asserted with 3 s.e. to spare on each side
    (measured 0.957, 0.946 and 0.941 at 3,000 runs, s.e. 0.004). The tasks' t terms added, for three equal
    tasks, cover 0.991 at 3,000 runs: the Behrens-Fisher predictive this replaces."""
    se = np.sqrt(0.95 * 0.05 / 600)
    coverage = _sum_coverage(spreads, combined=True, runs=600, seed=11)
    assert 0.92 - 3 * se <= coverage <= 0.98 + 3 * se
    if spreads == (1.0, 1.0, 1.0):
        assert _sum_coverage(spreads, combined=False, runs=600, seed=11) > 0.975


def test_a_spread_about_the_runs_own_fit_has_k_degrees_of_freedom_and_moves_the_curve_with_the_auroc():
    rng = np.random.default_rng(2)
    names = ("discrimination", "calibration", "label_efficiency", "robustness")
    axes, centre = rng.normal(size=(4, 3, 4)), rng.normal(size=(3, 4))
    spread = spread_about({"t": axes}, {"t": centre}, {"t": names})
    d = spread.deviations["t"]
    assert d.shape == (5, 3, 4) and np.all(d[-1] == 0) and spread.df("t") == 4 and spread.refits == {"t": 4}
    np.testing.assert_allclose(d[:4, :, [0, 1, 3]], (axes - centre)[..., [0, 1, 3]])
    np.testing.assert_allclose(d[:4, :, 2], (axes - centre)[..., 0])
    # the rows' sum of squares over K is the variance the term draws with: sum d^2 / (rows - 1)
    terms = task_refit_draws(d, 200_001, rng, spread.df("t"))[1]
    np.testing.assert_allclose(terms[1:].var(axis=0), ((axes - centre) ** 2).sum(axis=0)[..., [0, 1, 0, 3]] / 4,
                               rtol=0.03)


def test_the_t_takes_the_degrees_of_freedom_it_is_told():
    rng = np.random.default_rng(4)
    deviations = rng.normal(size=(40, 1, 1))
    deviations -= deviations.mean(axis=0)
    told = task_refit_draws(deviations, 400_001, rng, df=3)[0][1:, 0, 0]
    own = task_refit_draws(deviations, 400_001, rng)[0][1:, 0, 0]
    sd = np.sqrt((deviations**2).sum() / 39)
    # t(3) against t(39): the 97.5 % quantiles 3.18 and 2.02 sd
    assert np.quantile(told, 0.975) / sd == pytest.approx(3.18, rel=0.03)
    assert np.quantile(own, 0.975) / sd == pytest.approx(2.02, rel=0.03)
    doubled = RefitSpread({"t": deviations}, {"t": 40}).scaled(2.0)
    np.testing.assert_array_equal(doubled.deviations["t"], 2 * deviations)
