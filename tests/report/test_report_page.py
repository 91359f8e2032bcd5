"""The HTML report, structurally: one self-contained file, every figure inline and on disk as PNG
and SVG, hostile names escaped, provenance present, partial results said, not hidden."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest
from typer.testing import CliRunner

from crsbench import api
from crsbench.cli.main import app
from crsbench.report import evidence, narrative
from _report_fixtures import COHORT, HOSTILE, HOSTILE_TASKS, SUITE_HASH, write_results

pytestmark = pytest.mark.xdist_group("report-page")  # one worker writes the module's reports once


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags_of(text: str) -> list[tuple[str, dict]]:
    parser = Tags()
    parser.feed(text)
    return parser.tags


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = write_results(tmp_path_factory.mktemp("results"), COHORT, baselines=("pixels",))
    return folder, api.write_report(folder, n_boot=200, n_weight_draws=200)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = write_results(tmp_path_factory.mktemp("hostile"), HOSTILE, tasks=HOSTILE_TASKS,
                           suite_name="<script>document.title='owned'</script>\x1b]0;pwned\x07")
    return folder, api.write_report(folder, n_boot=30, n_weight_draws=30)  # escaping, not statistics, is tested


def test_report_is_one_self_contained_file_with_every_figure_inline_and_on_disk(written):
    folder, files = written
    text = files.html.read_text()
    tags = tags_of(text)
    for tag, attrs in tags:
        for name in ("src", "href"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//", "file:")), (tag, attrs)
    images = [attrs["src"] for tag, attrs in tags if tag == "img"]
    assert len(images) == len(files.drawn) >= 9
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert not [t for t, _ in tags if t in ("script", "link", "iframe", "object")]
    names = {f.name for f in files.figures}
    assert {"axis_profile", "auroc_vs_crs", "rank_shift", "rank_distribution", "weight_sensitivity"} <= names
    for kind in ("label_efficiency", "robustness", "reliability"):
        assert sum(n.startswith(kind) for n in names) == 2  # one per task
    for figure in files.drawn:
        assert figure.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert figure.svg.read_text().lstrip().startswith(("<?xml", "<svg"))
        assert figure.png_data in text
    assert files.html.parent == folder / "report"
    assert "figures/auroc_vs_crs.png" in files.markdown.read_text()


def test_report_states_its_provenance(written):
    _, files = written
    text = files.html.read_text()
    for expected in ("synthetic", SUITE_HASH, "0.1.0", "rev-1", "not pinned", "dfp-derm", "3 unreadable image",
                     "0, 1, 2", "0.05, 0.25, 1", "228", "run-1", "finished", "2025-01-01T00:00:00+00:00"):
        assert expected in text, expected


def test_reliability_diagrams_are_absent_with_the_reason_not_faked(written):
    _, files = written
    reliability = [f for f in files.figures if f.name.startswith("reliability")]
    assert all(f.absent and "per-case predictions" in f.absent for f in reliability)
    assert "reliability diagrams need per-case predictions" in files.html.read_text()


def test_summary_names_the_tier_and_what_the_higher_auroc_encoder_loses(written):
    _, files = written
    text = files.html.read_text()
    assert "Leading tier across tasks" in text
    # sharp-b has the higher AUROC but is fragile: the summary says so, with the numbers
    assert re.search(r"sharp-b has a higher AUROC than steady-a \(0\.870 vs 0\.850\) but a lower CRS", text)
    assert re.search(r"its AUROC falls from 0\.8\d0 to 0\.6\d0 .* under (gaussian_noise|jpeg) at severity 5", text)


def test_every_user_string_is_escaped_in_html_and_markdown(hostile):
    _, files = hostile
    text = files.html.read_text()
    tags = tags_of(text)
    assert not [t for t, _ in tags if t in ("script", "b")]
    assert all(not name.startswith("on") for _, attrs in tags for name in attrs)
    assert sum(t == "img" for t, _ in tags) == len(files.drawn)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    markdown = files.markdown.read_text()
    assert "<script" not in markdown.lower() and "<img" not in markdown.lower()
    for output in [text, markdown] + [f.svg.read_text() for f in files.drawn]:
        assert not any(c in output for c in "\x1b\x07\u202e")  # shown as escapes, never raw
    assert "\\x1b" in text and "\\x1b" in markdown.replace("\\\\", "\\")


def test_quoted_names_in_prose_are_code_on_the_page_and_stay_escaped():
    from crsbench.core.printable import prose_html

    assert prose_html("interval is `fitted_probes` in summary.json (`--target x`)") == (
        "interval is <code>fitted_probes</code> in summary.json (<code>--target x</code>)")
    assert prose_html("`<script>` & `a") == "<code>&lt;script&gt;</code> &amp; `a"  # escaped; a lone backtick stays
    assert prose_html("bell \x07 `x`") == "bell \\x07 <code>x</code>"  # control codes shown, as elsewhere


def test_the_report_page_shows_no_backtick_quoted_name_raw(written):
    _, files = written
    text = files.html.read_text()
    assert "<code>" in text and not re.search(r"`[^`<\n]+`", text)


def test_partial_results_say_what_is_missing(tmp_path):
    folder = write_results(tmp_path, COHORT, axes=("clean",), finished=False)
    files = api.write_report(folder, n_boot=50, n_weight_draws=50)
    text = files.html.read_text()
    assert "robustness axis missing" in text
    assert "did not finish" in text
    robustness = [f for f in files.figures if f.name.startswith("robustness")]
    assert robustness and all("no perturbation or shift records" in f.absent for f in robustness)


def test_report_command_writes_and_prints_the_path(written, tmp_path):
    folder, _ = written
    result = CliRunner().invoke(app, ["report", str(folder), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert str(tmp_path / "out" / "report.html") in result.output.replace("\n", "")
    assert (tmp_path / "out" / "figures" / "rank_shift.svg").exists()
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "nothing")])
    assert missing.exit_code == 2


def test_pareto_front_keeps_points_no_other_beats_on_both():
    x = np.array([0.9, 0.8, 0.85, 0.7, np.nan])
    y = np.array([0.1, 0.5, 0.5, 0.6, 0.9])
    assert evidence.pareto_front(x, y).tolist() == [True, False, True, True, False]


def test_reliability_bins_hand_worked():
    labels = np.array([0, 1, 1, 0])
    probs = np.array([[0.95, 0.05], [0.35, 0.65], [0.7, 0.3], [0.62, 0.38]])
    bins = evidence.reliability_bins(labels, probs, n_bins=10)
    # top-label confidences 0.95 (right), 0.65 (right), 0.7 (wrong), 0.62 (right)
    assert bins["count"].tolist() == [2, 1, 1]
    assert np.allclose(bins["confidence"], [0.635, 0.7, 0.95])
    assert np.allclose(bins["accuracy"], [1.0, 0.0, 1.0])
    multi = evidence.reliability_bins(np.array([[1.0, np.nan], [0.0, 1.0]]), np.array([[0.9, 0.5], [0.15, 0.8]]))
    assert multi["count"].sum() == 3


def test_summary_without_bootstrap_says_there_is_no_tier(written):
    folder, _ = written
    scored = api.score(folder, n_boot=0, n_weight_draws=0)
    sentences = narrative.summary_sentences(scored, evidence.weakest_axes(scored), {})
    assert "no leading tier" in sentences[0]


def test_a_floor_baseline_first_on_a_task_is_said_plainly(written):
    import dataclasses

    from crsbench.report.narrative import task_sentences

    folder, _ = written
    scored = api.score(folder, n_boot=0, n_weight_draws=0)
    rows = scored.point.scores_by_task
    task = rows["task"].iloc[0]
    first = rows[rows["task"] == task].sort_values("crs", ascending=False)["encoder"].iloc[0]
    as_baseline = dataclasses.replace(scored, baselines=(first,))
    assert f"a training-free floor baseline ({first}) is first: none of the pretrained encoders beat it" in " ".join(task_sentences(as_baseline))
    without = dataclasses.replace(scored, baselines=())
    assert "floor baseline" not in " ".join(task_sentences(without))
