"""`crsbench select`, the pure parts: task inference, budget planning, recommendation text, cohort checks."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crsbench.errors import DataError
from crsbench.scoring.score_report import empty_subgroups
from crsbench.report import claims
from crsbench.selection import advice
from crsbench.selection.budget import (
    CLEAN_SPLITS,
    MIN_SEEDS,
    SEVERITY_LEVELS,
    CachedEmbeddings,
    CachedShare,
    EncoderCost,
    ImageCounts,
    Protocol,
    cached_share,
    encoding_seconds,
    estimate_seconds,
    fitting_seconds,
    fraction_ladders,
    perturbation_order,
    plan_budget,
)
from crsbench.selection.cohort_checks import fraction_shortfalls, thin_classes, usable_fractions
from crsbench.selection.compose import parse_encoders
from crsbench.selection.duration import format_duration, parse_duration
from crsbench.selection.task import LabelProblem, infer_from_array, infer_from_columns

DERM = ("gaussian_noise", "shot_noise", "defocus_blur", "motion_blur", "jpeg", "pixelate", "brightness_up",
        "brightness_down", "contrast_up", "contrast_down", "black_corners", "hair")
FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


# ----------------------------------------------------------------------------- task inference


def test_one_column_is_single_label_with_counts():
    facts = infer_from_columns({"diagnosis": ["nevus", "melanoma", "nevus", "nevus"]})
    assert facts.task_type == "single_label"
    assert facts.class_names == ("melanoma", "nevus") and facts.counts == (1, 3)
    assert "melanoma 1, nevus 3" in facts.summary() and "single-label" in facts.summary()


def test_whole_numbers_are_not_guessed_ordinal_but_hinted():
    facts = infer_from_columns({"grade": ["0", "2", "10", "1"]})
    assert facts.task_type == "single_label" and facts.class_names == ("0", "1", "2", "10")
    assert "--ordinal" in facts.hint


def test_ordinal_when_declared_fills_gaps_in_the_scale():
    facts = infer_from_columns({"grade": ["0", "3", "1"]}, ordinal=True)
    assert facts.task_type == "ordinal" and facts.class_names == ("0", "1", "2", "3")
    assert facts.counts == (1, 1, 0, 1)
    with pytest.raises(LabelProblem, match="row 1") as problem:
        infer_from_columns({"grade": ["0", "mild"]}, ordinal=True)
    assert problem.value.row == 1


def test_several_zero_one_columns_are_multi_label():
    facts = infer_from_columns({"effusion": ["1", "0", ""], "oedema": ["1", "1", "0"]})
    assert facts.task_type == "multi_label" and facts.counts == (1, 2)
    with pytest.raises(LabelProblem, match="'oedema' row 2"):
        infer_from_columns({"effusion": ["1", "0", "0"], "oedema": ["1", "1", "maybe"]})
    with pytest.raises(ValueError, match="one label column"):
        infer_from_columns({"a": ["1"], "b": ["0"]}, ordinal=True)


def test_blank_label_names_its_row():
    with pytest.raises(LabelProblem) as problem:
        infer_from_columns({"label": ["a", "b", " "]})
    assert problem.value.row == 2 and problem.value.column == "label"


def test_arrays_single_multi_and_declared():
    assert infer_from_array(np.array([[0], [2], [1], [2]])).counts == (1, 1, 2)
    assert infer_from_array(np.array([0, 1, 1])).task_type == "single_label"
    assert infer_from_array(np.array([0, 1, 4]), declared="ordinal").task_type == "ordinal"
    multi = infer_from_array(np.array([[1, 0], [1, np.nan], [0, 1]]))
    assert multi.task_type == "multi_label" and multi.counts == (2, 1)
    with pytest.raises(ValueError, match="0, 1 or NaN"):
        infer_from_array(np.array([[1, 2], [0, 1]]))
    with pytest.raises(ValueError, match="negative"):
        infer_from_array(np.array([0, -1]))


# ----------------------------------------------------------------------------- budget strings and encoders


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("45", 45),
                                           ("0.5h", 1800)])
def test_budget_strings(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "30x", "-5", "0m", "1h 30q"])
def test_bad_budget_strings_are_one_line_errors(text):
    with pytest.raises(DataError, match="--budget"):
        parse_duration(text)


def test_format_duration():
    assert (format_duration(45), format_duration(250), format_duration(3720)) == ("45s", "4m10s", "1h02m")


def test_encoder_list_with_options():
    assert parse_encoders("efficientnet-lite0@input_size=96, raw-pixels,lab:make") == [
        {"name": "efficientnet-lite0", "options": {"input_size": 96}}, {"name": "raw-pixels"}, {"name": "lab:make"}]
    with pytest.raises(DataError, match="name@key=value"):
        parse_encoders("raw-pixels@96")
    with pytest.raises(DataError, match="at least one"):
        parse_encoders(" , ")


# ----------------------------------------------------------------------------- budget planning

COSTS = {"cnn": EncoderCost(0.05, 0.5, 2.0), "pixels": EncoderCost(0.005, 1.5)}
COUNTS = ImageCounts(700, 100, 200)


def test_a_generous_budget_runs_the_full_protocol():
    plan = plan_budget(COSTS, COUNTS, 10 * 3600, DERM, FRACTIONS)
    assert plan.fits and plan.cuts == () and plan.protocol == plan.full
    assert plan.protocol.seeds == 5 and plan.protocol.severities == (1, 2, 3, 4, 5)
    assert len(plan.protocol.perturbations) == len(DERM)


def test_a_tight_budget_cuts_and_says_what():
    full = plan_budget(COSTS, COUNTS, 10 * 3600, DERM, FRACTIONS)
    plan = plan_budget(COSTS, COUNTS, full.estimate_s / 4, DERM, FRACTIONS)
    assert plan.fits and plan.estimate_s <= full.estimate_s / 4
    assert plan.cuts and plan.protocol != plan.full
    left_out = [p for p in DERM if p not in plan.protocol.perturbations]
    if left_out:
        cut = next(c for c in plan.cuts if c.startswith("perturbations left out"))
        assert all(name in cut for name in left_out)


def test_an_impossible_budget_still_plans_three_seeds_and_says_it_does_not_fit():
    plan = plan_budget(COSTS, COUNTS, 1.0, DERM, FRACTIONS)
    assert not plan.fits and plan.protocol.seeds == MIN_SEEDS
    assert len(plan.protocol.perturbations) == 1 and len(plan.protocol.fractions) == 2
    assert plan.estimate_s > 1.0


def test_with_a_shift_set_perturbations_may_go_entirely():
    plan = plan_budget(COSTS, ImageCounts(700, 100, 200, shift=200), 1.0, DERM, FRACTIONS, has_shift=True)
    assert plan.protocol.perturbations == () and plan.protocol.severities == ()


def test_fixed_seeds_below_three_are_refused():
    with pytest.raises(ValueError, match="at least 3"):
        plan_budget(COSTS, COUNTS, 100, DERM, FRACTIONS, seeds=2)
    assert plan_budget(COSTS, COUNTS, 1e6, DERM, FRACTIONS, seeds=8).protocol.seeds == 8


def test_estimate_counts_perturbed_test_copies_once_per_condition():
    from crsbench.selection.budget import Protocol

    one = Protocol(3, (0.1, 1.0), ("jpeg",), (1,))
    two = Protocol(3, (0.1, 1.0), ("jpeg", "hair"), (1,))
    cost = {"e": EncoderCost(0.1, 0.0)}
    extra = sum(estimate_seconds(two, cost, COUNTS).values()) - sum(estimate_seconds(one, cost, COUNTS).values())
    assert extra == pytest.approx(0.1 * COUNTS.test)


def test_a_fit_costs_its_fixed_part_plus_its_share_of_the_rows():
    cost = EncoderCost(0.01, fit_seconds=2.0, fit_fixed_seconds=0.5)
    assert cost.fit_at(1.0) == pytest.approx(2.0)
    assert cost.fit_at(0.1) == pytest.approx(0.5 + 1.5 * 0.1)
    assert EncoderCost(0.01, 2.0).fit_at(0.01) == pytest.approx(0.05 * 2.0)  # the floor without a fixed part


def test_a_measured_perturbed_cost_replaces_the_sum_of_its_parts():
    assert EncoderCost(0.01, 1.0).per_perturbed_image(0.004) == pytest.approx(0.014)
    assert EncoderCost(0.01, 1.0, perturbed_seconds_per_image=0.03).per_perturbed_image(0.004) == 0.03


def test_probe_fit_timing_has_a_realistic_shape_and_a_fixed_part():
    from crsbench.probe.linear import ProbeConfig
    from crsbench.selection.measure import measure_probe_fit, stand_in_features

    labels = np.repeat([0, 1, 2], 200)
    x = stand_in_features(labels, 32)
    gap = np.linalg.norm(x[labels == 0].mean(0) - x[labels == 1].mean(0))
    assert x.shape == (600, 32) and 0.5 < gap < 2.5  # some class signal, far from separable
    full, fixed = measure_probe_fit(labels, 32, "single_label", 3, ProbeConfig((0.1, 1.0)))
    assert 0 <= fixed <= full


def test_the_closing_line_sets_the_wall_time_beside_the_estimate():
    from crsbench.selection.workflow import Estimate, timing_line as _timing_line

    line = _timing_line(250.0, 150.0, Estimate(spent_s=20.0, run_s=140.0, scoring_s=60.0))
    assert line == ("select finished in 4m10s (250 s); estimated 3m40s (220 s): measuring 20s, run 2m30s against "
                    "2m20s estimated, scoring and report 1m20s against 1m00s")
    assert _timing_line(61.0, 30.0, None) == "select finished in 1m01s (61 s)"


def test_perturbation_subsets_take_one_of_each_kind_first():
    order = perturbation_order(DERM)
    assert order[:4] == ("gaussian_noise", "defocus_blur", "jpeg", "brightness_down")
    assert sorted(order) == sorted(DERM)
    assert fraction_ladders(FRACTIONS) == [FRACTIONS, (0.01, 0.1, 1.0), (0.01, 1.0)]


@settings(max_examples=150, deadline=None)
@given(
    per_image=st.floats(1e-4, 0.5), fit=st.floats(1e-3, 20.0), budget=st.floats(1.0, 20_000.0),
    n_test=st.integers(10, 5000), n_perturbations=st.integers(1, 12), shift=st.booleans(),
)
def test_planning_properties(per_image, fit, budget, n_test, n_perturbations, shift):
    costs = {"a": EncoderCost(per_image, fit, 1.0), "b": EncoderCost(per_image * 3, fit / 2)}
    counts = ImageCounts(3 * n_test, n_test // 2, n_test, n_test if shift else 0)
    plan = plan_budget(costs, counts, budget, DERM[:n_perturbations], FRACTIONS, has_shift=shift,
                       scoring_seconds=5.0)
    assert plan.protocol.seeds >= MIN_SEEDS
    assert 1.0 in plan.protocol.fractions and len(plan.protocol.fractions) >= 2
    assert plan.protocol.perturbations or shift  # robustness always has something to read
    total = sum(estimate_seconds(plan.protocol, costs, counts, scoring_seconds=5.0).values())
    assert plan.estimate_s == pytest.approx(total)
    if plan.fits:
        assert plan.estimate_s <= budget
    assert bool(plan.cuts) == (plan.protocol != plan.full)
    more = plan_budget(costs, counts, budget * 2, DERM[:n_perturbations], FRACTIONS, has_shift=shift,
                       scoring_seconds=5.0)
    assert more.fits or not plan.fits  # more time never turns a fitting plan into one that does not fit


# ----------------------------------------------------------------------------- embeddings already cached


def _cached(perturbations=DERM, severities=SEVERITY_LEVELS[0], splits=CLEAN_SPLITS) -> CachedEmbeddings:
    return CachedEmbeddings(frozenset(splits), frozenset((p, s) for p in perturbations for s in severities))


def test_cached_embeddings_cost_no_encoding_and_no_setup_but_the_fits_still_cost():
    full = plan_budget(COSTS, COUNTS, 10 * 3600, DERM, FRACTIONS).protocol
    cold = estimate_seconds(full, COSTS, COUNTS)
    warm = estimate_seconds(full, COSTS, COUNTS, cached={name: _cached() for name in COSTS})
    clean, perturbed = 700 + 100 + 200, 200 * len(DERM) * 5
    for name, cost in COSTS.items():
        assert warm[name] == pytest.approx(fitting_seconds(full, cost)) and warm[name] > 0
        assert cold[name] == pytest.approx(warm[name] + cost.setup_seconds + cost.seconds_per_image * clean
                                           + cost.per_perturbed_image(0.0) * perturbed)


def test_only_the_embeddings_the_cache_lacks_are_costed_and_counted():
    protocol = Protocol(3, (0.1, 1.0), ("jpeg", "hair"), (1, 3))
    cost = EncoderCost(0.1, 1.0, setup_seconds=5.0, perturbed_seconds_per_image=0.3)
    # gaussian_noise is cached but not in the protocol: it neither saves time nor counts
    some = CachedEmbeddings(frozenset({"train", "val"}), frozenset({("jpeg", 1), ("jpeg", 3), ("gaussian_noise", 1)}))
    left = encoding_seconds(protocol, cost, COUNTS, some)
    assert left == pytest.approx(5.0 + 0.1 * 200 + 0.3 * 2 * 200)  # the clean test split, hair at 2 severities
    assert encoding_seconds(protocol, cost, COUNTS) == pytest.approx(5.0 + 0.1 * 1000 + 0.3 * 4 * 200)
    share = cached_share(protocol, ["e", "f"], {"e": some})  # f: nothing cached
    assert share == CachedShare(clean=2, clean_total=6, perturbed=2, perturbed_total=8)
    assert share.describe() == "2 of 6 clean splits, 2 of 8 perturbed test sets"
    assert cached_share(protocol, ["e"], {"e": some}, has_shift=True) == CachedShare(2, 4, 2, 4)
    shift_counts = ImageCounts(700, 100, 200, shift=50)
    assert encoding_seconds(protocol, cost, shift_counts, some) == pytest.approx(left + 0.1 * 50)


def test_a_warm_cache_keeps_what_a_cold_plan_has_to_cut():
    full = plan_budget(COSTS, COUNTS, 10 * 3600, DERM, FRACTIONS)
    everything = {name: _cached() for name in COSTS}
    fits_only = sum(estimate_seconds(full.protocol, COSTS, COUNTS, cached=everything).values())
    budget = fits_only * 1.01  # the full protocol's probe fits, not its encoding
    cold = plan_budget(COSTS, COUNTS, budget, DERM, FRACTIONS)
    warm = plan_budget(COSTS, COUNTS, budget, DERM, FRACTIONS, cached=everything)
    assert cold.cuts and cold.encoding_s > 0
    assert warm.fits and warm.cuts == () and warm.protocol == full.protocol
    assert warm.encoding_s == 0.0 and warm.estimate_s == pytest.approx(fits_only)


@settings(max_examples=100, deadline=None)
@given(
    budget=st.floats(1.0, 5_000.0), n_test=st.integers(10, 2000),
    kept=st.lists(st.sampled_from(DERM), max_size=len(DERM), unique=True),
    severities=st.lists(st.integers(1, 5), max_size=5, unique=True),
    splits=st.lists(st.sampled_from(CLEAN_SPLITS), max_size=4, unique=True),
)
def test_a_cache_never_makes_a_plan_dearer(budget, n_test, kept, severities, splits):
    counts = ImageCounts(3 * n_test, n_test // 2, n_test)
    cached = {"cnn": _cached(kept, severities, splits)}  # pixels: nothing cached
    cold = plan_budget(COSTS, counts, budget, DERM, FRACTIONS)
    warm = plan_budget(COSTS, counts, budget, DERM, FRACTIONS, cached=cached)
    for protocol in (cold.protocol, warm.protocol):
        assert sum(estimate_seconds(protocol, COSTS, counts, cached=cached).values()) \
            <= sum(estimate_seconds(protocol, COSTS, counts).values()) + 1e-9
    assert warm.fits or not cold.fits  # what fitted without the cache still fits with it
    assert warm.estimate_s == pytest.approx(sum(estimate_seconds(warm.protocol, COSTS, counts, cached=cached).values()))


# ----------------------------------------------------------------------------- cohort checks


def test_thin_classes_name_their_groups_and_rows():
    labels = np.array([0, 0, 1, 1, 1, 0])
    groups = np.array(["p1", "p2", "p9", "p9", "p9", "p3"])
    thin = thin_classes(labels, groups, ("nevus", "melanoma"))
    assert [(t.name, t.groups, t.rows) for t in thin] == [("melanoma", ("p9",), (2, 3, 4))]


def test_array_rows_are_named_by_split_and_index():
    from pathlib import Path

    from crsbench.selection.source import Cohort
    from crsbench.selection.task import infer_from_array
    from crsbench.selection.validate import located

    facts = infer_from_array(np.array([0, 1]))
    medmnist = Cohort(Path("retinamnist.npz"), {}, facts, "")
    assert medmnist.where("retinamnist-train-00017") == "retinamnist.npz: train row 17"
    assert located(medmnist, ["retinamnist-train-00003", "retinamnist-train-00005", "retinamnist-val-00002"]) \
        == "train rows 3, 5; val row 2"
    plain = Cohort(Path("cohort.npz"), {}, facts, "")
    assert plain.where("cohort-000042") == "cohort.npz: row 42"
    folder = Cohort(Path("d"), {}, facts, "", csv=Path("d/labels.csv"), lines={"a.png": 2, "b.png": 3})
    assert folder.where("b.png") == "d/labels.csv line 3" and located(folder, ["a.png", "b.png"]) == "lines 2, 3"


def test_fraction_floor():
    assert usable_fractions([100, 12], FRACTIONS) == (0.1, 0.25, 0.5, 1.0)  # 12 x 0.1 keeps 2
    short = fraction_shortfalls([100, 12], ("a", "b"), (0.05, 1.0))
    assert [(s.name, s.fraction, s.kept) for s in short] == [("b", 0.05, 1)]
    assert fraction_shortfalls([100, 100], ("a", "b"), (0.05, 1.0)) == []


# ----------------------------------------------------------------------------- recommendation text


class _Scored:
    """The parts of a ScoreReport the advice reads."""

    def __init__(self, scores, tier, table, reference):
        self.reference, self.baselines = reference, ()
        self.point = SimpleNamespace(scores=scores)
        self.tier = SimpleNamespace(members=tier, table=table, members_by_task={})
        self.intervals = SimpleNamespace(gap_variance={}, label=None, target="")
        self.evidence = SimpleNamespace(axis_evidence=pd.DataFrame(), class_counts=pd.DataFrame())
        self.subgroups = empty_subgroups()
        self.axes_used = ("discrimination", "calibration", "label_efficiency", "robustness")
        self.settings = SimpleNamespace(
            level=0.95, anchors={"discrimination": 0.5, "calibration": 0.0, "label_efficiency": 0.5, "robustness": 0.5},
            scales={"discrimination": 0.5, "calibration": 1.0, "label_efficiency": 0.5, "robustness": 0.5})


def _scores(rows, ece=None):
    frame = pd.DataFrame(rows, columns=["encoder", "discrimination", "calibration", "label_efficiency", "robustness",
                                        "crs", "ci_low", "ci_high"]).set_index("encoder")
    if ece is not None:
        frame["ece"] = pd.Series(ece)
    return frame.sort_values("crs", ascending=False)


def test_a_lone_leader_is_recommended_with_the_trade_off_of_a_higher_auroc_rival():
    scores = _scores([("X", 0.85, 0.46, 0.80, 0.85, 1.2, 0.5, 1.9), ("Y", 0.86, 0.32, 0.80, 0.84, 0.0, math.nan,
                                                                   math.nan)], ece={"X": 0.04, "Y": 0.08})
    table = pd.DataFrame({"diff": [0.0, 1.2], "se": [0.0, 0.2], "diff_low": [0.0, 0.7]}, index=["X", "Y"])
    text = " ".join(advice.recommendation(_Scored(scores, ("X",), table, "Y"), advice.Evidence(200, 3)))
    assert "Recommendation: X, alone in the leading tier" in text
    assert "best worst axis" in text
    assert "Y has a higher AUROC (0.860 vs 0.850) but a lower Brier skill (0.320 vs 0.460; ECE 0.080 vs 0.040)" in text
    assert "cannot separate" not in text


@pytest.mark.parametrize("perturbations, shift, words", [
    (12, 0, "AUROC under perturbation)"), (0, 84, "AUROC on the shift set alone"), (12, 84, "AUROC under perturbation and shift")])
def test_the_robustness_trade_off_names_what_ran(perturbations, shift, words):
    scores = _scores([("X", 0.85, 0.46, 0.80, 0.85, 1.2, 0.5, 1.9), ("Y", 0.86, 0.46, 0.80, 0.70, 0.0, math.nan,
                                                                   math.nan)])
    table = pd.DataFrame({"diff": [0.0, 1.2], "se": [0.0, 0.2], "diff_low": [0.0, 0.7]}, index=["X", "Y"])
    scored = _Scored(scores, ("X",), table, "Y")
    scored.evidence.axis_evidence = pd.DataFrame({"task": ["t"], "axis": ["robustness"], "n_perturbations": [perturbations],
                                         "n_shift": [shift], "thin": [False], "why": [""]})
    text = " ".join(advice.recommendation(scored, advice.Evidence(200, 3)))
    gap = re.search(r"Y has a higher AUROC \(0\.860 vs 0\.850\) but lower robustness \(0\.700 vs 0\.850 ([^)]*\))", text)
    assert gap and gap.group(1).startswith(words.rstrip(")")), text
    if not shift:
        assert "shift" not in text


def test_the_calibration_axis_is_named_as_the_brier_skill_with_the_ece_beside_it():
    scores = _scores([("X", 0.99, 0.9, 0.95, 0.95, 2.0, 1.0, 3.0), ("Y", 0.80, 0.30, 0.70, 0.40, 0.0, math.nan,
                                                                   math.nan)], ece={"X": 0.098, "Y": 0.091})
    table = pd.DataFrame({"diff": [0.0, 2.0], "se": [0.0, 0.3], "diff_low": [0.0, 1.4]}, index=["X", "Y"])
    text = " ".join(advice.recommendation(_Scored(scores, ("X",), table, "Y"), advice.Evidence(180, 3)))
    assert "Brier skill 0.900 (ECE 0.098)" in text
    assert "calibration error" not in text and "1 - ECE" not in text


def test_when_the_tier_holds_everyone_it_says_what_would_separate_them():
    scores = _scores([("X", 0.85, 0.95, 0.8, 0.8, 0.3, -0.2, 0.8), ("Y", 0.84, 0.95, 0.8, 0.8, 0.0, math.nan,
                                                                  math.nan)])
    # q = (diff - diff_low) / se = 2; the bound touches 0 at 100 (0.6 / 0.3)^2 = 400; an 80% chance needs
    # se' below 0.3 / (2 + 0.8416), i.e. 100 (2.8416)^2 = 808 patients
    table = pd.DataFrame({"diff": [0.0, 0.3], "se": [0.0, 0.3], "diff_low": [0.0, -0.3]}, index=["X", "Y"])
    evidence = advice.Evidence(n_test=100, n_seeds=3, unit="test patients", seed_se={"Y": 0.2},
                               seconds_per_image={"X": 0.05, "Y": 0.01})
    text = " ".join(advice.recommendation(_Scored(scores, ("X", "Y"), table, "Y"), evidence))
    assert "cannot separate X, Y" in text
    assert "whose one-sided simultaneous bound -0.30 still reaches 0" in text
    assert "~808 test patients instead of 100 would separate them in about 80% of new test sets" in text
    assert "at ~400 the bound just touches 0" in text
    # seed share 0.04 of 0.09; target 0.0111 -> case share 0.05 is above it: seeds alone cannot
    assert "more seeds alone cannot" in text
    assert "cheapest to run is Y" in text


def _pair(diff, se, q, seed_se=None):
    scores = _scores([("X", 0.85, 0.95, 0.8, 0.8, diff, -1.0, 1.0), ("Y", 0.84, 0.95, 0.8, 0.8, 0.0, math.nan,
                                                                   math.nan)])
    table = pd.DataFrame({"diff": [0.0, diff], "se": [0.0, se], "diff_low": [0.0, diff - q * se]}, index=["X", "Y"])
    evidence = advice.Evidence(100, 3, seed_se=seed_se)
    scored = _Scored(scores, ("X", "Y"), table, "Y")
    return advice.separation_sentence("X", "Y", advice.separation_table(scored, evidence).loc["Y"], evidence)


def test_more_seeds_are_suggested_when_the_seed_share_dominates():
    sentence = _pair(0.3, 0.3, 2.0, seed_se={"Y": 0.29})
    # target variance (0.3 / 2.8416)^2 = 0.011146; case share 0.09 - 0.0841 = 0.0059;
    # seeds 3 * 0.0841 / (0.011146 - 0.0059) = 48.1
    assert "or about 49 seeds instead of 3" in sentence


def test_identical_scores_are_called_alike():
    assert "score the same" in _pair(0.0, 0.0, 2.0)
    assert "more than 100 times" in _pair(0.01, 0.5, 2.0)


def test_standard_errors_are_the_tier_tables_own():
    assert advice.standard_errors(pd.DataFrame({"diff": [0.2], "se": [0.1]}, index=["Y"])) == {"Y": 0.1}
    assert advice.standard_errors(pd.DataFrame()) is None


def test_a_lone_leader_says_how_firmly_and_warns_on_a_small_test_set():
    scores = _scores([("X", 0.85, 0.96, 0.80, 0.85, 1.2, -0.1, 2.5), ("Y", 0.86, 0.92, 0.80, 0.84, 0.0, math.nan,
                                                                    math.nan)])
    table = pd.DataFrame({"diff": [0.0, 1.2], "se": [0.0, 0.5], "diff_low": [0.0, 0.3]}, index=["X", "Y"])
    scored = _Scored(scores, ("X",), table, "Y")
    small = " ".join(advice.recommendation(scored, advice.Evidence(40, 5)))
    assert "Separation from the runner-up Y: CRS difference 1.20, at least 0.30 at the tier's one-sided 95%" in small
    assert "With 40 test images the tier's stated 95% is nearer 90%" in small
    large = " ".join(advice.recommendation(scored, advice.Evidence(400, 5)))
    assert "at least 0.30" in large and "nearer 90%" not in large


def test_a_p_rank1_that_disagrees_with_the_tier_is_explained():
    scores = _scores([("X", 0.85, 0.5, 0.8, 0.8, 2.0, 0.5, 3.5), ("Y", 0.84, 0.5, 0.8, 0.8, 1.5, 0.1, 2.9),
                      ("Z", 0.83, 0.5, 0.8, 0.8, 0.0, math.nan, math.nan)])
    scores["p_rank1"] = pd.Series({"X": 0.45, "Y": 0.26, "Z": 0.29})
    scores["in_leading_tier"] = pd.Series({"X": True, "Y": True, "Z": False})
    scored = _Scored(scores, ("X", "Y"), pd.DataFrame(), "Z")
    [sentence] = claims.tier_against_p_rank1(scored)
    assert sentence.startswith("P(#1) and the tier disagree: Z is outside the leading tier yet first in 29% of "
                               "bootstrap draws, more than Y inside it (26%).")
    assert "Read the tier as the verdict" in sentence
    scores.loc["Z", "p_rank1"] = 0.1
    assert claims.tier_against_p_rank1(scored) == []


def test_registry_floor_baselines_are_named_as_such():
    scores = _scores([("raw-pixels", 0.85, 0.5, 0.8, 0.8, 2.0, 0.5, 3.5),
                      ("efficientnet-lite0", 0.84, 0.5, 0.8, 0.8, 0.0, math.nan, math.nan)])
    scored = _Scored(scores, ("raw-pixels", "efficientnet-lite0"), pd.DataFrame(), "efficientnet-lite0")
    [sentence] = claims.floor_sentences(scored)
    assert sentence.startswith("raw-pixels is a training-free floor baseline and has the highest CRS: none of the "
                               "pretrained encoders beat it on this cohort (the best of them, efficientnet-lite0, "
                               "has CRS 0.00)")
    only = _Scored(scores.rename(index={"efficientnet-lite0": "colour-texture"}), ("raw-pixels",), pd.DataFrame(),
                   "colour-texture")
    assert claims.floor_sentences(only)[0].startswith("Every encoder scored is a training-free floor baseline")
    tied = _Scored(scores.rename(index={"raw-pixels": "mine", "efficientnet-lite0": "raw-pixels@input_size=16"}),
                   ("mine", "raw-pixels@input_size=16"), pd.DataFrame(), "raw-pixels@input_size=16")
    assert ("The training-free floor baseline raw-pixels@input_size=16 is in the leading tier: mine did not beat it"
            in claims.floor_sentences(tied)[0])
