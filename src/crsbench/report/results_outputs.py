"""What the scoring commands write beside a results folder: the score tables, the stored scored value
`report` reads instead of rescoring (scored_files), and the report pages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.scoring.inputs import ScoringInputs, score_inputs

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport


def results_folder(results: str | Path) -> Path:
    """The folder of a results folder or of its results.sqlite."""
    return Path(results) if Path(results).is_dir() else Path(results).parent


def scored_or_score(inputs: ScoringInputs):
    """(value, reused): the value `score` stored for exactly these inputs (scored_files), else a fresh
    score, then stored."""
    import dataclasses

    from crsbench.report.scored_files import older_value_note, read_scored, write_scored

    base = results_folder(inputs.source)
    stored = read_scored(base, inputs.key)
    if stored is not None:
        return stored, True
    note = older_value_note(base)
    if note:
        inputs = dataclasses.replace(inputs, context=dataclasses.replace(
            inputs.context, lead_notes=(*inputs.context.lead_notes, note)))
    scored = score_inputs(inputs)
    try:
        write_scored(scored, base)
    except OSError:  # results one may read but not write (a colleague's, a read-only mount): no stored value
        pass
    return scored, False


def write_scores(report: ScoreReport, results: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    """The score tables (default folder: RESULTS/scores), and the scored value for `report`."""
    from crsbench.report.files import write_score_report
    from crsbench.report.scored_files import write_scored

    base = results_folder(results)
    written = write_score_report(report, Path(out_dir) if out_dir else base / "scores")
    if report.inputs_key:  # kept for `report`, which reads it instead of rescoring
        write_scored(report, base)
    return written


def write_results_report(results: str | Path, inputs: ScoringInputs, out_dir: str | Path | None = None, *,
                         scored: ScoreReport | None = None, seconds_per_image: dict[str, float] | None = None):
    """The HTML and Markdown report of these inputs (report.page.write_report); without `scored`, the value
    `score` stored for them, else they are scored as `score` does. Default folder: RESULTS/report."""
    from crsbench.report.page import write_report as write_pages

    if scored is None:
        scored, _ = scored_or_score(inputs)
    return write_pages(scored, inputs.records, Path(out_dir) if out_dir else results_folder(results) / "report",
                       results=results, predictions=inputs.predictions, seconds_per_image=seconds_per_image)
