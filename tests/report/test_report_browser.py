"""The report in a real browser: headless Chromium loads it from a file URL with no console error,
no network request and no script run, every figure has a rendered size, and a full-page screenshot
is written. Skips, with the reason, where no chromium binary is installed (.ci/run installs it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from crsbench import api
from _browser_check import check_page, find_browser
from _report_fixtures import write_results
from _report_fixtures import HOSTILE, HOSTILE_TASKS

BROWSER = find_browser()
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (Debian: apt-get install chromium)")


def _assert_clean_render(check, files) -> None:
    assert check.console_errors == []
    assert check.requests == []
    assert check.dialogs == []  # a script that ran would have opened one
    assert len(check.images) == len(files.drawn)
    for image in check.images:
        assert image["complete"] and image["natural"] > 0, image
        assert image["width"] > 100 and image["height"] > 50, image
    assert check.screenshot.stat().st_size > 10_000


@needs_browser
@pytest.mark.slow
def test_hostile_names_render_without_running_anything(tmp_path):
    folder = write_results(tmp_path / "results", HOSTILE, tasks=HOSTILE_TASKS,
                           suite_name="<script>alert('suite')</script>")
    files = api.write_report(folder, n_boot=100, n_weight_draws=100)
    check = check_page(files.html, tmp_path / "screenshot.png")
    _assert_clean_render(check, files)


@needs_browser
@pytest.mark.slow
@pytest.mark.xdist_group("quick-demo")  # with the other reader of the session's quick demo: built once
def test_the_quick_demo_report_renders_in_chromium(tmp_path, quick_demo_results):
    shutil.copytree(quick_demo_results, tmp_path / "demo")  # the report is written into the results folder
    files = api.write_report(tmp_path / "demo")
    shots = Path(os.environ.get("CRSBENCH_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    check = check_page(files.html, shots / "demo-quick-report.png")
    _assert_clean_render(check, files)
    assert check.height > 2000


@pytest.mark.slow
@needs_browser
def test_a_report_with_every_figure_renders_in_chromium(tmp_path, simulated_cohort):
    from _simulated_report import COSTS, scored_cohort
    from crsbench.report.page import write_report

    report, records, stored = scored_cohort(simulated_cohort, n_boot=100)
    files = write_report(report, records, tmp_path / "report", predictions=stored, seconds_per_image=COSTS)
    assert all(f.absent is None for f in files.figures)
    shots = Path(os.environ.get("CRSBENCH_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    check = check_page(files.html, shots / "every-figure-report.png")
    _assert_clean_render(check, files)
