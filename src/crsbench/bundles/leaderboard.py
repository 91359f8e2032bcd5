"""The leaderboard: one static, self-contained index.html from a scored cohort of bundles.

One row per encoder with its four axes, CRS, interval and leading-tier mark, per task and across tasks,
and each encoder's provenance (the bundle it came from, by file name and id; its identifier, revision,
fingerprint and licence). Filters by specialty and by licence need no script: every filter is a section
of the page with its own anchor, shown by the CSS `:target` rule when its link is followed (the whole
cohort shows otherwise). A filter only hides rows: every number is the whole cohort's score (an
encoder's CRS does not depend on who else is scored; its tier does, and is the whole cohort's).

User strings reach the page only through the autoescaping template; the report's Content-Security-Policy
(no script, no fetch, inline style only) is the second fence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from crsbench.scoring.axes import AXES
from crsbench.bundles.compare import Cohort
from crsbench.core.printable import printable
from crsbench.report.tables import interval_cell, tier_cell
from crsbench.report.claims import target_line
from crsbench.report.terminal import AXIS_HEADERS, fmt

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score import ScoreReport

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


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _rows(frame: pd.DataFrame, facts: dict[str, EncoderFacts], keep: set[str]) -> list[dict]:
    rows = []
    for encoder, row in frame.iterrows():
        if str(encoder) not in keep:
            continue
        fact = facts.get(str(encoder))
        rows.append({
            "rank": "-" if pd.isna(row.get("crs_rank")) else int(row["crs_rank"]),
            "encoder": f"{encoder} (baseline)" if bool(row.get("baseline", False)) else str(encoder),
            "specialty": fact.specialty if fact else UNKNOWN, "licence": fact.licence_key if fact else UNKNOWN,
            "axes": [fmt(row.get(a)) for a in AXES], "crs": fmt(row["crs"], 1), "interval": interval_cell(row),
            "tier": tier_cell(row["in_leading_tier"]), "leading": tier_cell(row["in_leading_tier"]) == "yes",
        })
    return rows


def _scopes(report: ScoreReport, facts, keep) -> list[dict]:
    scopes = []
    for task in report.settings.tasks:
        frame = report.scores_by_task[report.scores_by_task["task"] == task].set_index("encoder")
        scopes.append({"title": f"Task {task}", "rows": _rows(frame, facts, keep)})
    scopes.append({"title": "Across tasks", "rows": _rows(report.scores, facts, keep)})
    return scopes


def context(report: ScoreReport, cohort: Cohort) -> dict:
    """Everything the page shows, as plain values."""
    facts = _facts(cohort)
    encoders = [str(e) for e in report.scores.index]
    taken: set[str] = {"all", "provenance", "notes"}
    views, filters = [], {"specialty": [], "licence": []}
    for kind, attribute in (("specialty", "specialty"), ("licence", "licence_key")):
        values = sorted({getattr(facts[e], attribute) if e in facts else UNKNOWN for e in encoders})
        for value in values:
            keep = {e for e in encoders if (getattr(facts[e], attribute) if e in facts else UNKNOWN) == value}
            slug = _slug(f"{kind}-{value}", taken)
            filters[kind].append({"anchor": slug, "label": value, "count": len(keep)})
            views.append({"anchor": slug, "title": f"{kind.capitalize()}: {value}", "count": len(keep),
                          "scopes": _scopes(report, facts, keep)})
    everyone = {"anchor": "all", "title": "All encoders", "count": len(encoders),
                "scopes": _scopes(report, facts, set(encoders))}
    level = report.settings.level
    return {
        "title": "CRS-Bench leaderboard",
        "axis_headers": [AXIS_HEADERS[a] for a in AXES],
        "level": f"{level:.0%}",
        "views": views, "everyone": everyone, "filters": filters,
        "reference": report.reference, "interval": report.interval_label or "no bootstrap",
        "target": target_line(report),
        "n_boot": report.settings.n_boot,
        "departures": list(report.settings.departures),
        "notes": [n for n in report.notes if n not in report.settings.departures],
        "sources": list(report.settings.sources),
        "provenance": [facts[e] for e in encoders if e in facts],
        "tasks": list(report.settings.tasks),
    }


def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("crsbench.bundles", "templates"),
        autoescape=True,  # every user string is escaped; nothing is marked safe
        finalize=lambda value: printable(value) if type(value) is str else value,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
    )


def render(report: ScoreReport, cohort: Cohort) -> str:
    return _environment().get_template("leaderboard.html.j2").render(**context(report, cohort))


def write_leaderboard(report: ScoreReport, cohort: Cohort, out_dir: str | Path) -> Path:
    """Write OUT/index.html; returns its path."""
    from crsbench.core.atomic import atomic_write

    path = Path(out_dir) / "index.html"
    page = render(report, cohort).encode("utf-8")
    atomic_write(path, lambda out: out.write(page))
    return path
