"""Bad subgroup input from the command line: one `error:` line naming the file, column or value, exit 2,
nothing written; a subgroup seen only in training is a stated note, and the run goes on."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from crsbench.cli.main import app

from _cohort_folders import cohort_folder, folder_suite

runner = CliRunner()


def _rows(extra):
    rows = []
    for i in range(80):
        row = {"image": f"i{i:03d}.png", "diagnosis": "a" if (i // 4) % 2 else "b", "sex": "F" if i % 3 else "M",
               "age": str(20 + i), "site": "north"}
        row.update(extra(i))
        rows.append(row)
    return rows


def _one_error_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    return result.output.replace("\n", " ")


@pytest.mark.parametrize("columns, expected", [
    (["ethnicity"], "missing column 'ethnicity'"),
    (["age:oops"], "bands must be 'decades' or ascending numbers"),
])
def test_select_refuses_a_subgroup_column_it_cannot_read(tmp_path, columns, expected):
    folder = cohort_folder(tmp_path, _rows(lambda i: {}))
    arguments = [a for c in columns for a in ("--subgroup-column", c)]
    result = runner.invoke(app, ["select", str(folder), "--encoders", "raw-pixels", "--label-column", "diagnosis",
                                 *arguments, "-o", str(tmp_path / "out"), "--dry-run"])
    assert expected in _one_error_line(result)
    assert not (tmp_path / "out").exists()


def test_select_writes_the_attributes_into_its_suite_and_leaves_them_out_of_the_label_guess(tmp_path):
    folder = cohort_folder(tmp_path, [{k: v for k, v in r.items() if k != "site"} for r in _rows(lambda i: {})])
    result = runner.invoke(app, ["select", str(folder), "--encoders", "raw-pixels", "--label-column", "diagnosis",
                                 "--subgroup-column", "sex", "--subgroup-column", "age:decades",
                                 "-o", str(tmp_path / "out"), "--dry-run"])
    assert result.exit_code == 0, result.output
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["tasks"][0]["dataset"]["subgroups"] == ["sex", "age:decades"]


def test_select_puts_the_subgroup_axis_in_its_suites_crs_block(tmp_path):
    folder = cohort_folder(tmp_path, [{k: v for k, v in r.items() if k != "site"} for r in _rows(lambda i: {})])
    result = runner.invoke(app, ["select", str(folder), "--encoders", "raw-pixels", "--label-column", "diagnosis",
                                 "--subgroup-column", "sex", "--subgroup-column", "age:decades",
                                 "--subgroup-axis", "sex", "-o", str(tmp_path / "out"), "--dry-run"])
    assert result.exit_code == 0, result.output
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["crs"]["subgroup_axis"] == ["sex"]


def test_select_refuses_a_subgroup_axis_the_cohort_is_not_read_with(tmp_path):
    folder = cohort_folder(tmp_path, _rows(lambda i: {}))
    result = runner.invoke(app, ["select", str(folder), "--encoders", "raw-pixels", "--label-column", "diagnosis",
                                 "--subgroup-column", "sex", "--subgroup-axis", "site",
                                 "-o", str(tmp_path / "out"), "--dry-run"])
    assert "--subgroup-axis site: not an attribute this cohort is read with" in _one_error_line(result)
    assert not (tmp_path / "out").exists()


def _suite(tmp_path, folder, subgroups: str):
    return folder_suite(tmp_path, folder, f", split_column: split, subgroups: {subgroups}")


def _split(i: int) -> str:
    return "test" if i % 4 == 0 else "val" if i % 4 == 1 else "train"


@pytest.mark.parametrize("subgroups, extra, expected", [
    ("[ethnicity]", lambda i: {}, "labels.csv: subgroup column 'ethnicity' does not exist"),
    ("[site]", lambda i: {}, "labels.csv column 'site': every row has the one value 'north': no subgroups to compare"),
    ("['age:decades']", lambda i: {"age": "n/k" if i == 5 else str(20 + i)},
     "labels.csv column 'age' line 7: age 'n/k' is not a number"),
])
def test_run_refuses_bad_attribute_columns_with_one_line_and_writes_nothing(tmp_path, subgroups, extra, expected):
    folder = cohort_folder(tmp_path, _rows(lambda i: {"split": _split(i), **extra(i)}))
    result = runner.invoke(app, ["run", str(_suite(tmp_path, folder, subgroups))])
    assert expected in _one_error_line(result)
    assert not (tmp_path / "out" / "results.sqlite").exists()


def test_a_subgroup_only_in_training_is_a_note_and_the_run_completes(tmp_path):
    rows = _rows(lambda i: {"split": _split(i), "site": "east" if _split(i) == "train" and i % 8 == 2 else "north"})
    folder = cohort_folder(tmp_path, rows)
    result = runner.invoke(app, ["run", str(_suite(tmp_path, folder, "[site, sex]"))])
    assert result.exit_code == 0, result.output
    assert "note: task t: subgroup(s) 'east' of 'site' appear only in the training data" in result.output.replace("\n", " ")
    assert (tmp_path / "out" / "predictions" / "subgroups").is_dir()


@pytest.mark.parametrize("command, call", [("compare", "compare"), ("leaderboard", "leaderboard_site")])
def test_compare_and_leaderboard_hand_the_subgroup_axis_to_the_scoring(tmp_path, monkeypatch, command, call):
    from crsbench import api

    seen = {}

    def capture(*args, **settings):
        seen.update(settings)
        raise SystemExit(0)  # what the command does after scoring is not this test's

    monkeypatch.setattr(api, call, capture)
    extra = ["-o", str(tmp_path / "board")] if command == "leaderboard" else []
    runner.invoke(app, [command, str(tmp_path), *extra, "--subgroup-axis", "sex", "--subgroup-axis", "age_band"])
    assert seen["subgroup_axis"] == ["sex", "age_band"]
