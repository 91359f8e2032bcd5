"""The leaderboard: one self-contained folder (index.html) of a scored cohort of bundles, interactive
under a strict Content-Security-Policy.

Views: across tasks, per task, per axis (with each axis's raw metrics), the CRS components (whatever
columns the scored value holds beyond the axes and CRS), the subgroups (worst subgroup and gap per
encoder and attribute, and the flagged differences, where the bundles carry subgroup labels), the report's plots as SVG, a paired comparison
of any two encoders, and each encoder's provenance. Filters by modality, task, axis and encoder family
combine; every column sorts with its tier and interval kept in the row; the view lives in the URL
fragment, so a link opens it. A filter only hides: every number is the whole cohort's score (an
encoder's CRS does not depend on who else is scored; its tier does, and is the whole cohort's).

The tables are in the HTML itself (the page reads without script); one script, inlined and allowed by
its hash in the CSP, sorts, filters and compares. No inline handler, no network, no 'unsafe-inline':
user strings reach the page only through the autoescaping template or as JSON in a data block the
browser never runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from dataclasses import dataclass
from pathlib import Path

from crsbench.scoring.axes import AXES
from crsbench.bundles.compare import Cohort
from crsbench.bundles.repository import Refusal
from crsbench.core.printable import printable, prose_html
from crsbench.report.claims import target_line
from crsbench.report.components_view import DEFINITION_WORDS
from crsbench.report.documents import json_ready
from crsbench.report.terminal import AXIS_HEADERS

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport

UNKNOWN = "unknown"


@dataclass(frozen=True)
class EncoderFacts:
    encoder: str
    specialty: str  # the spec's specialty, else its group (general, broad-medical, baseline), else unknown
    licence: str  # as the spec states it
    licence_key: str  # the licence's first word, lower case: what the filter groups by
    source: str
    bundle_id: str
    identifier: str
    revision: str
    fingerprint: str
    pixels: str
    records: int
    versions: str
    suites: str


def _facts(cohort: Cohort) -> dict[str, EncoderFacts]:
    out = {}
    for bundle in cohort.sources:
        suites = ", ".join(f"{s['name']} ({s['suite_hash'][:12]})" for s in bundle.suites) or UNKNOWN
        for entry in bundle.encoders:
            label = entry["label"]
            if label in out or cohort.encoder_source.get(label, bundle.source) != bundle.source:
                continue
            spec = entry.get("spec") or {}
            specialty = spec.get("specialty") if spec.get("specialty") not in (None, "", "none") else spec.get("group")
            licence = str(spec.get("licence") or UNKNOWN)
            mine = bundle.records[bundle.records["encoder"] == label]
            out[label] = EncoderFacts(
                encoder=label, specialty=str(specialty or UNKNOWN), licence=licence,
                licence_key=licence.split(" (")[0].split()[0].lower() if licence.strip() else UNKNOWN,
                source=bundle.source, bundle_id=(bundle.bundle_id or "local results")[:16],
                identifier=str(spec.get("identifier") or entry.get("choice", {}).get("name") or UNKNOWN),
                revision=", ".join(entry.get("revision") or []) or "not pinned",
                fingerprint=", ".join(f[:12] for f in entry.get("fingerprint") or []) or "-",
                pixels="; ".join(entry.get("pixels") or []) or "-", records=int(len(mine)),
                versions=", ".join(sorted(mine["crsbench_version"].dropna().astype(str).unique())) or UNKNOWN,
                suites=suites,
            )
    return out


def _modalities(cohort: Cohort, tasks: list[str]) -> dict[str, str]:
    """Each task's modality as its suite names it (the dataset's modality or specialty), else unknown."""
    out: dict[str, str] = {}
    for bundle in cohort.sources:
        for suite in bundle.suites:
            for task in (suite.get("suite") or {}).get("tasks") or []:
                if not isinstance(task, dict) or task.get("name") not in tasks:
                    continue
                dataset = task.get("dataset") if isinstance(task.get("dataset"), dict) else {}
                found = task.get("modality") or dataset.get("modality") or dataset.get("specialty")
                if found and task["name"] not in out:
                    out[str(task["name"])] = str(found)
    return {t: out.get(t, UNKNOWN) for t in tasks}


def _by_task(report: ScoreReport, task: str):
    return report.point.scores_by_task[report.point.scores_by_task["task"] == task].set_index("encoder")


def context(report: ScoreReport, cohort: Cohort, refused: Sequence[Refusal] = ()) -> dict:
    """Everything the page shows, as plain values: the tables (columns from the scored value), the
    filters' choices, the plots and the paired differences the comparison reads."""
    from crsbench.bundles import leaderboard_tables as tables
    from crsbench.bundles.leaderboard_plots import plots
    from crsbench.bundles.leaderboard_subgroups import subgroup_view

    facts = _facts(cohort)
    encoders = [str(e) for e in report.point.scores.index]
    tasks = [str(t) for t in report.settings.tasks]
    modality = _modalities(cohort, tasks)
    axes = [a for a in AXES if a in report.axes_used]
    families = sorted({facts[e].specialty if e in facts else UNKNOWN for e in encoders})
    task_tables = [{"task": t, "modality": modality[t], "table": tables.score_table(_by_task(report, t), f"Task {t}", facts)}
                   for t in tasks]
    axis_tables = [{"axis": a, "task": scope, "modality": modality.get(scope, ""),
                    "table": tables.axis_table(report, a, scope, facts)} for a in axes for scope in ["overall", *tasks]]
    level = report.settings.level
    return {
        "title": "CRS-Bench leaderboard",
        "level": f"{level:.0%}",
        "overall": tables.score_table(report.point.scores, "Across tasks", facts),
        "task_tables": task_tables, "axis_tables": axis_tables,
        "components": tables.components_table(report, facts),
        "subgroups": subgroup_view(report, facts, modality),
        "plots": plots(report, cohort),
        "filters": {"modality": sorted(set(modality.values())), "task": tasks,
                    "axis": [{"value": a, "label": AXIS_HEADERS[a]} for a in axes], "family": families},
        "encoders": encoders,
        "pairs": tables.pair_data(report),
        "paired": not report.intervals.pair_intervals.empty,
        "axis_labels": {**{a: AXIS_HEADERS[a] for a in axes}, "crs": "CRS"},
        "reference": report.reference, "interval": report.intervals.label or "no bootstrap",
        "target": target_line(report),
        "n_boot": report.settings.n_boot,
        "departures": list(report.settings.departures),
        "refused": list(refused),
        "notes": [n for n in report.notes if n not in report.settings.departures],
        "sources": list(report.settings.sources),
        "provenance": [facts[e] for e in encoders if e in facts],
        # the published components, across tasks, with their bootstrap probabilities (docs/crs.md), as data
        "definition": DEFINITION_WORDS.get(report.settings.definition, "mean of skills"),
        "components_data": json_ready(report.summary(), ("definition", "components", "pareto_front", "orders",
                                                         "disagreements")),
    }


def _environment():
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("crsbench.bundles", "templates"),
        autoescape=True,  # every user string is escaped; only `prose` marks text safe, after escaping it
        finalize=lambda value: printable(value) if type(value) is str else value,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    environment.filters["prose"] = prose_html
    return environment


def _asset(name: str) -> str:
    from importlib.resources import files

    return files("crsbench.bundles").joinpath("templates", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    import base64
    import hashlib

    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _page_data(values: dict) -> str:
    """The values the script reads, as JSON inside a non-executed data block: `<`, `>` and `&` escaped so
    no user string can close the block or open a tag."""
    import json

    text = json.dumps({"encoders": values["encoders"], "pairs": values["pairs"], "axes": values["axis_labels"], "axis_order": list(values["axis_labels"]),
                       "tasks": values["filters"]["task"], "paired": values["paired"], "level": values["level"]},
                      sort_keys=True, ensure_ascii=False, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render(report: ScoreReport, cohort: Cohort, refused: Sequence[Refusal] = ()) -> str:
    values = context(report, cohort, refused)
    script, style = _asset("leaderboard.js"), _asset("leaderboard.css")
    policy = (f"default-src 'none'; img-src data:; style-src {_csp_hash(style)}; script-src {_csp_hash(script)}; "
              "base-uri 'none'; form-action 'none'")
    return _environment().get_template("leaderboard.html.j2").render(
        **values, script=script, style=style, policy=policy, page_data=_page_data(values))


@dataclass(frozen=True)
class Site:
    page: Path
    refused: tuple[Refusal, ...]
    cohort: Cohort


def write_leaderboard(report: ScoreReport, cohort: Cohort, out_dir: str | Path, refused: Sequence[Refusal] = ()) -> Site:
    """Write OUT/index.html; returns it with the refused bundles it lists."""
    from crsbench.core.atomic import atomic_write

    path = Path(out_dir) / "index.html"
    page = render(report, cohort, refused).encode("utf-8")
    atomic_write(path, lambda out: out.write(page))
    return Site(path, tuple(refused), cohort)


__all__ = ["EncoderFacts", "Site", "context", "render", "write_leaderboard"]
