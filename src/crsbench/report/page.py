"""The report: one self-contained report.html (figures inline as PNG data, no network asset, no
script), report.md beside it, and every figure as PNG and SVG under figures/.

    written = write_report(score_report, records, "out/report", results="out")

User strings reach the HTML only through the autoescaping template, and the Markdown through
`md`; a Content-Security-Policy forbids scripts and any fetch, as a second fence.
"""

from __future__ import annotations

import base64
import html
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core.atomic import atomic_write
from crsbench.core.printable import printable, prose_html
from crsbench.report import components_view, evidence, figure_style, figures, figures_more, narrative, sources, tables
from crsbench.report.data import ReportData, load_stored_predictions
from crsbench.report.terminal import partial_prefix

if TYPE_CHECKING:  # annotations only
    from crsbench.results.record_set import Records
    from crsbench.scoring.score_report import ScoreReport

@dataclass(frozen=True)
class FigureFile:
    name: str
    title: str
    caption: str
    task: str | None
    png: Path | None = None
    svg: Path | None = None
    absent: str | None = None
    png_data: str = ""  # base64, for the inline image
    wide: bool = False  # wider than one paper column (several panels): the page gives it a whole row


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    figures: list[FigureFile] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def drawn(self) -> list[FigureFile]:
        return [f for f in self.figures if f.absent is None]


def draw_figures(data: ReportData, folder: Path) -> list[FigureFile]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    key = figure_style.name_key(data.encoders)
    for planned in figures.plan(data, figures_more.BUILDERS):
        import matplotlib

        with matplotlib.rc_context(figure_style.STYLE), figure_style.keyed(key):
            drawn = planned.draw()
            if isinstance(drawn, figure_style.Absent):
                out.append(FigureFile(planned.name, planned.title, planned.caption, planned.task, absent=drawn.reason))
                continue
            png, svg = folder / f"{planned.name}.png", folder / f"{planned.name}.svg"
            wide = drawn.get_figwidth() > 1.2 * figure_style.COLUMN_WIDTH
            atomic_write(png, lambda f: drawn.savefig(f, format="png", dpi=figure_style.PNG_DPI))
            drawn.set_layout_engine("none")  # laid out once for the PNG; the SVG keeps that layout
            atomic_write(svg, lambda f: drawn.savefig(f, format="svg"))
        caption = planned.caption + (f" Names: {figure_style.key_text(key)}." if key else "")
        out.append(FigureFile(planned.name, planned.title, caption, planned.task, png, svg,
                              png_data=base64.b64encode(png.read_bytes()).decode("ascii"), wide=wide))
    return out


# --------------------------------------------------------------------------- pages


def departures(data: ReportData, drawn: list[FigureFile]) -> list[str]:
    """Everything a reader must know that qualifies the numbers: shown, never hidden."""
    report = data.report
    notes = [f"{axis} axis missing: {reason}" for axis, reason in report.axes_missing.items()]
    notes += list(data.provenance.notes)
    notes += list(report.notes)
    by_reason: dict[str, list[str]] = {}
    for figure in drawn:
        if figure.absent:
            by_reason.setdefault(figure.absent, []).append(figure.title)
    notes += [f"not drawn ({'; '.join(titles)}): {reason}" for reason, titles in by_reason.items()]
    return list(dict.fromkeys(notes))


def _environment():
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("crsbench.report", "templates"),
        autoescape=True,  # every user string is escaped unless marked safe; nothing is
        # user strings reach the page with their control codes shown, not raw (Markup is ours: left as is)
        finalize=lambda value: printable(value) if type(value) is str else value,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["prose"] = prose_html
    return environment


def _context(data: ReportData, drawn: list[FigureFile], generated_at: str) -> dict:
    report = data.report
    return {
        "title": partial_prefix(report)
        + f"CRS-Bench report: {', '.join(s['name'] for s in data.provenance.suites) or 'results'}",
        "summary": narrative.summary_sentences(report, evidence.weakest_axes(report),
                                               evidence.worst_conditions(data.records)),
        "score_tables": tables.score_tables(report),
        "rank_table": tables.rank_table(report),
        "component_tables": components_view.page_tables(report),
        "crs_formula": components_view.definition_formula(report),
        "metrics_table": tables.metrics_table(data.records, report),
        "dataset_table": tables.dataset_table(report),
        "cross_figures": [f for f in drawn if f.task is None],
        "task_figures": {task: [f for f in drawn if f.task == task] for task in data.tasks},
        "provenance": data.provenance,
        "departures": departures(data, drawn),
        "settings": report.settings,
        "reference": report.reference,
        "generated_at": generated_at,
    }


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def md(text: object) -> str:
    """A user string as literal Markdown text: HTML escaped, Markdown punctuation backslashed."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(printable(text), quote=False)).replace("\n", " ")


def _md_table(table: tables.Table) -> list[str]:
    lines = [f"### {md(table.title)}", "", "| " + " | ".join(md(h) for h in table.headers) + " |",
             "|" + "---|" * len(table.headers)]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in table.rows]
    if table.caption:
        lines += ["", f"_{md(table.caption)}_"]
    return lines + [""]


def markdown(context: dict, figure_folder: str) -> str:
    p = context["provenance"]
    suites = ", ".join(f"{s['name']} ({s['hash']})" for s in p.suites)
    fractions = ", ".join(f"{f:g}" for f in p.fractions)
    lines = [f"# {md(context['title'])}", "", "## Summary", ""]
    lines += [f"- {md(s)}" for s in context["summary"]] + ["", "## Scores", ""]
    for table in context["score_tables"]:
        lines += _md_table(table)
    lines += [f"Ranking definition: {md(context['crs_formula'])}", ""]
    for table in [context["rank_table"], *context["component_tables"], context["metrics_table"], context["dataset_table"]]:
        lines += _md_table(table)
    lines += ["## Figures", ""]
    for figure in context["cross_figures"] + [f for fs in context["task_figures"].values() for f in fs]:
        if figure.absent:
            lines += [f"- **{md(figure.title)}**: not drawn: {md(figure.absent)}"]
        else:
            lines += [f"![{md(figure.title)}]({figure_folder}/{figure.name}.png)", "",
                      f"_{md(figure.caption)}_ ([SVG]({figure_folder}/{figure.name}.svg))", ""]
    lines += ["## Notes and departures", ""] + [f"- {md(n)}" for n in context["departures"]]
    lines += ["", "## Provenance", "",
              f"- suites: {md(suites)}",
              f"- report written by crsbench {md(p.package_version)}; records written by "
              f"{md(', '.join(p.record_versions) or 'unknown')}",
              f"- records: {p.counted}, written {md(p.first_record)} to {md(p.last_record)}",
              f"- seeds: {md(', '.join(map(str, p.seeds)))}; label fractions: {md(fractions)}",
              "", "| encoder | revision | fingerprint |", "|---|---|---|"]
    lines += [f"| {md(e['name'])} | {md(e['revision'])} | {md(e['fingerprint'])} |" for e in p.encoders]
    lines += ["", "| task | role | dataset | fingerprint | dropped |", "|---|---|---|---|---|"]
    lines += [f"| {md(d['task'])} | {md(d['role'])} | {md(d['dataset'])} | {md(d['fingerprint'])} | {md(d['dropped'])} |"
              for d in p.datasets]
    lines += ["", "| run | started | finished | records written | status |", "|---|---|---|---|---|"]
    lines += [f"| {md(r['run_id'])} | {md(r['started_at'])} | {md(r['finished_at'])} | {md(r['records_written'])} | "
              f"{md(r['status'])} |" for r in p.runs]
    return "\n".join(lines) + "\n"


def write_report(report: ScoreReport, records: "Records | pd.DataFrame", out_dir: str | Path, *, results: str | Path | None = None,
                 predictions=None, seconds_per_image=None) -> ReportFiles:
    """Write report.html, report.md and figures/*.png|svg for a ScoreReport and the records it scored.

    results: the results folder (for the runs, datasets and stored predictions); predictions:
    per-case predictions, loaded from `results` when not given.
    """
    from crsbench.core.timestamps import now
    from crsbench.results.record_set import Records

    started = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    held = Records.of(records)
    rec = held.frame
    data = ReportData(report, rec, sources.gather(results, rec, refit_count=len(held.refits)),
                      predictions if predictions is not None else load_stored_predictions(results),
                    seconds_per_image=dict(seconds_per_image) if seconds_per_image else None)
    drawn = draw_figures(data, out / "figures")
    context = _context(data, drawn, now())
    html_path, md_path = out / "report.html", out / "report.md"
    page = _environment().get_template("report.html.j2").render(**context)
    atomic_write(html_path, lambda f: f.write(page.encode("utf-8")))
    atomic_write(md_path, lambda f: f.write(markdown(context, "figures").encode("utf-8")))
    return ReportFiles(html_path, md_path, drawn, time.perf_counter() - started)
