"""`crsbench select DATA --encoders a,b,c`: a team's own cohort to a recommendation.

The command parses its options into a `SelectionRequest`, hands it to `api.select` (the library does every
step: understand DATA, check it, measure each encoder here, fit the protocol to the budget, write the
ordinary suite file, run it (a rerun with the same arguments resumes it), score, advise, write the
report) and shows what comes back: each line as the library says it, then the CRS table and the report.
The budget is a bound: where even the smallest protocol cannot fit it, nothing runs (exit 2, naming the
smallest budget that would work) unless --over-budget.

The library is imported when the command runs, not when the CLI starts: `crsbench --help` loads no model
library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.cli.show import show_components
from crsbench.cli.options import CRS_DEFINITION, SUBGROUP_AXIS, CRSDefinition, definition_settings
from crsbench.errors import DataError
from crsbench.core.modalities import ALIASES, MODALITIES, canonical_modality

MAX_SELECT_SEEDS = 50  # beyond this a selection's cost grows and its verdict no longer does
SELECT_SCHEMA = "crsbench.select/1"


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


class _Lines:
    """What the library says, sent to the command's output: a detail line only with -v; and the run's
    messages less those select printed already (the class counts, shown before the plan)."""

    def __init__(self, out: Output):
        from crsbench.selection.workflow import DETAIL

        self.out, self.detail_style, self.said = out, DETAIL, set()

    def say(self, line: str, style: str | None = None) -> None:
        if style == self.detail_style:
            self.out.detail(line)
            return
        self.said.add(line)
        self.out.say(line, style)

    def run_message(self, message: str) -> None:
        if message not in self.said:
            self.out.say(message)


def _plan_data(prepared) -> dict | None:
    plan, estimate = prepared.plan, prepared.estimate
    if plan is None:
        return None
    protocol = plan.protocol
    return {"protocol": {"seeds": protocol.seeds, "fractions": list(protocol.fractions),
                         "perturbations": list(protocol.perturbations), "severities": list(protocol.severities)},
            "described": protocol.describe(), "fits": plan.fits, "budget_s": prepared.request.budget_s,
            "estimate_s": estimate.total_s, "spent_s": estimate.spent_s,
            "run_s": estimate.run_s, "scoring_s": estimate.scoring_s, "cheapest_s": plan.cheapest_s,
            "per_encoder_s": dict(plan.per_encoder_s), "cuts": list(plan.cuts)}


def selection_data(selection, dry_run: bool) -> dict:
    """`select --json`: what the command prints, as values (docs/cli.md)."""
    from crsbench.report.documents import scores_data

    prepared, scored = selection.prepared, selection.scored
    return {
        "schema": SELECT_SCHEMA,
        "dry_run": dry_run,
        "resumed": prepared.resumed,
        "suite": str(prepared.suite_file),
        "reference": prepared.reference,
        "plan": _plan_data(prepared),
        "leading_tier": list(scored.tier.members) if scored is not None else None,
        "advice": list(selection.advice),
        "report": str(selection.report_html) if selection.report_html else None,
        "run_s": selection.run_s,
        "total_s": selection.total_s,
        "scores": scores_data(scored) if scored is not None else None,
    }


def _modality(value: Optional[str]) -> Optional[str]:
    return None if value is None else canonical_modality(value)


MODALITY_HELP = (f"{', '.join(MODALITIES)} (also {', '.join(ALIASES)}): which perturbations are plausible "
                 "(default: generic, or MedMNIST's).")


def select(
    data: Path = typer.Argument(..., help="A folder with a labels CSV (the `folder` layout), or an .npz."),
    encoders: str = typer.Option(..., "--encoders", "-e", help="Comma-separated: registry names or module:factory; "
                                 "options as name@key=value. The first is the reference."),
    modality: Optional[str] = typer.Option(None, "--modality", "-m", help=MODALITY_HELP),
    label_column: Optional[str] = typer.Option(None, "--label-column", help="Label column (several, comma-separated: "
                                               "multi-label). Default: 'label', or the only other column."),
    image_column: str = typer.Option("image", "--image-column", help="Column naming each image file."),
    group_column: Optional[str] = typer.Option(None, "--group-column", help="Patient (or lesion) id column: "
                                               "splits and bootstrap keep a patient's images together."),
    subgroup_columns: Optional[list[str]] = typer.Option(
        None, "--subgroup-column", help="A patient attribute scored per subgroup (repeatable): a column "
        "(sex, site, view), or a numeric age banded as age:decades or age:18,40,65. Never enters a record key."),
    ordinal: bool = typer.Option(False, "--ordinal", help="The labels are ordered whole-number grades."),
    shift: Optional[Path] = typer.Option(None, "--shift", help="A second site's data (folder or .npz), tested only."),
    budget: str = typer.Option("30m", "--budget", help="Time for the whole selection, measuring included: 90s, 30m, "
                               "2h, 1h30m. A bound: what cannot fit is not run."),
    over_budget: bool = typer.Option(False, "--over-budget", help="Run the smallest protocol even when it cannot "
                                     "fit the budget."),
    fractions: Optional[str] = typer.Option(None, "--fractions", help="Label fractions, e.g. 0.1,0.5,1 "
                                            "(default: chosen to fit the budget)."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=3, max=MAX_SELECT_SEEDS,
                                        help="Seeds (default: chosen, 3 to 5)."),
    output: Path = typer.Option(Path("crsbench-select"), "--output", "-o",
                                help="Folder for the suite, results, report."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the task and the plan, write the suite, run nothing."),
    definition: Optional[CRSDefinition] = CRS_DEFINITION,
    subgroup_axis: Optional[list[str]] = SUBGROUP_AXIS,
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON document (docs/cli.md); "
                                 "progress and messages go to standard error."),
) -> None:
    """Which of these encoders for this cohort? Infers the task, fits the protocol to the budget, runs it,
    and recommends, with the CRS table and the report."""
    from crsbench import api, report
    from crsbench.selection.duration import parse_duration
    from crsbench.selection.workflow import SelectionRequest

    out = Output(as_json)
    lines = _Lines(out)
    request = SelectionRequest(
        data=data, encoders=encoders, budget_s=parse_duration(budget), modality=_modality(modality),
        label_column=label_column, image_column=image_column, group_column=group_column, ordinal=ordinal,
        shift=shift, fractions=_fractions(fractions), seeds=seeds, output=output, cache_dir=cache_dir,
        over_budget=over_budget, crs_definition=definition_settings(definition).get("definition"),
        subgroup_columns=tuple(subgroup_columns or ()),
        subgroup_axis=tuple(subgroup_axis or ()),
    )
    selection = api.select(request, say=lines.say, progress=out.progress(lines.run_message), dry_run=dry_run)
    if as_json:
        out.json(selection_data(selection, dry_run))
        return
    if selection.scored is None:
        return
    scored = selection.scored
    out.show(report.run_summary_line(selection.summary, selection.total_s))
    out.result(f"Leading tier: {', '.join(scored.tier.members) or '-'}", "bold")
    for sentence in selection.advice:
        out.result(sentence)
    out.show(report.scores_table(scored))
    show_components(out, scored)
    out.result(f"report: {selection.report_html}")
    out.show(selection.timing)



def register(app: typer.Typer) -> None:
    app.command("select")(handled(select))
