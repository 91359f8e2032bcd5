"""`report` after `score` reads the stored scored value instead of rescoring, only for the same inputs, and
never a tampered or foreign one (report/scored_files.py)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from _load_counts import counting_loads
from _tiny_results import copied_results
from crsbench import api
from crsbench.cli.main import app
from crsbench.report.scored_files import FOLDER, VALUE_FILE, read_scored, write_scored

runner = CliRunner()


@pytest.fixture(scope="module")
def results(tiny_run, tmp_path_factory):
    return copied_results(tiny_run, tmp_path_factory.mktemp("scored"))


def _same(a, b):
    for field in dataclasses.fields(a):
        left, right = getattr(a, field.name), getattr(b, field.name)
        if isinstance(left, pd.DataFrame):
            pd.testing.assert_frame_equal(left, right, check_exact=True)
        elif dataclasses.is_dataclass(left) and field.name != "settings":  # a part of the report: field by field
            assert type(left) is type(right), field.name
            _same(left, right)
        else:
            assert left == right, field.name


def test_report_after_score_reads_the_stored_value_and_it_is_the_same_value(results, tmp_path):
    scored = runner.invoke(app, ["score", str(results), "--n-boot", "150"])
    assert scored.exit_code == 0, scored.output
    assert (results / FOLDER / VALUE_FILE).is_file()
    reused = runner.invoke(app, ["report", str(results), "--n-boot", "150", "-o", str(tmp_path / "r1")])
    assert reused.exit_code == 0, reused.output
    assert "not recomputed" in reused.output and (tmp_path / "r1" / "report.html").is_file()
    value, was_reused = api.scored_or_score(results, n_boot=150)
    assert was_reused
    _same(value, api.score(results, n_boot=150))  # what a fresh score gives, table for table
    other = runner.invoke(app, ["report", str(results), "--n-boot", "120", "-o", str(tmp_path / "r2")])
    assert other.exit_code == 0 and "computed for the report" in other.output


def test_score_and_report_without_draws_given_both_take_the_suites_so_the_report_reads_the_score(tiny_run, tmp_path):
    from _tiny_results import tiny_suite

    shutil.copytree(tiny_run / "cache", tmp_path / "cache")  # the embeddings: only the probes are fitted again
    api.run(tiny_suite(tmp_path, n_boot=90))
    results = tmp_path / "out"
    scored = runner.invoke(app, ["score", str(results)])
    assert scored.exit_code == 0, scored.output
    assert json.loads((results / "scores" / "summary.json").read_text())["settings"]["n_boot"] == 90
    reused = runner.invoke(app, ["report", str(results), "-o", str(tmp_path / "report")])
    assert reused.exit_code == 0 and "not recomputed" in reused.output, reused.output


def test_other_inputs_a_tampered_table_or_a_foreign_schema_are_not_read(results, tmp_path):
    fresh = api.score(results, n_boot=60)
    write_scored(fresh, tmp_path)
    assert read_scored(tmp_path, fresh.inputs_key) is not None
    assert read_scored(tmp_path, "0" * 64) is None  # other inputs
    other_reference = api.scoring_inputs(results, "raw-pixels", n_boot=60).key
    assert other_reference != fresh.inputs_key and read_scored(tmp_path, other_reference) is None
    assert api.scoring_inputs(results, n_boot=60).key == fresh.inputs_key

    edited = tmp_path / "edited"
    shutil.copytree(tmp_path / FOLDER, edited / FOLDER)
    table = pd.read_parquet(edited / FOLDER / "point.scores.parquet")
    table.iloc[0, table.columns.get_loc("crs")] += 1.0
    table.to_parquet(edited / FOLDER / "point.scores.parquet", index=True)
    assert read_scored(edited, fresh.inputs_key) is None

    foreign = tmp_path / "foreign"
    shutil.copytree(tmp_path / FOLDER, foreign / FOLDER)
    document = json.loads((foreign / FOLDER / VALUE_FILE).read_text())
    for change in ({"schema": "crsbench.scored/0"}, {"fields": {**document["fields"], "__class__": "os.system"}}):
        (foreign / FOLDER / VALUE_FILE).write_text(json.dumps({**document, **change}))
        assert read_scored(foreign, fresh.inputs_key) is None
    (foreign / FOLDER / VALUE_FILE).write_text("not json")
    assert read_scored(foreign, fresh.inputs_key) is None


def test_a_value_of_the_older_schema_is_recomputed_with_a_note_never_misread(results, tmp_path):
    """A value stored as crsbench.scored/1 (one flat table set) with the very inputs key: not read, rescored,
    and the new value says so; once stored again it is read as usual."""
    fresh = api.score(results, n_boot=30, n_weight_draws=0)
    folder = tmp_path / "older"
    shutil.copytree(results, folder)
    write_scored(fresh, folder)
    document = json.loads((folder / FOLDER / VALUE_FILE).read_text())
    older = {"schema": "crsbench.scored/1", "inputs_key": document["inputs_key"], "tables": {},
             "fields": {**document["fields"], "leading_tier": document["parts"]["tier"]["members"]}}
    (folder / FOLDER / VALUE_FILE).write_text(json.dumps(older))
    assert read_scored(folder, fresh.inputs_key) is None
    value, reused = api.scored_or_score(folder, n_boot=30, n_weight_draws=0)
    assert not reused
    assert value.notes[0].startswith("the stored score value is of an older format (crsbench.scored/1, now "
                                     "crsbench.scored/3): recomputed")
    _same(dataclasses.replace(value, notes=value.notes[1:]), dataclasses.replace(fresh, notes=fresh.notes))
    again, reused = api.scored_or_score(folder, n_boot=30, n_weight_draws=0)
    assert reused and again.notes == value.notes  # the value as it was computed, note and all


def test_a_report_of_results_it_cannot_write_to_is_still_written(results, tmp_path, monkeypatch):
    import crsbench.report.scored_files as scored_files

    def refuse(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied", str(results / FOLDER))

    monkeypatch.setattr(scored_files, "write_scored", refuse)
    value, reused = api.scored_or_score(results, n_boot=40)
    assert not reused and value.inputs_key
    written = api.write_report(results, tmp_path / "r", n_boot=40)
    assert written.html.is_file()


def test_each_command_reads_the_records_and_the_predictions_once(results, tmp_path, monkeypatch):
    own = tmp_path / "results"
    shutil.copytree(results, own)
    counts = counting_loads(monkeypatch)
    for args in (["report", str(own), "--n-boot", "30", "-o", str(tmp_path / "r1")],  # scored for the report
                 ["score", str(own), "--n-boot", "40"],
                 ["report", str(own), "--n-boot", "40", "-o", str(tmp_path / "r2")]):  # the stored value
        counts.clear()
        shown = runner.invoke(app, args)
        assert shown.exit_code == 0, shown.output
        assert counts == {"load_records": 1, "load_predictions": 1}, (args, counts)
    assert "not recomputed" in shown.output


SCORING_CONSTANT = "EXACT_LIMIT = 2e10"  # scoring/case_bootstrap.py: where the bootstrap engine changes


def _scored_with(package: Path, results: Path) -> str:
    """Whether `report`'s scoring step reused the stored value, run by the package copy under `package`."""
    code = ("import sys; from crsbench import api; "
            "value, reused = api.scored_or_score(sys.argv[1], n_boot=20, n_weight_draws=20); print(reused)")
    shown = subprocess.run([sys.executable, "-c", code, str(results)], capture_output=True, text=True,
                           env={"PYTHONPATH": str(package), "PATH": "", "OMP_NUM_THREADS": "1"}, check=True)
    return shown.stdout.strip()


@pytest.mark.slow  # three fresh interpreters, each importing the package copy and scoring
def test_a_stored_score_is_recomputed_after_an_edit_of_the_scoring_code_and_only_then(results, tmp_path):
    import crsbench

    package = tmp_path / "src"
    shutil.copytree(Path(crsbench.__file__).parent, package / "crsbench", ignore=shutil.ignore_patterns("__pycache__"))
    own = tmp_path / "results"
    shutil.copytree(results, own)
    assert _scored_with(package, own) == "False"  # scored, then stored
    runner_module = package / "crsbench" / "run" / "runner.py"  # the run side: no part of the score
    runner_module.write_text(runner_module.read_text() + "\n# edited\n")
    assert _scored_with(package, own) == "True"  # read back
    engine = package / "crsbench" / "scoring" / "case_bootstrap.py"
    assert SCORING_CONSTANT in engine.read_text()
    engine.write_text(engine.read_text().replace(SCORING_CONSTANT, "EXACT_LIMIT = 3e10"))
    assert _scored_with(package, own) == "False"  # the scoring source changed: scored afresh
