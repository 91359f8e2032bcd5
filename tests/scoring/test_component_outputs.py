"""The components and both definitions through the scoring chain and into every output.

Under either definition, every statistic is computed on the chosen definition's draws (the draws are
the same function of the axis draws as the point); the components' probabilities come from the same
axis draws; summary.json and `score --json` carry them as named fields (the bundle's and select's
documents are tested beside their commands: tests/bundles/test_bundles.py, tests/cli/test_select_cli.py).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crsbench.crs import components as comp
from crsbench.crs.definition import CRSConfig, crs_batch
from crsbench.report import write_score_report
from crsbench.report.components_view import disagreement_lines
from crsbench.report.documents import scores_data
from crsbench.scoring.component_tables import REVERSAL, TIE, component_tables
from crsbench.scoring.score import score_records
from crsbench.simulation.cohort import Design, EncoderTruth, simulate

ENCODERS = (EncoderTruth("a", 1.2), EncoderTruth("b", 1.6, 0.8), EncoderTruth("c", 0.9, 1.1, 0.1, 0.1),
            EncoderTruth("d", 1.25, 1.0, 0.05, 0.05))
DESIGN = Design(ENCODERS, n_cases=160, seeds=(0, 1, 2), tasks=("t1", "t2"), task_classes=(2, 2),
                multi_label_tasks=(), perturbations=("noise",), severities=(1, 5))
COMPONENT_FIELDS = ("definition", "components", "pareto_front", "pareto_pairs", "orders", "disagreements",
                    "rank_agreement_by_definition")


@pytest.fixture(scope="module")
def simulated():
    return simulate(DESIGN, np.random.default_rng(3))


@pytest.fixture(scope="module")
def reports(simulated):
    records, stored = simulated
    return {d: score_records(records, "a", CRSConfig(n_boot=200, definition=d, n_weight_draws=100), predictions=stored)
            for d in ("mean_of_skills", "components")}


def test_the_chosen_definition_ranks_and_its_draws_are_the_same_function_as_the_point(reports):
    mean, composite = reports["mean_of_skills"], reports["components"]
    axes = list(composite.axes_used)
    values = composite.point.axes[axes].to_numpy(dtype=float)
    ref = list(composite.point.axes.index).index("a")
    for name, report in reports.items():
        expected = crs_batch(values, ref, CRSConfig(definition=name), axes).crs
        np.testing.assert_allclose(report.point.scores["crs"].reindex(composite.point.axes.index), expected, atol=1e-9)
        assert report.settings.definition == name and report.point.scores.loc["a", "crs"] == 0.0
        # interval, P(rank 1), tier, rank agreement and weight sensitivity all exist under either definition
        assert report.point.scores["p_rank1"].sum() == pytest.approx(1.0)
        assert report.tier.members and len(report.agreement.table) and len(report.point.weight_sensitivity)
        others = report.point.scores.drop(index="a")
        assert ((others["ci_low"] <= others["crs"] + 1e-9) & (others["crs"] <= others["ci_high"] + 1e-9)).all()
    # the definitions table is the same whichever ranks
    pd.testing.assert_frame_equal(mean.components.definitions, composite.components.definitions)
    assert (composite.components.definitions["crs_components"].reindex(composite.point.scores.index) == composite.point.scores["crs"]).all()


def test_component_probabilities_are_frequencies_over_the_axis_draws():
    """A hand-made draw set: b dominates the reference a in 3 of 4 draws, is incomparable in 1."""
    values = pd.DataFrame({"discrimination": [0.7, 0.8], "calibration": [0.2, 0.3]}, index=["a", "b"])
    draws = np.array([[[0.7, 0.2], [0.8, 0.3]], [[0.7, 0.2], [0.8, 0.3]], [[0.7, 0.2], [0.8, 0.3]],
                      [[0.7, 0.2], [0.8, 0.1]]])
    tables = component_tables(values, draws, "a", CRSConfig(n_boot=4))
    b = tables.components.loc["b"]
    assert b["relation_to_reference"] == "dominates" and b["p_dominates_reference"] == 0.75
    assert b["p_incomparable_reference"] == 0.25 and b["p_dominated_by_reference"] == 0.0
    assert b["p_front"] == 1.0 and tables.components.loc["a", "p_front"] == 0.25
    assert b["p_worst_calibration"] == 1.0
    pair = tables.pareto_pairs.set_index(["encoder", "versus"]).loc[("a", "b")]
    assert pair["relation"] == "is dominated" and pair["p_dominated"] == 0.75


def test_a_pair_neither_definition_resolves_is_a_tie_and_one_both_resolve_is_a_reversal():
    """Two encoders the definitions order differently: with draws that scatter around both points the
    verdict is a tie; with draws equal to the point it is a reversal."""
    # c: even profile; d: strong on three axes, weak calibration (mean prefers d, the components prefer c)
    values = pd.DataFrame([[0.75, 0.30, 0.70, 0.70], [0.76, 0.40, 0.72, 0.72], [0.90, 0.10, 0.90, 0.90]],
                          index=["ref", "c", "d"], columns=["discrimination", "calibration", "label_efficiency",
                                                           "robustness"])
    config = CRSConfig(n_boot=100)
    exact = np.repeat(values.to_numpy()[None], 100, axis=0)

    def verdict(draws):
        pairs = component_tables(values, draws, "ref", config).disagreements.set_index(["encoder_a", "encoder_b"])
        return pairs.loc[("d", "c"), "verdict"]

    assert verdict(exact) == REVERSAL
    assert verdict(exact + np.random.default_rng(0).normal(0, 0.3, exact.shape)) == TIE


def test_summary_json_and_score_json_carry_the_component_fields(reports, tmp_path):
    report = reports["components"]
    write_score_report(report, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    document = json.loads(json.dumps(scores_data(report)))
    for data in (summary, document):
        assert set(COMPONENT_FIELDS) <= set(data)
        assert data["definition"] == "components"
        row = {r["encoder"]: r for r in data["components"]}["b"]
        for key in ("dominance", "balance", "balance_low", "balance_high", "worst", "worst_axis", "worst_low",
                    "relation_to_reference", "p_dominates_reference", "p_dominated_by_reference", "on_front",
                    "p_front", "p_worst_calibration"):
            assert key in row
        assert set(data["orders"]) == {"mean_of_skills", "components"}
        assert data["orders"]["components"] == list(report.point.scores.index)
    assert (tmp_path / "components.csv").is_file() and (tmp_path / "disagreements.csv").is_file()
    assert summary["settings"]["components"]["tolerance"] == comp.DEFAULT_TOLERANCE


def test_the_disagreement_lines_name_every_pair_with_both_probabilities(reports):
    report = reports["components"]
    lines = [str(t) for t in disagreement_lines(report)]
    if len(report.components.disagreements):
        assert f"order {len(report.components.disagreements)} pair(s) differently" in lines[0]
        for pair, line in zip(report.components.disagreements.itertuples(), lines[1:]):
            assert pair.encoder_a in line and pair.encoder_b in line and pair.verdict in line
    else:
        assert lines == ["The two CRS definitions order every pair alike."]


def test_weight_sensitivity_draws_the_component_weights_under_the_components_definition():
    """Under the components definition the component weights are drawn too; the axis-weight draws are the
    same draws as under the mean (drawn first from the same seed)."""
    from crsbench.scoring.statistics import weight_sensitivity

    table = pd.DataFrame([[0.80, 0.30, 0.70, 0.70], [0.82, 0.20, 0.74, 0.72], [0.78, 0.36, 0.66, 0.69]],
                         index=["a", "b", "c"], columns=["discrimination", "calibration", "label_efficiency",
                                                         "robustness"])
    config = CRSConfig(definition="components", n_weight_draws=400)
    both = weight_sensitivity(table, "a", config)
    axes_only = weight_sensitivity(table, "a", config, vary=("axes",))
    assert both["p_top"].sum() == pytest.approx(1.0) and axes_only["p_top"].sum() == pytest.approx(1.0)
    assert not both["mean_rank"].equals(axes_only["mean_rank"])  # the component draws move the ranks


def test_auroc_against_each_definition_agrees_with_the_ranking_definitions_own_statistics(reports):
    for name, report in reports.items():
        table = report.components.agreement.set_index("definition")
        assert set(table.index) == {"mean_of_skills", "components"}
        own = report.agreement.table.iloc[0]
        for column in ("spearman", "kendall_tau_b", "n_reversed", "mean_abs_rank_displacement", "spearman_low",
                       "n_reversed_high"):
            assert table.loc[name, column] == pytest.approx(own[column])
    # the same numbers whichever definition ranks
    pd.testing.assert_frame_equal(reports["mean_of_skills"].components.agreement.drop(columns="interval"),
                                  reports["components"].components.agreement.drop(columns="interval"))


def test_the_case_bootstrap_draws_are_the_chosen_definition_of_the_axis_draws(simulated):
    """Every CRS draw (interval, P(rank 1), tier) is the ranking definition's function of that draw's axes,
    the same function as the point."""
    from crsbench.scoring.axes import compute_axes
    from crsbench.scoring.case_bootstrap import case_bootstrap

    records, stored = simulated
    axis_scores = compute_axes(records)
    config = CRSConfig(n_boot=40, definition="components")
    boot = case_bootstrap(records, stored, axis_scores, "b", config)
    ref = list(axis_scores.encoders).index("b")
    expected = crs_batch(boot.axis_draws, ref, config, list(axis_scores.axes)).crs
    np.testing.assert_array_equal(boot.overall.draws, expected)
    mean = crs_batch(boot.axis_draws, ref, CRSConfig(), list(axis_scores.axes)).crs
    assert not np.allclose(boot.overall.draws, mean)
