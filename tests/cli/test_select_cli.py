"""`crsbench select` end to end: the printed task, the dry run, one-line errors naming file and row, a
planted answer, and the real PH2 and RetinaMNIST cohorts with the offline encoders."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from _load_counts import counting_loads
from crsbench.cli.main import app

from _shared_data import shared_file
from _cohort_folders import cohort_folder as _folder, cohort_rows as _rows

runner = CliRunner()


def _select(*args: str):
    return runner.invoke(app, ["select", *map(str, args)])


def test_dry_run_prints_task_and_counts_and_writes_the_suite(tmp_path):
    folder = _folder(tmp_path, _rows({"nevus": 30, "melanoma": 20}, {"nevus": 15, "melanoma": 10}))
    out = tmp_path / "out"
    result = _select(folder, "--encoders", "raw-pixels@input_size=16,colour-texture", "--label-column", "diagnosis",
                     "--group-column", "patient_id", "--modality", "dermoscopy", "--budget", "10m", "-o", out,
                     "--dry-run")
    assert result.exit_code == 0, result.output
    assert "task: single-label (one label column 'diagnosis'), 2 classes; images per class: melanoma 20, nevus 30" \
        in result.output
    assert "reference: raw-pixels@input_size=16" in result.output
    assert re.search(r"plan: \d seeds, label fractions", result.output)
    assert "dry run: nothing run" in result.output
    suite = yaml.safe_load((out / "suite.yaml").read_text())
    assert suite["reference"] == "raw-pixels@input_size=16" and len(suite["seeds"]) >= 3
    assert suite["tasks"][0]["dataset"]["group_column"] == "patient_id"
    assert set(suite["perturbations"]["select"]) <= {
        "gaussian_noise", "shot_noise", "defocus_blur", "motion_blur", "jpeg", "pixelate", "brightness_up",
        "brightness_down", "contrast_up", "contrast_down", "black_corners", "hair"}
    assert not (out / "results.sqlite").exists()


def test_a_missing_label_column_is_one_line_naming_the_file(tmp_path):
    folder = _folder(tmp_path, _rows({"a": 10, "b": 10}))
    result = _select(folder, "--encoders", "raw-pixels", "--label-column", "grade", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert "labels.csv: missing label column 'grade' (columns: image, diagnosis)" in result.output
    rows = [{**r, "site": "x"} for r in _rows({"a": 10, "b": 10})]
    result = _select(_folder(tmp_path / "two", rows), "--encoders", "raw-pixels", "-o", tmp_path / "out")
    assert result.exit_code == 2 and "missing label column 'label'" in result.output
    assert "--label-column" in result.output and "Traceback" not in result.output


def test_an_unreadable_image_names_its_csv_line(tmp_path):
    rows = _rows({"a": 12, "b": 12})
    folder = _folder(tmp_path, rows, broken=("b-004.png",))
    result = _select(folder, "--encoders", "raw-pixels", "--label-column", "diagnosis", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert re.search(r"labels\.csv line 18: image .*b-004\.png cannot be read", result.output), result.output


def test_a_class_from_one_patient_is_refused_naming_the_patient(tmp_path):
    folder = _folder(tmp_path, _rows({"nevus": 30, "rare": 4}, {"nevus": 10, "rare": 1}))
    result = _select(folder, "--encoders", "raw-pixels", "--label-column", "diagnosis", "--group-column",
                     "patient_id", "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert "labels.csv: class 'rare' has images from only 1 patient(s) in column 'patient_id' (rare-p0;" \
        in result.output
    assert "at lines 32, 33, 34, 35)" in result.output  # the rows that carry it


def test_too_few_images_for_the_requested_fractions(tmp_path):
    folder = _folder(tmp_path, _rows({"common": 60, "rare": 12}))
    result = _select(folder, "--encoders", "raw-pixels", "--label-column", "diagnosis", "--fractions", "0.05,0.5",
                     "-o", tmp_path / "out", "--dry-run")
    assert result.exit_code == 2
    assert re.search(r"labels\.csv: class 'rare' has \d+ training image\(s\) \(lines .*\); at label fraction 0.05 "
                     r"the probe would see 1, fewer than 2", result.output), result.output


def test_a_bad_medmnist_label_names_its_split_and_row(tmp_path):
    arrays = {f"{s}_images": np.zeros((6, 8, 8, 3), np.uint8) for s in ("train", "val", "test")}
    arrays |= {f"{s}_labels": np.arange(6).reshape(6, 1) % 3 for s in ("train", "val", "test")}
    arrays["val_labels"] = np.array([[0], [1], [2], [0], [-1], [2]])
    np.savez(tmp_path / "pathmnist.npz", **arrays)
    result = _select(tmp_path / "pathmnist.npz", "--encoders", "raw-pixels", "-o", tmp_path / "out", "--dry-run")
    assert result.exit_code == 2
    assert "pathmnist.npz: val row 4: label [-1] is negative" in result.output, result.output


def test_ordinal_must_be_declared_and_whole_numbers(tmp_path):
    rows = [{"image": f"g-{i}.png", "grade": str(i % 3)} for i in range(30)]
    folder = _folder(tmp_path, rows)
    result = _select(folder, "--encoders", "raw-pixels", "-o", tmp_path / "out", "--dry-run", "--budget", "5m")
    assert result.exit_code == 0, result.output
    assert "task: single-label (one label column 'grade')" in result.output and "pass --ordinal" in result.output
    result = _select(folder, "--encoders", "raw-pixels", "-o", tmp_path / "out2", "--dry-run", "--ordinal")
    assert result.exit_code == 0 and "task: ordinal (declared with --ordinal)" in result.output


# ----------------------------------------------------------------------------- end to end


@pytest.mark.slow  # two whole selections, every perturbation of a fundus cohort
def test_a_rerun_on_a_warm_cache_plans_no_encoding_and_gets_the_same_results(tmp_path):
    """The second plan costs only what the cache lacks and says how much it holds; the lookup uses the
    run's own keys, so what it calls cached is what the run does not encode."""
    import json

    import pandas as pd

    from crsbench import api
    from crsbench.selection.duration import parse_duration

    folder = _folder(tmp_path, _rows({"nevus": 8, "melanoma": 8}), size=160)  # enough work to time
    cache = tmp_path / "cache"

    def select(out: str, *extra: str) -> str:
        result = _select(folder, "--encoders", "raw-pixels@input_size=16,colour-texture", "--label-column",
                         "diagnosis", "--modality", "fundus", "--budget", "10m", "--seeds", "3", "--fractions", "0.5",
                         "-o", tmp_path / out, "--cache-dir", cache, *extra)
        assert result.exit_code == 0, result.output
        return result.output

    def encoding(output: str) -> str:
        return re.search(r"to run of which (\S+) encoding", output).group(1)

    def protocol(output: str) -> str:
        return re.search(r"plan: ([^;]+);", output).group(1)

    cold, warm = select("cold"), select("warm")
    assert "embeddings cached: 0 of 6 clean splits, 0 of 90 perturbed test sets" in cold  # fundus: 9 x 5 each
    assert "embeddings cached: 6 of 6 clean splits, 90 of 90 perturbed test sets" in warm
    assert parse_duration(encoding(cold)) > 0 and encoding(warm) == "0s"
    assert "0 encoder batches run" in warm and warm.count("perturbed not timed: all cached") == 2
    assert protocol(cold) == protocol(warm)
    pd.testing.assert_frame_equal(api.score(tmp_path / "cold", n_boot=0).point.scores,
                                  api.score(tmp_path / "warm", n_boot=0).point.scores)

    # one clean split and one perturbed test set of one encoder gone: counted as missing, and that
    # encoder's perturbed cost is timed again since the plan needs it
    for sidecar in cache.glob("*.json"):
        made_for = json.loads(sidecar.read_text())
        if made_for["encoder"] == "colour-texture" and (
                made_for["split"] == "train" or made_for["condition"].startswith("perturb:jpeg:s3:")):
            sidecar.unlink()
            sidecar.with_suffix(".npy").unlink()
    partial = select("partial", "--dry-run")
    assert "embeddings cached: 5 of 6 clean splits, 89 of 90 perturbed test sets" in partial
    assert re.search(r"measured colour-texture: [\d.]+ ms per image \([\d.]+ ms perturbed\)", partial), partial
    assert partial.count("perturbed not timed: all cached") == 1



@pytest.mark.slow
def test_planted_answer_comes_out_alone_in_the_leading_tier(tmp_path, monkeypatch):
    import _planted_encoders as planted

    images, labels = planted.cohort(600)
    np.savez(tmp_path / "cohort.npz", images=images, labels=labels)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    encoders = "_planted_encoders:blurred_a,_planted_encoders:sharp,_planted_encoders:blurred_b"
    args = (tmp_path / "cohort.npz", "--encoders", encoders, "--budget", "1m", "--seeds", "3", "--fractions",
            "0.1,1", "-o", out, "--cache-dir", tmp_path / "cache")
    result = _select(*args)
    assert result.exit_code == 0, result.output
    assert "Leading tier: _planted_encoders:sharp\n" in result.output
    assert result.output.count("examples per class, train/val/test") == 1  # select shows it; the run does not repeat it
    assert re.search(r"select finished in \S+ \(\d+ s\); estimated \S+", result.output)
    assert "Recommendation: _planted_encoders:sharp, alone in the leading tier" in result.output
    assert (out / "report" / "report.html").is_file() and (out / "suite.yaml").is_file()
    from crsbench import api

    scores = api.score(out, n_boot=0).point.scores
    axes = ["discrimination", "calibration", "label_efficiency", "robustness"]
    planted_name, rivals = "_planted_encoders:sharp", ["_planted_encoders:blurred_a", "_planted_encoders:blurred_b"]
    for axis in axes:  # built to be better on every axis, and it is
        for rival in rivals:
            assert scores.loc[planted_name, axis] > scores.loc[rival, axis], (axis, rival, scores[axes])
    # a rerun with the same arguments resumes the stored suite: nothing is recomputed
    again = _select(*args)
    assert again.exit_code == 0 and "resuming" in again.output and "0 records written" in again.output


def _real_run(tmp_path, data, *args):
    out = tmp_path / "out"
    # the budget keeps the test short; on a slower machine the smallest protocol runs all the same
    result = _select(data, "--encoders", "efficientnet-lite0@input_size=64,colour-texture", "--budget", "1m",
                     "--over-budget", "-o", out, "--cache-dir", tmp_path / "cache", *args)
    assert result.exit_code == 0, result.output
    assert re.search(r"Leading tier: \S", result.output)
    assert "Recommendation:" in result.output or "cannot separate" in result.output
    assert (out / "report" / "report.html").is_file()
    assert re.search(r"select finished in \S+ \(\d+ s\); estimated \S+ \(\d+ s\): measuring", result.output)
    return result.output


@pytest.mark.slow
def test_ph2_folder_with_offline_encoders(tmp_path):
    labels = shared_file("ph2", "labels.csv")
    output = _real_run(tmp_path, labels.parent, "--label-column", "diagnosis", "--modality", "dermoscopy")
    assert "3 classes; images per class: atypical_nevus 80, common_nevus 80, melanoma 40" in output


@pytest.mark.slow
def test_retinamnist_npz_with_offline_encoders(tmp_path):
    npz = shared_file("medmnist", "retinamnist.npz")
    output = _real_run(tmp_path, npz, "--modality", "fundus")
    assert "task: ordinal (declared by the dataset's metadata), 5 classes" in output


@pytest.mark.slow  # four selects, each writing its report: half a minute
def test_select_is_a_library_call_returning_each_step_and_the_command_shows_the_same(tmp_path, monkeypatch):
    """api.select does the work and returns a value; the command only renders it."""
    from crsbench import api

    folder = _folder(tmp_path, _rows({"nevus": 12, "melanoma": 12}))
    said = []
    request = dict(data=folder, encoders="raw-pixels@input_size=16,colour-texture", label_column="diagnosis",
                   budget_s=600.0, seeds=3, fractions=[0.5, 1.0], output=tmp_path / "lib",
                   cache_dir=tmp_path / "cache")
    selection = api.select(request, say=lambda line, style=None: said.append(line))
    assert selection.prepared.plan is not None and selection.prepared.reference == "raw-pixels@input_size=16"
    assert selection.summary.written > 0 and selection.report_html.is_file()
    assert set(selection.scored.tier.members) <= {"raw-pixels@input_size=16", "colour-texture"}
    assert selection.advice and any(line.startswith("plan: ") for line in said)
    assert selection.timing.startswith("select finished in")
    # every test class has fewer than the minimum of cases: named as the labels name them, not by index
    small = " ".join(s for s in selection.advice if "fewer than the minimum" in s or s.startswith("Small classes"))
    assert ("nevus" in small or "melanoma" in small) and "class 0" not in small and "class 1" not in small
    # the measured cost per image reaches the report's score-against-cost figure
    assert (tmp_path / "lib" / "report" / "figures" / "score_cost.png").is_file()
    # the classes keep their names when the results are scored again on their own, from the written suite
    rescored = api.score(tmp_path / "lib", n_boot=0)
    assert set(rescored.evidence.class_counts["name"]) == {"melanoma", "nevus"}
    assert set(selection.scored.evidence.class_counts["name"]) == {"melanoma", "nevus"}
    counts = counting_loads(monkeypatch)
    again = api.select(request, say=lambda line, style=None: None)  # the same arguments: resumed, nothing rerun
    assert counts == {"load_records": 1, "load_predictions": 1}  # scores, advice and report read them once
    assert again.prepared.resumed and again.summary.written == 0 and again.advice == selection.advice
    result = _select(folder, "--encoders", "raw-pixels@input_size=16,colour-texture", "--label-column", "diagnosis",
                     "--budget", "10m", "--seeds", "3", "--fractions", "0.5", "-o", tmp_path / "lib",
                     "--cache-dir", tmp_path / "cache")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert all(" ".join(sentence.split()) in flat for sentence in selection.advice)
    assert "Components across tasks" in flat and "side by side" in flat
    # --crs-definition reaches the suite select writes, and select --json carries the components
    as_json = _select(folder, "--encoders", "raw-pixels@input_size=16,colour-texture", "--label-column", "diagnosis",
                      "--budget", "10m", "--seeds", "3", "--fractions", "0.5", "-o", tmp_path / "lib",
                      "--cache-dir", tmp_path / "cache", "--crs-definition", "components", "--json")
    assert as_json.exit_code == 0, as_json.output
    scores = json.loads(as_json.stdout)["scores"]
    assert scores["definition"] == "components" and scores["orders"]["components"] == \
        [e["encoder"] for e in scores["encoders"]]
    assert {"p_front", "p_dominates_reference", "worst_axis", "balance_low"} <= set(scores["components"][0])
    assert "definition: components" in (tmp_path / "lib" / "suite.yaml").read_text()
