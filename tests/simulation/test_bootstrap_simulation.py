"""The paired case-and-seed bootstrap against a known population (PROTOCOL section 8).

Four encoders differ in AUROC, calibration slope, label hunger and fragility, on one APTOS-sized
test set (732 cases in clusters of two sharing a difficulty, shared by every encoder), 5 seeds,
label fractions 10% and 100%, one perturbation at three severities (crsbench.simulation.cohort). The
population CRS is exact (binormal AUROC, integrated ECE, Gauss-Hermite seed expectation).

REPETITIONS cohorts, 300 draws each, with the default CRS (equal weights, the Brier skill as the
calibration axis). The true best, d, is the worst calibrated by ECE (population ECE 0.055; a's is 0):
the cohort checks that the score finds the best encoder when it is not the best calibrated one.
Measured (seed 2024): population CRS a 0, b 3.72, c -4.84, d 5.14 (gap d - b 1.43); CRS 95% intervals
of the three non-reference encoders covered the population CRS 0.935 of the time on average (per
encoder 0.95, 0.92, 0.935); the simultaneous tier contained the true best in 1.000 of repetitions
(mean size 2.69 of 4); the point winner was the true best in 0.615 (chance 0.25); the point estimate's
bias was b -0.07, c -0.70, d -0.24 (each +-0.23-0.26 Monte Carlo s.e.), a quarter or less of each
encoder's distance to its nearest neighbour; P10: the point top of a fresh test set (the next
repetition) was inside this repetition's tier in 0.965 (asserted >= 0.90). Monte Carlo standard error: coverage
sqrt(0.95 * 0.05 / 200) = 0.015 per encoder (at most that for the mean of three), tier
sqrt(0.9 * 0.1 / 200) = 0.021 at the 0.90 bound, point winner 0.034. The test prints its own figures.
Under the previous definition (soft minimum of fixed-scale units) the point winner was the true best
no more often than chance, with a bias of -0.31 to -0.61 against a gap of 0.46.

The probe's refit noise at 100 % labels is not part of these cohorts (every seed shares the fit there,
as in the protocol); the seed noise below 100 % is. Cohorts calibrated to real embeddings, with the refit
noise inside the target, are in tests/simulation/test_real_profile_simulation.py; the tests at the end of this file
check the simulation functions they use (more classes, refits, twins, design_from_records).
"""

import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from crsbench.scoring.axes import AXES, compute_axes, debiased_calibration_errors
from crsbench.scoring.case_bootstrap import case_bootstrap
from crsbench.crs.definition import CRSConfig
from crsbench.simulation.cohort import (
    Design,
    EncoderTruth,
    population_axes,
    population_calibration_errors,
    population_crs,
    realise_refits,
    records_from_predictions,
    simulate,
)
from crsbench.simulation.fit import design_from_records, fit_class_profile

ENCODERS = (
    EncoderTruth("a", separation=1.20, slope=1.00, hunger=0.25, fragility=0.15),  # the reference
    EncoderTruth("b", separation=1.35, slope=0.80, hunger=0.35, fragility=0.25),
    EncoderTruth("c", separation=1.05, slope=1.15, hunger=0.15, fragility=0.10),
    EncoderTruth("d", separation=1.45, slope=0.70, hunger=0.45, fragility=0.35),
)
DESIGN = Design(ENCODERS, n_cases=732)
REPETITIONS = 200
DRAWS = 300


@pytest.mark.slow
def test_intervals_cover_the_population_crs_and_the_tier_holds_the_true_best():
    """P10 and P14 on a cohort whose true best (d) is the worst calibrated by ECE (0.055; a's is 0)."""
    config = CRSConfig(n_boot=DRAWS, n_weight_draws=0)
    truth = population_crs(DESIGN, "a", config)
    best = truth.idxmax()
    runner_up_gap = float(truth.max() - truth.drop(best).max())
    rng = np.random.default_rng(2024)
    covered, holds_best, sizes, point_top, points, tiers, tops = [], [], [], [], [], [], []
    started = time.perf_counter()
    axis_scores = None
    for repetition in range(REPETITIONS):
        records, stored = simulate(DESIGN, rng)
        # same grid every time; the bootstrap recomputes every value, draw 0 included
        axis_scores = axis_scores or compute_axes(records, delta=config.delta, predictions=stored)
        boot = case_bootstrap(records, stored, axis_scores, "a", config.model_copy(update={"seed": repetition}))
        intervals = boot.overall.intervals
        covered.append([intervals.loc[e, "ci_low"] <= truth[e] <= intervals.loc[e, "ci_high"] for e in "bcd"])
        holds_best.append(best in boot.overall.leading_tier)
        sizes.append(len(boot.overall.leading_tier))
        point_top.append(boot.overall.top == best)
        tiers.append(set(boot.overall.leading_tier))
        tops.append(boot.overall.top)
        points.append(intervals["crs"])
    per_encoder = np.mean(covered, axis=0)
    coverage, tier_rate, top_rate = float(per_encoder.mean()), float(np.mean(holds_best)), float(np.mean(point_top))
    bias = pd.DataFrame(points).mean() - truth
    # P10: a fresh draw of the noise (the next repetition) moves the top only within this one's tier
    stays = float(np.mean([top in tier for tier, top in zip(tiers[:-1], tops[1:])]))
    se_coverage = np.sqrt(0.95 * 0.05 / REPETITIONS)
    se_tier = np.sqrt(0.9 * 0.1 / REPETITIONS)
    se_top = np.sqrt(top_rate * (1 - top_rate) / REPETITIONS)
    se_bias = pd.DataFrame(points).std() / np.sqrt(REPETITIONS)
    print(f"\n{REPETITIONS} repetitions x {DRAWS} draws in {time.perf_counter() - started:.0f} s; population CRS "
          f"{truth.round(3).to_dict()}, true best {best} (gap to the runner-up {runner_up_gap:.2f})")
    print(f"coverage {coverage:.3f} (per encoder {dict(zip('bcd', per_encoder.round(3)))}), MC s.e. {se_coverage:.3f}")
    print(f"tier holds the true best {tier_rate:.3f} (MC s.e. {se_tier:.3f}), mean tier size {np.mean(sizes):.2f} of 4")
    print(f"point top is the true best {top_rate:.3f} (MC s.e. {se_top:.3f}; chance 0.25)")
    print(f"point bias {bias.round(3).to_dict()} (MC s.e. {se_bias.round(3).to_dict()})")
    print(f"P10: the next repetition's top is inside this repetition's tier in {stays:.3f}")
    assert 0.92 <= coverage <= 0.98
    assert per_encoder.min() >= 0.90
    assert tier_rate >= 0.90
    assert top_rate - 3 * se_top > 0.25  # clearly better than picking at random
    assert stays >= 0.90
    # small against the gaps it decides: each encoder's distance to its nearest neighbour in the population
    ordered = truth.sort_values()
    nearest = pd.Series(np.minimum(ordered.diff().fillna(np.inf), -ordered.diff(-1).fillna(-np.inf)), index=ordered.index)
    assert (bias.abs() < 0.25 * nearest.reindex(bias.index)).all()


def _calibration_estimates(repetitions: int):
    """Raw ECE and the debiased error of each encoder's clean vector on `repetitions` test sets."""
    design = Design(ENCODERS, n_cases=732, seeds=(0,), fractions=(1.0,), perturbations=())
    rng = np.random.default_rng(0)
    raw, debiased, skill = [], [], []
    for _ in range(repetitions):
        records, stored = simulate(design, rng)
        raw.append(records.set_index("encoder")["ece"])
        errors = debiased_calibration_errors(records, stored)
        debiased.append(records.set_index("encoder")["record_key"].map(errors))
        skill.append(compute_axes(records).table["calibration"])
    return pd.DataFrame(raw), pd.DataFrame(debiased), pd.DataFrame(skill)


@pytest.mark.slow
def test_the_brier_skill_axis_is_unbiased_where_binned_calibration_errors_are_not():
    """Why the calibration axis is the Brier skill: on 732 cases (40 test sets) raw ECE sits above the
    population ECE by more than 0.02 for the perfectly calibrated encoder, and the debiased error,
    floored at 0, stays high there (measured +0.015) while the Brier skill, a mean of per-case losses,
    is within 0.01 of its population value for every encoder (its standard deviation over test sets
    is about 0.03, so the mean of 40 has a standard error of about 0.005)."""
    raw, debiased, skill = _calibration_estimates(40)
    population = population_calibration_errors(DESIGN)
    ece, rms = population["ece"], population["rms"]
    skill_bias = skill.mean() - population_axes(DESIGN)["calibration"]
    print(f"\nBrier skill bias {skill_bias.round(4).to_dict()}, sd over test sets {skill.std().round(4).to_dict()}")
    assert (skill_bias.abs() < 0.01).all()
    assert ece["a"] == pytest.approx(0.0, abs=1e-6) and rms["a"] == pytest.approx(0.0, abs=1e-6)
    raw_bias, debiased_bias = raw.mean() - ece, debiased.mean() - rms
    assert raw.min()["a"] > 0.01 and raw_bias["a"] > 0.02
    assert debiased_bias["a"] < 0.02
    assert (debiased_bias[["b", "c", "d"]].abs() < 0.01).all()
    assert (debiased_bias.abs() < raw_bias.abs()).all()


def fifteen_encoder_design() -> Design:
    """15 encoders at the published cohort size: separation 0.9-1.5, calibration slopes 0.7-1.2, label
    hunger and fragility drawn (seed 15); 732 cases."""
    rng = np.random.default_rng(15)
    encoders = tuple(
        EncoderTruth(f"e{i:02d}", separation=float(s), slope=float(sl), hunger=float(h), fragility=float(f))
        for i, (s, sl, h, f) in enumerate(zip(np.linspace(0.9, 1.5, 15), rng.uniform(0.7, 1.2, 15),
                                              rng.uniform(0.15, 0.45, 15), rng.uniform(0.1, 0.35, 15))))
    return Design(encoders, n_cases=732)


@pytest.mark.slow
def test_a_fifteen_encoder_cohort_gets_a_small_tier_that_still_holds_the_true_best():
    """P14 at the published cohort size: 15 encoders (separation 0.9-1.5, calibration slopes 0.7-1.2,
    hunger and fragility drawn), 732 cases, 60 repetitions x 300 draws. Measured (seed 2025): the tier
    held the true best in 1.000 of repetitions with mean size 5.17 of 15 (the previous definition kept
    14.6-14.8); the point winner was the true best in 0.600 (chance 0.067; Monte Carlo s.e. 0.063);
    coverage 0.964 (s.e. about 0.01 for the mean over 14 encoders); of the 8 encoders more than 3
    standard deviations of their difference behind the best, 0.981 were left out of the tier."""
    design = fifteen_encoder_design()
    config = CRSConfig(n_boot=DRAWS, n_weight_draws=0)
    truth = population_crs(design, "e00", config)
    best = truth.idxmax()
    rng = np.random.default_rng(2025)
    repetitions = 60
    coverage, holds, sizes, tops, points, tiers = [], [], [], [], [], []
    axis_scores = None
    for repetition in range(repetitions):
        records, stored = simulate(design, rng)
        axis_scores = axis_scores or compute_axes(records, predictions=stored)
        boot = case_bootstrap(records, stored, axis_scores, "e00", config.model_copy(update={"seed": repetition}))
        intervals = boot.overall.intervals
        coverage.append(np.mean([intervals.loc[e, "ci_low"] <= truth[e] <= intervals.loc[e, "ci_high"]
                                 for e in truth.index if e != "e00"]))
        holds.append(best in boot.overall.leading_tier)
        sizes.append(len(boot.overall.leading_tier))
        tops.append(boot.overall.top == best)
        points.append(intervals["crs"])
        tiers.append(set(boot.overall.leading_tier))
    frame = pd.DataFrame(points)
    spread = (frame[best].to_numpy()[:, None] - frame.to_numpy()).std(axis=0)
    far = [e for e, gap, sd in zip(truth.index, truth[best] - truth, spread) if e != best and gap > 3 * sd]
    left_out = float(np.mean([[e not in tier for e in far] for tier in tiers]))
    print(f"\ntier holds the true best {np.mean(holds):.3f}, mean size {np.mean(sizes):.2f} of 15, point top = best "
          f"{np.mean(tops):.3f}, coverage {np.mean(coverage):.3f}, far encoders left out {left_out:.3f} of {len(far)}")
    assert np.mean(holds) >= 0.90
    assert np.mean(sizes) <= 8
    assert np.mean(tops) > 3 / 15
    assert 0.90 <= np.mean(coverage) <= 0.99
    assert far and left_out >= 0.9


@pytest.mark.slow
def test_the_mean_of_skills_finds_the_true_top_more_often_than_a_soft_minimum():
    """Why the CRS is a mean (docs/crs.md, section 2): on the 15-encoder cohort, 60 test sets, the
    point top under each aggregate against that aggregate's own population top. Measured: mean 0.62,
    soft minimum tau 0.25 0.47, tau 0.1 0.37, minimum 0.55. Asserted: the mean beats the tau = 0.1 soft
    minimum by more than 2 standard errors of the paired difference."""
    design = fifteen_encoder_design()
    config = CRSConfig()
    axes = list(population_axes(design).columns)
    anchors, spans = config.anchor_vector(axes), config.scale_vector(axes)

    def soft_min(u, tau):
        return -tau * np.log(np.mean(np.exp(-u / tau), axis=-1))

    population = (population_axes(design).to_numpy() - anchors) / spans
    rng = np.random.default_rng(7)
    hits = []
    for _ in range(60):
        records, _ = simulate(design, rng)
        u = (compute_axes(records).table[axes].to_numpy() - anchors) / spans
        hits.append([np.argmax(f(u)) == np.argmax(f(population))
                     for f in (lambda v: v.mean(-1), lambda v: soft_min(v, 0.1))])
    hits = np.array(hits, dtype=float)
    difference = hits[:, 0] - hits[:, 1]
    se = difference.std(ddof=1) / np.sqrt(len(difference))
    print(f"\npoint top = true top: mean {hits[:, 0].mean():.2f}, soft minimum {hits[:, 1].mean():.2f} (paired s.e. {se:.3f})")
    assert difference.mean() > 2 * se


# --------------------------------------------------------------------------- the functions of real-calibrated designs

THREE = (0.5, 0.3, 0.2)


def _three_class_design(n_cases: int, **changes) -> Design:
    encoders = (EncoderTruth("a", 1.1, 1.0, 0.25, 0.3, class_profile=(1.5, 0.7, 0.8)),
                EncoderTruth("b", 1.3, 0.8, 0.35, 0.6), EncoderTruth("c", 0.9, 1.3, 0.15, 1.4))
    return Design(encoders, n_cases=n_cases, cluster_size=1, n_classes=3, class_priors=THREE, difficulty_sd=0.8,
                  seed_sd=0.08, **changes)


@pytest.mark.slow
def test_the_population_of_a_three_class_design_is_what_a_large_test_set_measures():
    """More than two classes: the population axes come from a fixed sample of 40,000 cases; a simulated test
    set of 30,000 cases (2 seeds) measures the same within its own sampling error (AUROC s.e. about 0.004).
    Encoder c's fragility of 1.4 takes its AUROC at severity 5 below chance (the clean probe on images whose
    class scores point the other way)."""
    design = _three_class_design(30_000, seeds=(0, 1), test_priors=(0.45, 0.35, 0.2))
    records, _ = simulate(design, np.random.default_rng(3))
    measured = compute_axes(records).table[list(population_axes(design).columns)]
    population = population_axes(design)
    assert (measured - population).abs().max().max() < 0.015
    assert records.loc[(records["encoder"] == "c") & (records["severity"] == 5), "auroc"].max() < 0.5


def test_two_class_designs_are_unchanged_by_the_new_options():
    """class_priors, test_priors, refit_sd, class_profile and twin_of left at their defaults: the same records
    as before them (the published figures of this file rest on them)."""
    design = Design(ENCODERS, n_cases=60)
    first, _ = simulate(design, np.random.default_rng(1))
    again, _ = simulate(Design(tuple(EncoderTruth(t.name, t.separation, t.slope, t.hunger, t.fragility) for t in ENCODERS),
                               n_cases=60), np.random.default_rng(1))
    pd.testing.assert_frame_equal(first, again)
    assert population_crs(DESIGN, "a", CRSConfig()).round(3).to_dict() == {"a": 0.0, "b": 3.716, "c": -4.835, "d": 5.143}


@pytest.mark.slow
def test_design_from_records_recovers_a_simulated_cohort():
    """The round trip: a cohort simulated from known parameters on 20,000 cases, read back by
    design_from_records, gives those parameters (within the sampling error of that test set) and a design
    whose population axes equal the measured ones."""
    for truth_design in (Design(ENCODERS[:3], n_cases=20_000, cluster_size=1, difficulty_sd=0.8, seed_sd=0.08,
                                prevalence=0.3, test_priors=(0.6, 0.4)),
                         _three_class_design(20_000)):
        records, stored = simulate(truth_design, np.random.default_rng(5))
        fitted = design_from_records(records, stored, refit_auroc_sd={"a": 0.01})
        measured = compute_axes(records).table[list(AXES)]
        gap = (population_axes(fitted) - measured.loc[population_axes(fitted).index]).abs().max()
        # the Brier skill as near as the model reaches: a sampled skill above the calibrated maximum stays there
        assert gap.drop("calibration").max() < 2e-3 and gap["calibration"] < 0.01
        assert fitted.n_cases == 20_000 and fitted.n_classes == truth_design.n_classes
        assert fitted.difficulty_sd == pytest.approx(0.8, abs=0.05) and fitted.seed_sd == pytest.approx(0.08, abs=0.03)
        by_name = {t.name: t for t in fitted.encoders}
        for t in truth_design.encoders:
            got = by_name[t.name]
            assert got.separation == pytest.approx(t.separation, rel=0.05)
            assert got.fragility == pytest.approx(t.fragility, abs=0.05)
            assert got.hunger == pytest.approx(t.hunger, abs=0.08)
            assert got.slope == pytest.approx(t.slope, abs=0.25)  # the Brier skill is flat in the slope near 1
        assert by_name["a"].refit_sd > 0 and by_name["b"].refit_sd == 0


def test_the_class_profile_fit_reproduces_the_aurocs_per_class():
    from crsbench.simulation.cohort import population_key, many_class_values

    design = _three_class_design(100)
    target = many_class_values(1.0, 1.0, *population_key(design), (1.6, 0.6, 0.8))[2]
    profile = fit_class_profile(target, design)
    got = many_class_values(1.0, 1.0, *population_key(design), profile)[2]
    np.testing.assert_allclose(got, target, atol=0.01)
    assert np.mean(profile) == pytest.approx(1.0)


def test_refits_scale_the_separation_and_their_expectation_is_exact():
    """realise_refits draws nothing for an encoder without refit_sd; with one, the expected AUROC over refits
    is E[Phi(mu (1 + s g) / sqrt(V))] = Phi(mu / sqrt(V + mu^2 s^2)) for two classes."""
    from scipy.stats import norm

    design = Design((EncoderTruth("a", 1.2, refit_sd=0.1), EncoderTruth("b", 1.0)), n_cases=50)
    rng, twin = np.random.default_rng(0), np.random.default_rng(0)
    realised = realise_refits(design, rng)
    assert realised.encoders[1] == design.encoders[1]
    assert realised.encoders[0].separation == pytest.approx(1.2 * (1 + 0.1 * twin.normal()))
    expected = population_axes(design, over_refits=True).loc["a", "discrimination"]
    assert expected == pytest.approx(norm.cdf(1.2 / np.sqrt(design.variance + 1.2**2 * 0.01)), abs=1e-6)
    assert population_axes(design).loc["b"].equals(population_axes(design, over_refits=True).loc["b"])


def test_each_task_of_a_realised_run_has_its_own_training_sample():
    """Every task has its own training split, so a run's probes deviate independently between tasks: one
    draw per task, the first task's in `separation`, each task's records made with its own."""
    design = Design((EncoderTruth("a", 1.2, refit_sd=0.1), EncoderTruth("b", 1.0)), n_cases=400,
                    tasks=("t1", "t2"), seeds=(0,), fractions=(1.0,), perturbations=())
    rng, twin = np.random.default_rng(4), np.random.default_rng(4)
    realised = realise_refits(design, rng)
    expected = 1.2 * (1 + 0.1 * twin.normal(size=2))
    np.testing.assert_allclose(realised.encoders[0].task_separations, expected)
    assert realised.encoders[0].separation == expected[0] and realised.encoders[1] == design.encoders[1]
    assert realised.encoders[0].on_task(1).separation == expected[1]
    # the same noise with the second task's separation in both tasks gives the second task's records
    swapped = replace(realised, encoders=(replace(realised.encoders[0], task_separations=(expected[1],) * 2),
                                          realised.encoders[1]))
    records, _ = simulate(realised, np.random.default_rng(9))
    again, _ = simulate(swapped, np.random.default_rng(9))
    t2 = records["task"] == "t2"
    np.testing.assert_array_equal(records.loc[t2, "auroc"], again.loc[t2, "auroc"])
    assert not np.array_equal(records.loc[~t2 & (records["encoder"] == "a"), "auroc"],
                              again.loc[~t2 & (again["encoder"] == "a"), "auroc"])


def test_a_twin_shares_its_encoders_noise_and_records_from_predictions_round_trips():
    design = Design((EncoderTruth("a", 1.2), EncoderTruth("a-twin", 1.2, twin_of="a"),
                     EncoderTruth("a-worse", 1.2, fragility=0.5, twin_of="a")), n_cases=200, seeds=(0, 1))
    records, stored = simulate(design, np.random.default_rng(2))
    by = records.set_index(["encoder", "seed", "fraction", "condition", "severity"])["auroc"]
    np.testing.assert_array_equal(by.loc["a"].to_numpy(), by.loc["a-twin"].to_numpy())
    clean = records[records["condition_kind"] == "clean"].set_index(["encoder", "seed", "fraction"])["auroc"]
    np.testing.assert_array_equal(clean.loc["a"].to_numpy(), clean.loc["a-worse"].to_numpy())
    assert (by.loc["a-worse"].xs(5, level="severity") < by.loc["a"].xs(5, level="severity")).all()
    index = stored.index
    vectors = [(r.encoder, r.seed, r.fraction, r.condition_kind, r.condition, r.severity, stored.probabilities(r.probs))
               for r in index.itertuples()]
    labels = stored.case_set(index["test_set"].iloc[0]).labels
    rebuilt, _ = records_from_predictions("sim", labels, vectors, [6000, 4000])
    pd.testing.assert_frame_equal(compute_axes(rebuilt).table, compute_axes(records).table)


PAIRED_REPETITIONS = 100  # paired, so the engines' difference is tight with half the cohorts of the test above


@pytest.mark.slow
def test_the_linearised_engine_covers_as_the_exact_one_on_the_same_cohorts():
    """The same PAIRED_REPETITIONS cohorts and draws scored by both engines (case_bootstrap.ENGINES): the
    linearised AUROC draws must reach the exact engine's coverage of the population CRS and find the same tier.

    Paired on the same cohorts and draws, so the difference in coverage has a far smaller Monte Carlo error
    than either figure: the share of (repetition, encoder) intervals on which the two engines disagree about
    covering bounds it. Measured (seed 2024, 732 cases, 100 cohorts): coverage exact 0.933, linearised 0.933
    (each +-0.021 Monte Carlo s.e. alone, so the absolute band is the documented 0.90-0.98), intervals
    disagreeing on coverage 0 of 300; tiers identical in 98 of 100 cohorts; endpoints differ by a median
    0.6 % and at most 3.7 % of the interval's width (200 cohorts: 0.933 vs 0.935, 3 of 600, 196 of 200)."""
    config = CRSConfig(n_boot=DRAWS, n_weight_draws=0)
    truth = population_crs(DESIGN, "a", config)
    rng = np.random.default_rng(2024)
    covered = {"batched": [], "linearised": []}
    same_tier, shifts = [], []
    axis_scores = None
    for repetition in range(PAIRED_REPETITIONS):
        records, stored = simulate(DESIGN, rng)
        axis_scores = axis_scores or compute_axes(records, delta=config.delta, predictions=stored)
        seeded = config.model_copy(update={"seed": repetition})
        boots = {engine: case_bootstrap(records, stored, axis_scores, "a", seeded, engine=engine) for engine in covered}
        for engine, boot in boots.items():
            intervals = boot.overall.intervals
            covered[engine].append([intervals.loc[e, "ci_low"] <= truth[e] <= intervals.loc[e, "ci_high"] for e in "bcd"])
        same_tier.append(boots["batched"].overall.leading_tier == boots["linearised"].overall.leading_tier)
        exact, linear = boots["batched"].overall.intervals, boots["linearised"].overall.intervals
        width = (exact["ci_high"] - exact["ci_low"]).loc[list("bcd")]
        for bound in ("ci_low", "ci_high"):
            shifts += list(((linear[bound] - exact[bound]).loc[list("bcd")].abs() / width).to_numpy())
    exact_hits, linear_hits = np.array(covered["batched"]), np.array(covered["linearised"])
    coverage_exact, coverage_linear = float(exact_hits.mean()), float(linear_hits.mean())
    disagreement = float((exact_hits != linear_hits).mean())
    print(f"\ncoverage exact {coverage_exact:.3f}, linearised {coverage_linear:.3f}; intervals disagreeing on "
          f"coverage {disagreement:.4f} of {exact_hits.size}; same tier in {np.mean(same_tier):.3f} of {PAIRED_REPETITIONS}; "
          f"endpoint shift / width: median {np.median(shifts):.4f}, max {np.max(shifts):.4f}")
    assert 0.90 <= coverage_linear <= 0.98
    assert disagreement <= 0.02  # |coverage difference| <= the disagreement share
    assert np.mean(same_tier) >= 0.95
    assert np.median(shifts) < 0.05
