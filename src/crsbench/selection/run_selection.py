"""`crsbench select` whole: prepare the selection (selection.workflow), run it, score, advise, and write
the scores and the report."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.core.progress import Progress, SilentProgress
from crsbench.scoring.inputs import ScoringInputs, score_inputs
from crsbench.selection.workflow import SELECT_N_BOOT, PreparedSelection, Selection, SelectionRequest, prepare_selection

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport


def select(request, *, say=None, progress: Progress | None = None, dry_run: bool = False) -> Selection:
    """Which of these encoders for this cohort? `request` is a SelectionRequest (or its fields by name, as a
    dict). Reads and checks the cohort, measures each encoder, fits the protocol to the budget and writes
    the suite (prepare_selection), then runs it (a rerun with the same arguments resumes), scores, advises
    and writes the scores and the report. The budget bounds the whole call: where even the smallest
    protocol cannot fit it, nothing runs and workflow.OverBudget names the smallest budget that would
    work, unless `request.over_budget`. Every line for the user goes through `say(line, style=None)`
    (style "detail": a line for whoever asked for detail); returns a Selection holding each step's value."""
    from crsbench.report.results_outputs import write_results_report, write_scores
    from crsbench.run.executor_reach import check_executor_reach
    from crsbench.run.runner import SuiteRun  # torch and the encoders load only for a run
    from crsbench.scoring.read_inputs import read_scoring_inputs
    from crsbench.selection import advice

    request = request if isinstance(request, SelectionRequest) else SelectionRequest(**request)
    say = say or (lambda line, style=None: None)
    prepared = prepare_selection(request, say)
    if dry_run:
        say("dry run: nothing run")
        return Selection(prepared)
    progress = progress or SilentProgress()
    out, reference = Path(request.output), prepared.reference
    run_started = time.perf_counter()
    check_executor_reach(prepared.suite)
    summary = SuiteRun(prepared.suite, progress=progress, cache_dir=request.cache_dir).run()
    run_s = time.perf_counter() - run_started
    suite_hash = prepared.suite.suite_hash()
    with progress.task(f"score ({SELECT_N_BOOT} bootstrap draws)", total=None):  # minutes a log would not hear of
        names = {task.name: tuple(prepared.dataset.meta.class_names) for task in prepared.suite.tasks}
        inputs = read_scoring_inputs(out, reference, n_boot=SELECT_N_BOOT, suite_hash=suite_hash, class_names=names)
        scored = score_inputs(inputs)
        evidence = selection_evidence(inputs, scored, prepared)
        sentences = tuple(advice.recommendation(scored, evidence))
        scores = write_scores(scored, out)
    with progress.task("report", total=None):
        written = write_results_report(out, inputs, scored=scored,
                                       seconds_per_image=prepared.seconds_per_image or None)
    return Selection(prepared, summary, scored, sentences, scores, written.html, run_s,
                     time.perf_counter() - prepared.started)


def selection_evidence(inputs: ScoringInputs, scored: ScoreReport, prepared: PreparedSelection):
    """The test-set size, the measured cost per image and, when the tier holds several encoders, the
    seed-only standard errors."""
    import numpy as np

    from crsbench.selection import advice

    test = prepared.dataset.split("test")
    n_test = len(np.unique(test.groups)) if prepared.cohort.group_column else len(test)
    seed_se = None
    if len(scored.tier.members) > 1:  # the same records, resampled over seeds alone
        seed_only = score_inputs(dataclasses.replace(inputs, reference=scored.reference)
                                 .with_settings(resample="seeds", n_weight_draws=0))
        seed_se = advice.standard_errors(seed_only.tier.table)
    return advice.Evidence(n_test=n_test, n_seeds=len(prepared.suite.seeds), unit=prepared.cohort.unit,
                           seed_se=seed_se, seconds_per_image=prepared.seconds_per_image or None,
                           n_test_images=len(test), class_names=tuple(prepared.dataset.meta.class_names))
