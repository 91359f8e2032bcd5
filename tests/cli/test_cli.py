"""End-to-end: the CLI on generated data, the warm-cache rerun, and a real SIGKILL in mid-grid."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench import api
from crsbench.cli.main import app

TIMING_AND_SESSION = ["run_id", "suite_hash", "created_at", "fit_seconds", "eval_seconds"]

KILL_SUITE = """
name: kill-test
output: {output}
cache: {cache}
encoders: [raw-pixels, colour-texture]
tasks:
  - name: derm
    dataset: {{kind: demo, specialty: derm, n_train: 100, n_val: 30, n_test: 50}}
  - name: cxr
    dataset: {{kind: demo, specialty: cxr, n_train: 100, n_val: 30, n_test: 50}}
    shift: {{kind: demo, specialty: cxr, site: B, n_train: 10, n_val: 10, n_test: 50}}
seeds: [0, 1, 2, 3, 4]
fractions: [0.25, 1.0]
probe: {{c_grid: [0.01, 0.1]}}
"""


def _count(db):
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0


def _run_cli(suite_path, env):
    return subprocess.Popen([sys.executable, "-m", "crsbench", "run", str(suite_path)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_sigkill_mid_grid_then_rerun_completes_with_no_lost_or_duplicate_record(tmp_path):
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    killed = tmp_path / "killed.yaml"
    killed.write_text(KILL_SUITE.format(output=tmp_path / "killed", cache=tmp_path / "cache"))
    db = tmp_path / "killed" / "results.sqlite"
    expected_total = 2 * 2 * 5 * 2 + 2 * 5  # clean records for every unit + one shift record per cxr full-label unit

    process = _run_cli(killed, env)
    deadline = time.time() + 240
    while _count(db) < 8 and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be killed; make the grid larger"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    at_kill = _count(db)
    assert 8 <= at_kill < expected_total

    assert _run_cli(killed, env).wait() == 0
    resumed = api.records(tmp_path / "killed")
    assert len(resumed) == expected_total == resumed["record_key"].nunique()
    assert resumed["run_id"].nunique() == 2  # the first session's records were kept, not redone

    # an uninterrupted run from the same (warm) cache gives identical records
    clean = tmp_path / "clean.yaml"
    clean.write_text(KILL_SUITE.format(output=tmp_path / "clean", cache=tmp_path / "cache"))
    assert _run_cli(clean, env).wait() == 0
    reference = api.records(tmp_path / "clean")
    left = resumed.drop(columns=TIMING_AND_SESSION).set_index("record_key").sort_index()
    right = reference.drop(columns=TIMING_AND_SESSION).set_index("record_key").sort_index()
    pd.testing.assert_frame_equal(left, right)


@pytest.mark.slow
def test_quick_demo_end_to_end_then_warm_rerun_runs_no_forward_pass(tmp_path):
    runner = CliRunner()
    args = ["demo", "--quick", "--output", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "AUROC" in first.output and "efficientnet-lite0" in first.output
    records = api.records(tmp_path / "out")
    assert set(records.encoder) == {"lite0-64", "raw-pixels", "colour-texture"}
    assert set(records.task) == {"derm", "fundus", "cxr"}
    assert records[["auroc", "ece", "brier", "nll"]].notna().all().all()
    assert records.loc[records.task == "fundus", "kappa_quadratic"].notna().all()
    # scored at the quick suite's 2,000 draws, so a report of its results later reads that value
    assert json.loads((tmp_path / "out" / "scores" / "summary.json").read_text())["settings"]["n_boot"] == 2000
    report = runner.invoke(app, ["report", str(tmp_path / "out"), "-o", str(tmp_path / "report")])
    assert report.exit_code == 0 and "not recomputed" in report.output, report.output
    scored = api.load_results(tmp_path / "out")  # the store's 162 records: fitted probes' and 4 refits per cell
    assert len(scored.refits) and len(scored.frame) + len(scored.refits) == len(records)
    assert f"from {len(scored.frame)} run records and {len(scored.refits)} refit records." in \
        (tmp_path / "report" / "report.html").read_text()

    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "0 records written" in second.output and "0 encoder batches run" in second.output

    # a fresh output folder with the warm cache refits probes but runs no encoder forward pass
    summary = api.run(api.demo_suite(quick=True, output=tmp_path / "again"), cache_dir=tmp_path / "cache")
    assert summary.forward_passes == 0 and summary.written == len(records)


def test_results_export_writes_parquet_and_csv(tmp_path):
    suite_path = tmp_path / "s.yaml"
    suite_path.write_text(textwrap.dedent(f"""
        name: tiny
        output: {tmp_path / 'out'}
        cache: {tmp_path / 'cache'}
        encoders: [raw-pixels]
        tasks:
          - name: derm
            dataset: {{kind: demo, specialty: derm, n_train: 60, n_val: 20, n_test: 30}}
        seeds: [0]
        fractions: [1.0]
    """))
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(suite_path)]).exit_code == 0
    result = runner.invoke(app, ["results", str(tmp_path / "out"), "--export"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "records.parquet").exists() and (tmp_path / "out" / "records.csv").exists()
    assert len(pd.read_parquet(tmp_path / "out" / "records.parquet")) == 1
    from crsbench.results.store import ResultsStore

    with ResultsStore(tmp_path / "out" / "results.sqlite") as store:
        read = store.run_datasets()
    assert read[["task", "role", "dataset", "dropped"]].values.tolist() == [["derm", "task", "demo-derm", "{}"]]


def test_run_on_missing_results_is_an_error(tmp_path):
    result = CliRunner().invoke(app, ["results", str(tmp_path)])
    assert result.exit_code == 2 and "no results database" in result.output


def test_demo_uses_verified_medmnist_files_when_present(monkeypatch):
    from _shared_data import shared_file

    data = shared_file("medmnist", "retinamnist.npz").parent.parent
    monkeypatch.setenv("CRSBENCH_DATA", str(data))
    tasks = {t.name: t for t in api.demo_suite(quick=True).tasks}
    assert tasks["fundus"].dataset.kind == "medmnist" and tasks["fundus"].dataset.options()["name"] == "retinamnist"
    # the shared PneumoniaMNIST is a re-packed copy whose md5 is not the official one: the demo keeps its own data
    assert tasks["cxr"].dataset.kind == "demo" and tasks["derm"].dataset.kind == "demo"
    assert {t.dataset.kind for t in api.demo_suite(quick=True, use_medmnist=False).tasks} == {"demo"}


def test_error_text_with_brackets_is_printed_verbatim(tmp_path):
    missing = tmp_path / "scan[zoo].png"
    result = CliRunner().invoke(app, ["perturbations", "--preview", str(missing)])
    assert result.exit_code == 2 and "scan[zoo].png: cannot read image" in result.output.replace("\n", "")


def _unscorable_results(folder):
    """Records with no clean fraction-1.0 row: scoring fails with a ValueError-type user error."""
    from crsbench.results.records import RunRecord
    from crsbench.results.store import ResultsStore

    with ResultsStore(folder / "results.sqlite") as store:
        for encoder in ("a[bold]", "b"):
            record = {name: None for name in RunRecord.model_fields}
            record.update(record_key=encoder, encoder=encoder, task="t", seed=0, fraction=0.5, condition_kind="clean",
                          condition="clean", severity=0, auroc=0.7, ece=0.1, brier=0.2, nll=0.5)
            store.add(record)
    return folder


def _error_lines(output):
    return [line for line in output.splitlines() if line.startswith("error:")]


def test_demo_and_score_report_a_scoring_error_in_the_same_one_line(tmp_path, monkeypatch):
    folder = _unscorable_results(tmp_path)
    runner = CliRunner()
    scored = runner.invoke(app, ["score", str(folder), "--n-boot", "0"])

    class FakeSuite:
        output, reference, tasks = str(folder), None, []

    monkeypatch.setattr(api, "demo_suite", lambda **_: FakeSuite())
    monkeypatch.setattr(api, "run", lambda suite, **_: api.RunSummary("r", folder, 2, 0, 2, 0))
    demo = runner.invoke(app, ["demo", "--quick"])
    assert scored.exit_code == demo.exit_code == 2
    assert demo.exception is None or isinstance(demo.exception, SystemExit)
    assert _error_lines(scored.output) == _error_lines(demo.output)
    assert len(_error_lines(demo.output)) == 1 and "cannot score" in _error_lines(demo.output)[0]
    assert "Traceback" not in demo.output


@pytest.mark.parametrize("name", ["demo", "demo-quick", "crs-bench"])
def test_every_built_in_suite_name_validates(name):
    result = CliRunner().invoke(app, ["validate", name])
    assert result.exit_code == 0, result.output
    assert f"{name}: ok" in result.output


def test_an_unknown_suite_is_one_line_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "cannot read suite file" in result.output


def _folder_suite(tmp_path, csv_name="labels.csv"):
    from PIL import Image
    import numpy as np

    root = tmp_path / "images"
    root.mkdir()
    rows = ["image,dx"]
    for i in range(12):
        Image.fromarray(np.full((8, 8, 3), i * 20, np.uint8)).save(root / f"{i}.png")
        rows.append(f"{i}.png,{'ab'[i % 2]}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text(textwrap.dedent(f"""\
        name: t
        encoders: [raw-pixels]
        tasks:
          - name: own
            dataset: {{kind: folder, root: images, csv: {csv_name}, label_columns: dx, max_side: 8,
                      fractions: [0.5, 0.25, 0.25]}}
        """))
    return suite, root


def test_validate_data_resolves_datasets_and_decodes_a_sample(tmp_path):
    suite, root = _folder_suite(tmp_path)
    result = CliRunner().invoke(app, ["validate", str(suite), "--data"])
    assert result.exit_code == 0, result.output
    assert "tasks.0.dataset: images: train 6, val 3, test 3; files present" in result.output
    for image in root.glob("*.png"):  # present, but none decodes
        image.write_bytes(b"not a png")
    result = CliRunner().invoke(app, ["validate", str(suite), "--data"])
    assert result.exit_code == 2 and "tasks.0.dataset: " in result.output and "cannot read image" in result.output
    assert CliRunner().invoke(app, ["validate", str(suite)]).exit_code == 0  # without --data no data is read


def test_validate_data_names_a_mistyped_path(tmp_path):
    suite, _ = _folder_suite(tmp_path, csv_name="lables.csv")
    result = CliRunner().invoke(app, ["validate", str(suite), "--data"])
    assert result.exit_code == 2 and "tasks.0.dataset: labels CSV not found: " in result.output
    assert len(_error_lines(result.output)) == 1
