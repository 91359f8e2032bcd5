"""The subgroup part where people look: score --json, summary.json and the tables on disk, the same on a rerun;
the advice's sentence follows from the numbers of the table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from crsbench.cli.main import app
from crsbench.crs.definition import CRSConfig
from crsbench.report.subgroup_view import difference_sentences
from crsbench.scoring.score import score_records
from crsbench.selection.advice import subgroup_sentences
from crsbench.simulation.cohort import Design, EncoderTruth, simulate

from _tiny_results import copied_results


def test_score_json_and_summary_carry_the_subgroups_and_a_rerun_gives_the_same_tables(tiny_run, tmp_path):
    results = copied_results(tiny_run, tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["score", str(results), "--n-boot", "40", "--json"])
    assert first.exit_code == 0, first.output
    document = json.loads(first.stdout)
    subgroups = document["subgroups"]
    assert subgroups["target"].startswith("subgroup intervals: the paired case-and-seed bootstrap's own draws")
    assert subgroups["thresholds"] == {"min_cases": 30, "min_per_class": 10}
    assert subgroups["not_assessable"] == 2 * 5  # the tiny test set's 30 cases: every subgroup too small
    summary = json.loads((results / "scores" / "summary.json").read_text())
    assert summary["subgroups"]["not_assessable"] == 10
    table = pd.read_csv(results / "scores" / "subgroups.csv")
    assert set(table["attribute"]) == {"sex", "age_band"} and not table["assessable"].any()
    assert table["reason"].str.contains(r"cases \(< 30\)").all()
    second = runner.invoke(app, ["score", str(results), "--n-boot", "40", "--json", "--out", str(tmp_path / "again")])
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "again" / "subgroups.csv"), table)


def test_the_advice_names_a_planted_subgroup_gap_with_the_tables_numbers():
    design = Design((EncoderTruth("a", 2.4), EncoderTruth("b", 2.4)), n_cases=1200, seeds=(0,),
                    perturbations=("noise",), severities=(3,), difficulty_sd=0.3)
    records, stored = simulate(design, np.random.default_rng(4))
    (test_set,) = stored.test_sets["test_set"]
    cases = stored.case_set(test_set)
    sex = np.where(np.arange(len(cases.case_id)) % 2, "F", "M")
    stored.subgroups[test_set] = pd.DataFrame({"case_id": cases.case_id, "sex": sex})
    # b's probabilities on F replaced by noise: its AUROC there falls to about 0.5
    key = records.query("encoder == 'b' and condition_kind == 'clean' and fraction == 1.0")["record_key"].iloc[0]
    digest = stored.index.set_index("record_key").loc[key, "probs"]
    probs = np.array(stored.probabilities(digest))
    noise = np.random.default_rng(1).random((len(probs), 1))
    probs[sex == "F"] = np.hstack([1 - noise, noise])[sex == "F"].astype(np.float32)
    stored._memory[digest] = probs
    report = score_records(records, "a", CRSConfig(n_boot=300, n_weight_draws=0), predictions=stored)
    row = report.subgroups.table.query("encoder == 'b' and subgroup == 'F'").iloc[0]
    assert row["diff_excludes_zero"] and row["diff"] < -0.2
    expected = (f"b's AUROC for sex = F (task sim) is {-row['diff']:.3f} lower than for the rest "
                f"[{-row['diff_high']:.3f}, {-row['diff_low']:.3f}]")
    assert expected in difference_sentences(report)
    assert f"{expected}." in subgroup_sentences(report)
    assert not any(s.startswith("a's") for s in difference_sentences(report))
