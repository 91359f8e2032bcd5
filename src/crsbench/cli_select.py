"""`crsbench select DATA --encoders a,b,c`: a team's own cohort to a recommendation.

The command parses its options into a `SelectionRequest`, hands it to `api.select` (the library does every
step: understand DATA, check it, measure each encoder here, fit the protocol to the budget, write the
ordinary suite file, run it (a rerun with the same arguments resumes it), score, advise, write the
report) and shows what comes back: each line as the library says it, then the CRS table and the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from crsbench import api, report
from crsbench.cli_console import console, wide_console
from crsbench.cli_errors import handled
from crsbench.errors import DataError
from crsbench.progress import RichProgress
from crsbench.selection.duration import parse_duration
from crsbench.selection.workflow import SelectionRequest


MAX_SELECT_SEEDS = 50  # beyond this a selection's cost grows and its verdict no longer does


def _say(line: str, style: str | None = None) -> None:
    console.print(Text(line, style=style) if style else Text(line))


def _fractions(text: Optional[str]) -> Optional[list[float]]:
    if text is None:
        return None
    try:
        values = sorted({float(v) for v in text.split(",") if v.strip()} | {1.0})
    except ValueError:
        raise DataError(f"--fractions: {text!r} is not a comma-separated list of numbers") from None
    if any(not 0 < f <= 1 for f in values):
        raise DataError(f"--fractions: every fraction must be in (0, 1], got {text!r}")
    return values


class _NoRepeats(RichProgress):
    """The run's messages, less those select printed already (the class counts, shown before the plan)."""

    def __init__(self, said: set[str]):
        super().__init__()
        self.said = said

    def log(self, message: str) -> None:
        if message not in self.said:
            super().log(message)


def select(
    data: Path = typer.Argument(..., help="A folder with a labels CSV (the `folder` layout), or an .npz."),
    encoders: str = typer.Option(..., "--encoders", "-e", help="Comma-separated: registry names or module:factory; "
                                 "options as name@key=value. The first is the reference."),
    modality: Optional[str] = typer.Option(None, "--modality", "-m", help="xray, fundus, dermoscopy or other: "
                                           "which perturbations are plausible (default: other, or MedMNIST's)."),
    label_column: Optional[str] = typer.Option(None, "--label-column", help="Label column (several, comma-separated: "
                                               "multi-label). Default: 'label', or the only other column."),
    image_column: str = typer.Option("image", "--image-column", help="Column naming each image file."),
    group_column: Optional[str] = typer.Option(None, "--group-column", help="Patient (or lesion) id column: "
                                               "splits and bootstrap keep a patient's images together."),
    ordinal: bool = typer.Option(False, "--ordinal", help="The labels are ordered whole-number grades."),
    shift: Optional[Path] = typer.Option(None, "--shift", help="A second site's data (folder or .npz), tested only."),
    budget: str = typer.Option("30m", "--budget", help="Time for the whole selection: 90s, 30m, 2h, 1h30m."),
    fractions: Optional[str] = typer.Option(None, "--fractions", help="Label fractions, e.g. 0.1,0.5,1 "
                                            "(default: chosen to fit the budget)."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=3, max=MAX_SELECT_SEEDS,
                                        help="Seeds (default: chosen, 3 to 5)."),
    output: Path = typer.Option(Path("crsbench-select"), "--output", "-o",
                                help="Folder for the suite, results, report."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the task and the plan, write the suite, run nothing."),
) -> None:
    """Which of these encoders for this cohort? Infers the task, fits the protocol to the budget, runs it,
    and recommends, with the CRS table and the report."""
    said: set[str] = set()

    def say(line: str, style: str | None = None) -> None:
        said.add(line)
        _say(line, style)

    request = SelectionRequest(
        data=data, encoders=encoders, budget_s=parse_duration(budget), modality=modality, label_column=label_column,
        image_column=image_column, group_column=group_column, ordinal=ordinal, shift=shift,
        fractions=_fractions(fractions), seeds=seeds, output=output, cache_dir=cache_dir,
    )
    selection = api.select(request, say=say, progress=_NoRepeats(said), dry_run=dry_run)
    if selection.scored is None:
        return
    scored = selection.scored
    console.print(report.run_summary_line(selection.summary, selection.total_s))
    _say(f"Leading tier: {', '.join(scored.leading_tier) or '-'}", "bold")
    for sentence in selection.advice:
        _say(sentence)
    wide_console().print(report.scores_table(scored))
    _say(f"report: {selection.report_html}")
    _say(selection.timing)


select = handled(select)
