"""Axes from records, the statistics, and the score_records entry point, on synthetic run records.

The store that writes run records is built elsewhere; these tests build records DataFrames in the
schema of docs/records.md by hand.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from crsbench.results.records import RECORD_SCHEMA_VERSION
from rich.console import Console

from crsbench.scoring.axes import AXES, compute_axes, per_seed_axes
from crsbench.crs.definition import CRSConfig, crs_scores
from crsbench.scoring.statistics import SEED_ONLY_LABEL
from crsbench.results.records import aggregate_seeds
from crsbench.report import scores_table as scores_rich_table
from crsbench.report import write_score_report
from crsbench.errors import DataError
from crsbench.scoring.rank_agreement import rank_agreement
from crsbench.scoring.score import SCORE_COLUMNS, ScoreReport, score_records
from crsbench.scoring.bootstrap_summary import competition_ranks, interval_quantiles
from crsbench.scoring.statistics import (
    crs_from_counts,
    paired_seed_bootstrap,
    seed_resample_counts,
    weight_sensitivity,
)

from _synthetic_records import make_records, one_task_records, record


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    return make_records()


@pytest.fixture(scope="module")
def report(records) -> ScoreReport:
    return score_records(records, "resnet50", CRSConfig(n_boot=2000, seed=1, n_weight_draws=300))


# --------------------------------------------------------------------------- axes: hand-worked values


def test_label_efficiency_is_the_auroc_averaged_over_log_fraction():
    # AUROC 0.6, 0.7, 0.8 at log10 f = -2, -1, 0: trapezoids 0.65 + 0.75 = 1.4, / width 2 = 0.7
    values = per_seed_axes(one_task_records({0.01: 0.6, 0.1: 0.7, 1.0: 0.8}))
    assert values["label_efficiency"].tolist() == pytest.approx([0.7, 0.7])
    # the sample-size answer: AUROC(f) >= 0.8 - 0.02 first at f = 1.0 here
    assert values["sufficient_fraction"].tolist() == [1.0, 1.0]


def test_brier_skill_uses_the_training_prevalence_as_the_prior():
    data = one_task_records({1.0: 0.8})
    data["n_train"], data["positives_train"] = 100, json.dumps([70, 30])
    data["n_eval"], data["positives_eval"] = 100, json.dumps([70, 30])
    data["schema_version"] = RECORD_SCHEMA_VERSION  # today's binary Brier: the positive column's
    values = per_seed_axes(data)
    # prior Brier 0.7 * 0.3^2 + 0.3 * 0.7^2 = 0.21 (axis_math.prior_brier_single_label); the records' Brier is 0.2
    assert values["calibration"].tolist() == pytest.approx([1 - 0.2 / 0.21] * 2)


def test_discrimination_and_calibration_read_the_clean_full_fraction_record():
    values = per_seed_axes(one_task_records({0.1: 0.7, 1.0: 0.8}, ece=0.07))
    assert values["discrimination"].tolist() == pytest.approx([0.8, 0.8])
    assert values["calibration"].tolist() == pytest.approx([1 - 0.2 / 0.21] * 2)  # the Brier skill
    assert values["ece"].tolist() == pytest.approx([0.07, 0.07])  # shown beside it
    assert values["brier"].tolist() == pytest.approx([0.2, 0.2])


def test_robustness_averages_the_perturbed_auroc_with_the_shift_auroc():
    # perturbed 0.72 and 0.64 -> 0.68; shift 0.6; half and half 0.64. Retentions shown beside it:
    # above chance 0.22/0.3 and 0.14/0.3 -> 0.6; shift 0.1/0.3
    data = one_task_records({1.0: 0.8}, perturbed=[("noise", 1, 0.72), ("noise", 2, 0.64)], shift=0.6)
    values = per_seed_axes(data)
    assert values["robustness"].tolist() == pytest.approx([0.64, 0.64])
    assert values["perturbed_auroc"].tolist() == pytest.approx([0.68, 0.68])
    assert values["perturbation_retention"].tolist() == pytest.approx([0.6, 0.6])
    assert values["shift_retention"].tolist() == pytest.approx([1 / 3, 1 / 3])


def test_an_encoder_at_chance_is_flagged_and_sits_at_the_anchor_of_the_auroc_axes():
    """No ratio to its own AUROC: a flat curve at chance is worth chance, not "all its signal kept"."""
    data = one_task_records({0.01: 0.5, 0.1: 0.5, 1.0: 0.51}, perturbed=[("noise", 1, 0.55)], shift=0.52)
    values = per_seed_axes(data)
    assert values["not_assessable"].all()
    assert values["label_efficiency"].tolist() == pytest.approx([0.5025] * 2)
    assert values["robustness"].tolist() == pytest.approx([0.535] * 2)


def test_robustness_without_shift_records_is_the_perturbed_auroc():
    values = per_seed_axes(one_task_records({1.0: 0.8}, perturbed=[("blur", 3, 0.74)]))
    assert values["robustness"].tolist() == pytest.approx([0.74, 0.74])


def test_axes_are_seed_means_then_task_means():
    rows = []
    for seed, auroc in ((0, 0.70), (1, 0.80)):
        rows.append(record("a", "t1", seed, 1.0, auroc=auroc))
        rows.append(record("a", "t2", seed, 1.0, auroc=auroc + 0.1))
    axes = compute_axes(pd.DataFrame(rows))
    assert axes.per_task.set_index("task")["discrimination"].to_dict() == pytest.approx({"t1": 0.75, "t2": 0.85})
    assert axes.table.loc["a", "discrimination"] == pytest.approx(0.80)


def test_missing_axes_are_reported_with_a_reason_never_as_zero():
    axes = compute_axes(one_task_records({1.0: 0.8}))
    assert axes.axes == ("discrimination", "calibration")
    assert axes.missing == {
        "label_efficiency": "no clean records below fraction 1.0",
        "robustness": "no perturbation or shift records",
    }
    assert axes.table[["label_efficiency", "robustness"]].isna().all().all()


def test_an_incomplete_condition_grid_uses_the_common_part_and_says_so():
    data = one_task_records({1.0: 0.8}, perturbed=[("noise", 1, 0.74), ("blur", 1, 0.4)])
    data = data[~((data["encoder"] == "b") & (data["condition"] == "blur"))]
    axes = compute_axes(data)
    assert axes.table["robustness"].tolist() == pytest.approx([0.74, 0.74])
    assert any("common to every encoder and seed" in note for note in axes.notes)


def test_a_task_one_encoder_lacks_is_dropped_with_a_note(records):
    partial = records[~((records["encoder"] == "dinov2") & (records["task"] == "derm"))]
    axes = compute_axes(partial)
    assert axes.tasks == ("cxr",)
    assert any("'derm' dropped" in note for note in axes.notes)


def test_duplicate_evaluations_are_rejected(records):
    with pytest.raises(ValueError, match="share an evaluation key"):
        compute_axes(pd.concat([records, records.iloc[:1]]))


def test_missing_columns_are_rejected(records):
    with pytest.raises(ValueError, match="lack required column"):
        compute_axes(records.drop(columns=["ece"]))


def test_the_cube_reproduces_the_axis_table(records):
    axes = compute_axes(records)
    assert axes.cube.shape == (4, 2, 3, 4)
    by_task = axes.per_task.groupby("encoder")[list(AXES)].mean()
    pd.testing.assert_frame_equal(axes.table[list(AXES)], by_task, check_names=False)


def test_seed_aggregation_gives_mean_std_and_n_per_condition(records):
    table = aggregate_seeds(records)
    key = ["encoder", "task", "fraction", "condition_kind", "condition", "severity"]
    assert not table.duplicated(key).any()
    row = table[(table["encoder"] == "vit_b16") & (table["task"] == "derm") & (table["fraction"] == 0.1)].iloc[0]
    raw = records[(records["encoder"] == "vit_b16") & (records["task"] == "derm") & (records["fraction"] == 0.1)]
    assert row["auroc_mean"] == pytest.approx(raw["auroc"].mean())
    assert row["auroc_std"] == pytest.approx(raw["auroc"].std(ddof=1))
    assert row["auroc_n"] == 3 and row["n_seeds"] == 3
    assert row["kappa_quadratic_n"] == 0  # null for non-ordinal tasks


# --------------------------------------------------------------------------- stats: hand-worked values


def test_rank_agreement_hand_worked():
    # AUROC ranks A1 B2 C3 D4, CRS ranks B1 C2 A3 D4: (A,B) and (A,C) reverse, 2 of 6 pairs.
    auroc = pd.Series({"A": 0.9, "B": 0.8, "C": 0.7, "D": 0.6})
    crs = pd.Series({"A": 0.1, "B": 0.3, "C": 0.2, "D": 0.0})
    agreement = rank_agreement(auroc, crs)
    assert agreement.n_reversed == 2 and agreement.n_pairs == 6
    assert agreement.kendall_tau_b == pytest.approx((4 - 2) / 6)
    assert agreement.spearman == pytest.approx(1 - 6 * 6 / (4 * 15))  # sum d^2 = 4 + 1 + 1 + 0
    assert agreement.mean_abs_rank_displacement == pytest.approx(1.0)
    pairs = set(zip(agreement.reversed_pairs["encoder_a"], agreement.reversed_pairs["encoder_b"]))
    assert pairs == {("A", "B"), ("A", "C")}


def test_rank_agreement_ties_are_not_reversals_and_tau_b_handles_them():
    auroc = pd.Series({"A": 0.8, "B": 0.8, "C": 0.7})
    crs = pd.Series({"A": 0.1, "B": 0.2, "C": 0.3})
    agreement = rank_agreement(auroc, crs)
    assert agreement.n_reversed == 2  # (A,C), (B,C); A-B is tied on AUROC
    # tau-b: concordant 0, discordant 2, ties in x 1: -2 / sqrt((3-1)*(3-0)) = -2/sqrt(6)
    assert agreement.kendall_tau_b == pytest.approx(-2 / math.sqrt(6))


def test_rank_agreement_of_identical_orders_is_perfect():
    scores = pd.Series({"A": 3.0, "B": 2.0, "C": 1.0})
    agreement = rank_agreement(scores, scores * 10)
    assert (agreement.spearman, agreement.kendall_tau_b, agreement.n_reversed) == (1.0, 1.0, 0)
    assert agreement.reversed_pairs.empty


def test_competition_ranks_share_the_better_rank_on_ties():
    assert competition_ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [[1, 4, 1, 3]]


def test_expanded_interval_is_wider_for_few_seeds_and_tends_to_percentile():
    assert interval_quantiles(0.95, "percentile", 5) == pytest.approx((0.025, 0.975))
    low5, _ = interval_quantiles(0.95, "expanded", 5)
    low1000, _ = interval_quantiles(0.95, "expanded", 1000)
    assert low5 < 0.005
    assert low1000 == pytest.approx(0.025, abs=1e-3)


def per_draw_loop(axes, counts, reference):
    """The plain chain, one draw at a time, through the DataFrame API: the bootstrap must match it."""
    out = []
    weights = axes.task_mask / axes.task_mask.sum(axis=0)
    for row in counts:
        picked = np.repeat(np.arange(len(row)), row)
        seed_means = axes.cube[:, :, picked, :].mean(axis=2)  # (E, T, A)
        table = pd.DataFrame((seed_means * weights).sum(axis=1), index=list(axes.encoders), columns=list(axes.axes))
        out.append(crs_scores(table, reference)["crs"].to_numpy())
    return np.array(out)


def test_vectorised_bootstrap_equals_a_per_draw_loop(records):
    axes = compute_axes(records)
    counts = seed_resample_counts(np.random.default_rng(3), len(axes.seeds), 40)
    fast, _ = crs_from_counts(axes, counts, axes.encoders.index("resnet50"), CRSConfig(), chunk_size=7)
    np.testing.assert_allclose(fast, per_draw_loop(axes, counts, "resnet50"), rtol=0, atol=1e-10)


def test_bootstrap_outputs_are_consistent(records):
    axes = compute_axes(records)
    seed_boot = paired_seed_bootstrap(axes, "resnet50", CRSConfig(n_boot=500, seed=0))
    assert set(seed_boot.results) == {*axes.tasks, "overall"}
    assert "ignores test-set uncertainty" in seed_boot.label
    boot = seed_boot.overall
    np.testing.assert_allclose(boot.rank_distribution.sum(axis=1), 1.0)
    assert boot.top in boot.leading_tier
    # the reference's CRS is 0 by definition: no interval, never a zero-width one
    assert boot.intervals.loc["resnet50", ["ci_low", "ci_high"]].isna().all()
    both = boot.pairwise + boot.pairwise.T
    assert (both.to_numpy()[~np.eye(4, dtype=bool)] <= 1 + 1e-12).all()
    again = paired_seed_bootstrap(axes, "resnet50", CRSConfig(n_boot=500, seed=0)).overall
    np.testing.assert_array_equal(boot.draws, again.draws)


def test_resample_takes_cases_or_seeds_only():
    assert CRSConfig().resample == "cases"
    with pytest.raises(ValueError):
        CRSConfig(resample="patients")


def test_weight_sensitivity_keeps_a_dominating_encoder_on_top_and_names_the_movers():
    table = pd.DataFrame({"a": [0.0, 1.0, 0.5, -0.2], "b": [0.0, 2.0, -1.0, 0.4]}, index=["r", "best", "x", "y"])
    config = CRSConfig(n_weight_draws=400, seed=0, anchors={"a": 0.0, "b": 0.0}, scales={"a": 0.5, "b": 0.5})
    result = weight_sensitivity(table, "r", config)
    assert result.loc["best", "p_top"] == 1.0
    assert not result.loc["best", "place_depends"]
    # x and y trade places when the weights of a and b move
    assert result.loc["x", "place_depends"] and result.loc["y", "place_depends"]
    assert result["p_top"].sum() >= 1.0
    assert (result["rank_p05"] <= result["rank_p95"]).all()
    pd.testing.assert_frame_equal(result, weight_sensitivity(table, "r", config))


# --------------------------------------------------------------------------- score_records


def test_scores_table_has_every_column_and_is_sorted_by_crs(report):
    assert list(report.point.scores.columns) == list(SCORE_COLUMNS)
    assert report.point.scores["crs_rank"].is_monotonic_increasing
    assert report.axes_used == AXES and report.axes_missing == {}
    assert report.reference == "resnet50"
    assert report.point.scores.loc["resnet50", "crs"] == 0
    skill = report.point.scores["skill"]
    assert (report.point.scores["crs"] == skill - skill["resnet50"]).all()
    assert set(report.tier.members) <= set(report.point.scores.index)
    assert report.point.scores.loc[report.point.scores.index[0], "in_leading_tier"]
    others = report.point.scores.drop(index="resnet50")
    assert (others["ci_low"] <= others["ci_high"]).all()
    assert report.point.scores.loc["resnet50", "is_reference"] and report.point.scores["is_reference"].sum() == 1
    assert "reference" in _render(report)
    assert "AUROC (0.5 + 0.5 u, w=0.25)" in _render(report)  # the constants are printed with the scores


def test_per_task_scores_come_with_their_own_crs_interval_and_tier(report):
    by_task = report.point.scores_by_task
    assert list(by_task["task"].unique()) == ["cxr", "derm"]
    for task, rows in by_task.groupby("task"):
        rows = rows.set_index("encoder")
        assert rows.loc["resnet50", "crs"] == 0 and rows["crs_rank"].is_monotonic_increasing
        assert set(report.tier.members_by_task[task]) == set(rows.index[rows["in_leading_tier"].astype(bool)])
        expected = crs_scores(report.point.axes_by_task[report.point.axes_by_task["task"] == task].set_index("encoder")[list(AXES)],
                              "resnet50")["crs"]
        pd.testing.assert_series_equal(rows["crs"].reindex(expected.index), expected, check_names=False)


def test_point_scores_match_the_crs_on_the_axis_table(report):
    table = report.point.axes[list(AXES)]
    expected = crs_scores(table, "resnet50")["crs"]
    pd.testing.assert_series_equal(report.point.scores["crs"].reindex(expected.index), expected, check_names=False)


def test_records_without_perturbation_or_shift_rows_score_on_three_axes(records):
    clean_only = records[records["condition_kind"] == "clean"]
    report = score_records(clean_only, "resnet50", CRSConfig(n_boot=300, n_weight_draws=50))
    assert report.axes_used == ("discrimination", "calibration", "label_efficiency")
    assert report.axes_missing == {"robustness": "no perturbation or shift records"}
    assert report.point.scores["robustness"].isna().all()
    assert report.point.scores["crs"].notna().all()
    assert any("CRS computed on 3 axes" in note for note in report.notes)
    assert report.settings["axis_weights"] == pytest.approx(
        {"discrimination": 1 / 3, "calibration": 1 / 3, "label_efficiency": 1 / 3}
    )
    assert "robustness missing: no perturbation or shift records" in _render(report)


def test_axis_weight_for_a_missing_axis_is_ignored_with_a_note(records):
    clean_only = records[records["condition_kind"] == "clean"]
    report = score_records(clean_only, "resnet50", CRSConfig(axis_weights={"robustness": 5.0}, n_boot=50, n_weight_draws=0))
    assert any("ignored" in note for note in report.notes)
    with pytest.raises(ValueError, match="unknown axis weight"):
        score_records(clean_only, "resnet50", CRSConfig(axis_weights={"speed": 1.0}, n_boot=10))


def test_default_reference_is_the_first_encoder_alphabetically(records):
    report = score_records(records, None, CRSConfig(n_boot=20, n_weight_draws=0))
    assert report.reference == "biomedclip"
    assert any("first encoder alphabetically" in note for note in report.notes)
    with pytest.raises(ValueError, match="not in the records' cohort"):
        score_records(records, "nope", CRSConfig(n_boot=10))


def test_same_seed_same_report_and_reference_changes_scores(records):
    first = score_records(records, "resnet50", CRSConfig(n_boot=200, seed=5, n_weight_draws=20))
    again = score_records(records, "resnet50", CRSConfig(n_boot=200, seed=5, n_weight_draws=20))
    pd.testing.assert_frame_equal(first.point.scores, again.point.scores)
    other = score_records(records, "dinov2", CRSConfig(n_boot=200, seed=5, n_weight_draws=20))
    assert other.point.scores.loc["dinov2", "crs"] == 0
    assert list(other.point.scores.index) == list(first.point.scores.index)  # the order is the reference's to display, not to set
    pd.testing.assert_series_equal(other.point.scores["skill"], first.point.scores["skill"])


def test_skipping_the_bootstrap_leaves_intervals_and_tier_unknown(records):
    report = score_records(records, "resnet50", CRSConfig(n_boot=0, n_weight_draws=0))
    assert report.point.scores["ci_low"].isna().all()
    assert report.point.scores["in_leading_tier"].isna().all()
    assert report.tier.members == ()


def test_case_resampling_without_predictions_is_never_faked(records):
    """Records alone cannot show test-set uncertainty: the seed-only bootstrap runs, and says so."""
    report = score_records(records, "resnet50", CRSConfig(n_boot=10, resample="cases"))
    assert report.intervals.label == SEED_ONLY_LABEL
    assert any("no per-case predictions" in note for note in report.notes)


def test_few_seeds_are_flagged(records):
    report = score_records(records, "resnet50", CRSConfig(n_boot=20, n_weight_draws=0))
    assert any("ignores test-set uncertainty" in note for note in report.notes)
    single = score_records(records[records["seed"] == 0], "resnet50", CRSConfig(n_boot=20, n_weight_draws=0))
    assert any("zero width" in note for note in single.notes)
    others = single.point.scores.drop(index="resnet50")
    assert (others["ci_low"] == others["ci_high"]).all()


def test_rank_agreement_compares_auroc_with_crs(report):
    summary = report.agreement.table.iloc[0]
    assert summary["n_pairs"] == 6
    assert summary["n_reversed"] == len(report.agreement.reversed_pairs)
    assert -1 <= summary["spearman"] <= 1


def test_write_score_report_round_trips(report, tmp_path):
    written = write_score_report(report, tmp_path / "scores")
    for name in ("scores.csv", "scores.parquet", "scores.json", "summary.json", "pairwise.parquet"):
        assert written[name].exists()
    back = pd.read_parquet(written["scores.parquet"]).set_index("encoder")
    pd.testing.assert_frame_equal(back, report.point.scores, check_dtype=False, check_index_type=False)
    rows = json.loads(written["scores.json"].read_text())  # strict JSON: NaN would fail
    assert [r["encoder"] for r in rows] == list(report.point.scores.index)
    summary = json.loads(written["summary.json"].read_text())
    assert summary["reference"] == "resnet50" and summary["axes_used"] == list(AXES)
    csv = pd.read_csv(written["scores.csv"])
    assert list(csv.columns) == ["encoder", *SCORE_COLUMNS]


def test_write_score_report_handles_missing_axes_and_no_bootstrap(records, tmp_path):
    clean_only = records[records["condition_kind"] == "clean"]
    report = score_records(clean_only, "resnet50", CRSConfig(n_boot=0, n_weight_draws=0))
    written = write_score_report(report, tmp_path)
    rows = json.loads(written["scores.json"].read_text())
    assert rows[0]["robustness"] is None and rows[0]["in_leading_tier"] is None
    summary = json.loads(written["summary.json"].read_text())
    assert summary["axes_missing"] == {"robustness": "no perturbation or shift records"}


def _render(report) -> str:
    console = Console(record=True, width=240)
    console.print(scores_rich_table(report))
    return console.export_text()


def test_rich_table_shows_every_encoder(report):
    table = scores_rich_table(report)
    assert table.row_count == 4
    text = _render(report)
    assert "resnet50" in text and "CRS" in text


def test_the_deciding_axes_sum_to_the_crs_gap_per_task_and_across_tasks(report):
    """The report's sentence on what decides a comparison adds up to the CRS difference it explains."""
    from crsbench.report.narrative import axis_contributions, deciding_sentence, task_sentences

    first, second = report.point.scores.index[:2]
    parts = axis_contributions(report, first, second)
    gap = report.point.scores.loc[first, "crs"] - report.point.scores.loc[second, "crs"]
    assert parts.sum() == pytest.approx(gap, abs=1e-9)
    assert f"by {gap:.1f} CRS points" in deciding_sentence(report, first, second)
    for task, rows in report.point.scores_by_task.groupby("task"):
        rows = rows.set_index("encoder").sort_values("crs", ascending=False)
        parts = axis_contributions(report, rows.index[0], rows.index[1], rows)
        assert parts.sum() == pytest.approx(rows["crs"].iloc[0] - rows["crs"].iloc[1], abs=1e-9)
    assert len(task_sentences(report)) == report.point.scores_by_task["task"].nunique()


def test_quadratic_kappa_is_shown_beside_discrimination_on_ordinal_tasks_only():
    data = one_task_records({1.0: 0.8})
    data["task_type"], data["kappa_quadratic"] = "ordinal", 0.61
    values = per_seed_axes(data)
    assert values["kappa_quadratic"].tolist() == pytest.approx([0.61, 0.61])
    assert per_seed_axes(one_task_records({1.0: 0.8}))["kappa_quadratic"].isna().all()
    report = score_records(data, "a", CRSConfig(n_boot=0, n_weight_draws=0))
    from crsbench.report import task_tables

    console = Console(record=True, width=240)
    for table in task_tables(report):
        console.print(table)
    assert "QWK" in console.export_text()
    plain = score_records(one_task_records({1.0: 0.8}), "a", CRSConfig(n_boot=0, n_weight_draws=0))
    console = Console(record=True, width=240)
    for table in task_tables(plain):
        console.print(table)
    assert "QWK" not in console.export_text()


# --------------------------------------------------------------------------- incomplete grids

SCORE_NUMBERS = ["discrimination", "calibration", "label_efficiency", "robustness", "skill", "crs", "ci_low", "ci_high"]
INCOMPLETE_NEWCOMERS = {
    "a task": lambda r: r[r["task"] != "derm"],
    "a seed": lambda r: r[r["seed"] != 2],
    "a label fraction": lambda r: r[r["fraction"] != 0.05],
    "a condition": lambda r: r[~((r["condition"] == "defocus_blur") & (r["severity"] == 3))],
}


def newcomer(lacks=None) -> pd.DataFrame:
    records = make_records(encoders=("newcomer",), rng_seed=5)
    return lacks(records) if lacks else records


@pytest.mark.parametrize("what", sorted(INCOMPLETE_NEWCOMERS))
def test_an_encoder_with_an_incomplete_grid_is_refused_by_name(records, what):
    cohort = pd.concat([records, newcomer(INCOMPLETE_NEWCOMERS[what])], ignore_index=True)
    with pytest.raises(DataError) as refused:
        score_records(cohort, "resnet50", CRSConfig(n_boot=0, n_weight_draws=0))
    message = str(refused.value)
    assert "\n" not in message and "encoder 'newcomer' lacks" in message and "incomplete='exclude'" in message
    assert all(f"encoder {e!r}" not in message for e in records["encoder"].unique())


@pytest.mark.parametrize("what", sorted(INCOMPLETE_NEWCOMERS))
def test_an_excluded_newcomer_leaves_every_other_number_identical(records, what):
    config = CRSConfig(n_boot=300, seed=3, n_weight_draws=50)
    alone = score_records(records, "resnet50", config)
    cohort = pd.concat([records, newcomer(INCOMPLETE_NEWCOMERS[what])], ignore_index=True)
    report = score_records(cohort, "resnet50", config, incomplete="exclude")
    assert "newcomer" not in report.point.scores.index
    assert any("'newcomer' left out" in note for note in report.notes)
    pd.testing.assert_frame_equal(report.point.scores, alone.point.scores, check_exact=True)
    pd.testing.assert_frame_equal(report.point.scores_by_task, alone.point.scores_by_task, check_exact=True)


def test_a_newcomer_with_extra_evaluations_is_scored_on_the_shared_grid_without_moving_the_others(records):
    """More than the others (a fraction and a shift only it has): refused by default (the others lack its
    extras); with incomplete='exclude' its extras are dropped and the others' numbers do not move."""
    extra = newcomer()
    extra = pd.concat([extra, extra[extra["fraction"] == 0.5].assign(
        fraction=0.75, record_key=lambda f: f["record_key"] + "|extra")], ignore_index=True)
    cohort = pd.concat([records, extra], ignore_index=True)
    with pytest.raises(DataError, match="lacks"):
        score_records(cohort, "resnet50", CRSConfig(n_boot=0, n_weight_draws=0))
    config = CRSConfig(n_boot=300, seed=3, n_weight_draws=0)
    report = score_records(cohort, "resnet50", config, incomplete="exclude")
    alone = score_records(records, "resnet50", config)
    assert "newcomer" in report.point.scores.index and any("dropped" in note for note in report.notes)
    others = alone.point.scores.index
    np.testing.assert_array_equal(report.point.scores.loc[others, SCORE_NUMBERS].to_numpy(dtype=float),
                                  alone.point.scores.loc[others, SCORE_NUMBERS].to_numpy(dtype=float))


def test_half_lacking_leaves_no_newcomer_to_exclude(records):
    two = records[records["encoder"].isin(["resnet50", "dinov2"])]
    two = two[~((two["encoder"] == "dinov2") & (two["task"] == "derm"))]
    with pytest.raises(DataError, match="no majority"):
        score_records(two, "resnet50", CRSConfig(n_boot=0, n_weight_draws=0), incomplete="exclude")
    with pytest.raises(ValueError, match="incomplete must be"):
        score_records(records, "resnet50", CRSConfig(n_boot=0, n_weight_draws=0), incomplete="partial")


def _simulated_cohort():
    from crsbench.simulation.cohort import Design, EncoderTruth, simulate

    design = Design((EncoderTruth("a", 1.2), EncoderTruth("b", 1.3, 0.8), EncoderTruth("c", 1.0, 1.2),
                     EncoderTruth("newcomer", 1.4, 0.9)), n_cases=120, seeds=(0, 1, 2))
    return simulate(design, np.random.default_rng(4))


def test_a_newcomer_without_stored_predictions_is_refused_or_left_out_with_the_case_bootstrap_unchanged():
    from crsbench.results.predictions import Predictions

    records, stored = _simulated_cohort()
    index = stored.index[stored.index["encoder"] != "newcomer"]
    partial = Predictions.in_memory(index, {t: stored.case_set(t) for t in index["test_set"].unique()},
                                    {d: stored.probabilities(d) for d in index["probs"].unique()})
    config = CRSConfig(n_boot=200, seed=1, n_weight_draws=0)
    with pytest.raises(DataError, match="encoder 'newcomer' lacks stored predictions"):
        score_records(records, "a", config, predictions=partial)
    report = score_records(records, "a", config, predictions=partial, incomplete="exclude")
    alone = score_records(records[records["encoder"] != "newcomer"], "a", config, predictions=stored)
    assert report.intervals.label == alone.intervals.label and "case" in report.intervals.label
    pd.testing.assert_frame_equal(report.point.scores, alone.point.scores, check_exact=True)


def test_a_newcomer_lacking_a_fraction_leaves_the_others_case_bootstrap_identical():
    records, stored = _simulated_cohort()
    lacking = records[~((records["encoder"] == "newcomer") & (records["fraction"] == 0.1))]
    config = CRSConfig(n_boot=200, seed=1, n_weight_draws=0)
    with pytest.raises(DataError, match="encoder 'newcomer' lacks .*fraction 0.1"):
        score_records(lacking, "a", config, predictions=stored)
    report = score_records(lacking, "a", config, predictions=stored, incomplete="exclude")
    alone = score_records(records[records["encoder"] != "newcomer"], "a", config, predictions=stored)
    pd.testing.assert_frame_equal(report.point.scores, alone.point.scores, check_exact=True)
    pd.testing.assert_frame_equal(report.intervals.axis_intervals, alone.intervals.axis_intervals, check_exact=True)


def test_a_complete_cohort_passes_the_grid_check_unchanged(records):
    config = CRSConfig(n_boot=0, n_weight_draws=0)
    assert not any("incomplete" in note for note in score_records(records, "resnet50", config).notes)
    assert score_records(records, "resnet50", config, incomplete="exclude").point.scores.equals(
        score_records(records, "resnet50", config).point.scores)
