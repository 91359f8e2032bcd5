"""The steps several commands share: run a suite and show its table, score a results folder and write the
tables, show them, write the report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from crsbench.cli.console import Output
from crsbench.cli.show import show_scores

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport


def run_and_render(out: Output, suite, cache_dir: Optional[Path], wait_s: float = 0.0) -> None:
    from crsbench import api, report

    started = time.perf_counter()
    out.detail(lambda: f"suite {suite.name} ({suite.suite_hash()[:12]}): {len(suite.encoders)} encoders, "
               f"{len(suite.tasks)} tasks, {len(suite.seeds)} seeds; results in {suite.output}")
    summary = api.run(suite, progress=out.progress(), cache_dir=cache_dir, wait_s=wait_s)
    elapsed = time.perf_counter() - started
    # the output may hold other suites' records too: what is incomplete is shown labelled, not refused
    view = api.load_results(summary.output, partial=True)
    out.show(report.results_table(view.seed_means(), view.grid))
    out.result(report.run_summary_line(summary, elapsed))


def score_and_write(out: Output, results_dir: Path, n_boot: Optional[int] = None, *,
                    reference: Optional[str] = None, out_dir: Optional[Path] = None, **reading):
    """The score report, the folder its files were written to, how long both took, and the inputs read
    for it (a report of the same results reads them from here). `n_boot` None: the suite's draws, as the
    run and `report` use them, so that a report after `score` reads its stored value. `reading`:
    `scoring_inputs`' other arguments by name (suite_hash, partial, CRS settings)."""
    from crsbench import api

    started = time.perf_counter()
    draws = {} if n_boot is None else {"n_boot": n_boot}
    with out.progress().task("read the results", total=None):
        inputs = api.scoring_inputs(results_dir, reference, **draws, **reading)
    with out.progress().task(f"score ({inputs.config.n_boot} bootstrap draws)", total=None):  # a log hears of it
        scored = api.score_inputs(inputs)
        written = api.write_scores(scored, results_dir, out_dir)
    return scored, next(iter(written.values())).parent, time.perf_counter() - started, inputs


def render_scores(out: Output, scored: ScoreReport, folder: Path, seconds: float) -> None:
    show_scores(out, scored)
    out.result(f"scores written to {folder} (CSV, Parquet, JSON) in {seconds:.1f} s")


def write_report(out: Output, results_dir: Path, report_dir: Optional[Path] = None, scored: ScoreReport | None = None,
                 suite_hash: Optional[str] = None, partial: bool = False, inputs=None, **settings):
    from crsbench import api

    if scored is None:
        with out.progress().task("scores for the report", total=None):
            inputs = api.scoring_inputs(results_dir, suite_hash=suite_hash, partial=partial, **settings)
            scored, reused = api.scored_or_score(inputs)
        out.say("scores: the value `score` stored for these records and settings, not recomputed" if reused else
                "scores: computed for the report (no stored value of `score` matched these records and settings)")
    with out.progress().task("report", total=None):
        written = api.write_report(results_dir, report_dir, scored=scored, inputs=inputs, suite_hash=suite_hash,
                                   partial=partial)
    out.result(f"report: {written.html} ({len(written.drawn)} figures, {written.seconds:.1f} s)")
    return written
