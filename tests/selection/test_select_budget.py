"""`select --budget` is a bound: measuring counts against it, the plan is cut to fit, and where even the
smallest protocol cannot fit nothing runs (one line, exit 2, naming the smallest budget that would work)
unless --over-budget."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from crsbench.cli.main import app
from crsbench.selection.budget import EncoderCost, ImageCounts, plan_budget
from crsbench.selection.duration import format_budget, parse_duration, round_up_budget
from crsbench.selection.workflow import Estimate, SelectionRequest, over_budget_message
from _cohort_folders import cohort_folder as _folder, cohort_rows as _rows

DERM = ("gaussian_noise", "shot_noise", "defocus_blur", "motion_blur", "jpeg", "pixelate", "brightness_up",
        "brightness_down", "contrast_up", "contrast_down", "black_corners", "hair")
FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
COSTS = {"cnn": EncoderCost(0.05, 0.5, 2.0), "pixels": EncoderCost(0.005, 1.5)}
COUNTS = ImageCounts(700, 100, 200)
SMALLEST = re.compile(r"the smallest budget that would work is (\S+): pass --budget \1, or --over-budget")

runner = CliRunner()


# ----------------------------------------------------------------------------- the planner


def test_the_cheapest_protocol_is_known_and_fits_a_budget_of_its_own_estimate():
    impossible = plan_budget(COSTS, COUNTS, 1.0, DERM, FRACTIONS)
    assert not impossible.fits and impossible.cheapest_s == impossible.estimate_s
    just = plan_budget(COSTS, COUNTS, impossible.cheapest_s, DERM, FRACTIONS)
    assert just.fits and just.protocol == impossible.protocol
    generous = plan_budget(COSTS, COUNTS, 10 * 3600, DERM, FRACTIONS)
    assert generous.cheapest_s == impossible.cheapest_s <= generous.estimate_s


def test_scoring_is_costed_per_protocol_so_the_plan_taken_fits():
    def scoring(protocol):  # grows with the records a protocol writes
        return 5.0 + 0.5 * protocol.seeds * len(protocol.fractions) * (1 + len(protocol.perturbations))

    full = plan_budget(COSTS, COUNTS, 10 * 3600, DERM, FRACTIONS, scoring_seconds=scoring)
    for budget in (full.estimate_s * f for f in (0.2, 0.5, 0.9)):
        plan = plan_budget(COSTS, COUNTS, budget, DERM, FRACTIONS, scoring_seconds=scoring)
        assert plan.fits and plan.estimate_s <= budget
        assert plan.per_encoder_s["scoring"] == scoring(plan.protocol)
    smallest = plan_budget(COSTS, COUNTS, 1.0, DERM, FRACTIONS, scoring_seconds=scoring)
    assert plan_budget(COSTS, COUNTS, smallest.cheapest_s, DERM, FRACTIONS, scoring_seconds=scoring).fits


@given(st.floats(0.5, 200_000.0))
def test_a_suggested_budget_covers_the_need_and_reads_back_as_written(seconds):
    suggested = round_up_budget(seconds)
    assert suggested >= seconds and parse_duration(format_budget(suggested)) == suggested
    step = 10.0 if seconds < 120 else 60.0 if seconds < 3600 else 300.0  # never more than one step over
    assert suggested - seconds < step or suggested == step


def test_budgets_are_written_without_zero_parts():
    assert [format_budget(s) for s in (50, 120, 2100, 3600, 3900, 5400)] == ["50s", "2m", "35m", "1h", "1h05m", "1h30m"]


def test_the_refusal_is_one_line_naming_the_smallest_budget():
    plan = plan_budget(COSTS, COUNTS, 60.0, DERM, FRACTIONS)
    message = over_budget_message(plan, Estimate(spent_s=265.0, run_s=1500.0, scoring_s=60.0), 180.0)
    assert "\n" not in message and message.startswith("--budget 3m cannot hold even the smallest protocol (3 seeds")
    assert "reading and measuring took 4m25s" in message
    needed = parse_duration(SMALLEST.search(message).group(1))
    assert needed >= 265.0 + plan.cheapest_s and needed == round_up_budget(265.0 + plan.cheapest_s)


def test_a_request_runs_within_its_budget_unless_told_otherwise():
    assert SelectionRequest(data=".", encoders="raw-pixels").over_budget is False


# ----------------------------------------------------------------------------- the command


def _select(tmp_path, *args: str, out: str = "out"):
    folder = tmp_path / "cohort"
    if not folder.exists():
        _folder(tmp_path, _rows({"nevus": 12, "melanoma": 12}))
    return runner.invoke(app, ["select", str(folder), "--encoders", "raw-pixels@input_size=16,colour-texture",
                               "--label-column", "diagnosis", "-o", str(tmp_path / out), *args])


def test_a_budget_too_small_for_the_smallest_protocol_runs_nothing(tmp_path):
    result = _select(tmp_path, "--budget", "1s")
    assert result.exit_code == 2, result.output
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: --budget 1s cannot hold even the smallest protocol")
    needed = parse_duration(SMALLEST.search(errors[0]).group(1))
    assert needed > 1.0
    assert "(over budget even at the smallest protocol: not run)" in result.stdout
    assert not (tmp_path / "out" / "suite.yaml").exists() and not (tmp_path / "out" / "results.sqlite").exists()


def test_over_budget_runs_it_anyway_and_says_so(tmp_path):
    result = _select(tmp_path, "--budget", "1s", "--over-budget", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "running it anyway, as --over-budget asks" in result.stdout and "dry run: nothing run" in result.stdout
    assert (tmp_path / "out" / "suite.yaml").is_file()


def test_the_time_spent_measuring_counts_against_the_budget(tmp_path, monkeypatch):
    import time

    from crsbench.selection import measure

    timed = measure.measure_encoder

    def slow(*args, **kwargs):
        time.sleep(2.0)  # a slow model: measuring alone outlasts the budget
        return timed(*args, **kwargs)

    monkeypatch.setattr(measure, "measure_encoder", slow)
    result = _select(tmp_path, "--budget", "3s", "--dry-run")
    assert result.exit_code == 2, result.output
    took = re.search(r"reading and measuring took (\S+) and", result.stderr).group(1)
    assert parse_duration(took) >= 4.0
    assert parse_duration(SMALLEST.search(result.stderr).group(1)) >= 4.0


def test_verbose_shows_the_plan_per_encoder_and_json_holds_the_plan(tmp_path):
    quiet_on_costs = _select(tmp_path, "--budget", "10m", "--dry-run", out="a")
    assert quiet_on_costs.exit_code == 0 and "estimated per encoder" not in quiet_on_costs.output
    verbose = runner.invoke(app, ["-v", "select", str(tmp_path / "cohort"), "--encoders",
                                  "raw-pixels@input_size=16,colour-texture", "--label-column", "diagnosis",
                                  "--budget", "10m", "--dry-run", "-o", str(tmp_path / "b")])
    assert verbose.exit_code == 0, verbose.output
    assert re.search(r"estimated per encoder \(embedding and probe fits\): raw-pixels@input_size=16 \S+, "
                     r"colour-texture \S+; scoring \S+; the smallest protocol \S+", verbose.stdout)
    as_json = _select(tmp_path, "--budget", "10m", "--dry-run", "--json", "--modality", "xray", out="c")
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)  # the messages went to standard error
    assert data["schema"] == "crsbench.select/1" and data["dry_run"] and data["scores"] is None
    plan = data["plan"]
    assert plan["fits"] and plan["budget_s"] == 600.0 and plan["spent_s"] > 0
    assert plan["estimate_s"] == pytest.approx(plan["spent_s"] + plan["run_s"] + plan["scoring_s"])
    assert set(plan["per_encoder_s"]) == {"raw-pixels@input_size=16", "colour-texture", "scoring"}
    assert "gamma_up" in plan["protocol"]["perturbations"] or "gamma_up" in " ".join(plan["cuts"])  # chest_xray's
    assert "plan: " in as_json.stderr
