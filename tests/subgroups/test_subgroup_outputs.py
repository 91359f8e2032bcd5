"""The subgroup part where people look: score --json, summary.json and the tables on disk, the same on a rerun;
the advice's sentence follows from the numbers of the table."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from crsbench.cli.main import app
from crsbench.report.subgroup_view import GAP_NOTE, difference_sentences, subgroup_lines, subgroup_tables
from crsbench.selection.advice import subgroup_sentences

from _planted_subgroup import planted_sex_gap
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
    again = runner.invoke(app, ["score", str(results), "--n-boot", "40", "--json", "--out", str(tmp_path / "again")])
    assert again.exit_code == 0, again.output
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "again" / "subgroups.csv"), table)


def test_the_advice_names_a_planted_subgroup_gap_with_the_tables_numbers():
    _, _, report = planted_sex_gap()
    # the flags' family: each encoder on the one test set, its attributes together
    assert report.subgroups.target.endswith("a flag is family-wise per encoder and set, 2 such families here")
    row = report.subgroups.table.query("encoder == 'b' and subgroup == 'F'").iloc[0]
    assert row["diff_excludes_zero"] and row["diff"] < -0.2
    expected = (f"b's AUROC for sex = F (task sim) is {-row['diff']:.3f} lower than for the rest "
                f"[{-row['diff_high']:.3f}, {-row['diff_low']:.3f}]")
    assert expected in difference_sentences(report)
    assert f"{expected}." in subgroup_sentences(report)
    assert subgroup_sentences(report)[-1].endswith("a flag is family-wise per encoder and set, 2 such families here.")
    assert not any(s.startswith("a's") for s in difference_sentences(report))


def test_the_terminal_says_a_gaps_interval_is_no_test_where_it_shows_one():
    _, _, report = planted_sex_gap()
    lines = [line.plain for line in subgroup_lines(report)]
    worst = [line for line in lines if line.startswith("subgroup worst:") and line != GAP_NOTE]
    assert worst and lines[-1] == GAP_NOTE
    # the reason the note is there: the gap's interval never reaches below 0
    assert (report.subgroups.worst["gap_low"].dropna() >= 0).all()


def test_a_set_with_no_assessable_subgroup_is_listed_with_its_reasons_not_drawn_as_a_table_of_na(tiny_run, tmp_path):
    from rich.table import Table
    from rich.text import Text

    from crsbench import api

    _, _, planted = planted_sex_gap()
    assert all(isinstance(view, Table) for view in subgroup_tables(planted))
    report = api.score(copied_results(tiny_run, tmp_path), n_boot=20, n_weight_draws=0)
    views = subgroup_tables(report)
    assert views and all(isinstance(view, Text) for view in views)
    lines = views[0].plain.splitlines()
    assert lines[0].endswith("no subgroup is assessable, so no AUROC per subgroup")
    table = report.subgroups.table.drop_duplicates(["task", "set", "attribute", "subgroup"])
    first = table.iloc[0]
    assert len(lines) == 1 + len(table[(table["task"] == first["task"]) & (table["set"] == first["set"])])
    assert f"  {first['attribute']} = {first['subgroup']} ({int(first['n_cases'])} cases): {first['reason']}" in lines
