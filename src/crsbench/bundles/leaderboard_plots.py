"""The leaderboard's plots: the report's own matplotlib figures (AUROC against CRS with the leading tier
and the Pareto front, each encoder's axis profile, the rank distribution), as SVG in data URIs, so the
page stays one file that fetches nothing. The SVG carries no date and fixed element ids, so the same
cohort gives the same bytes."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

import matplotlib

from crsbench.bundles.compare import Cohort

if TYPE_CHECKING:
    from crsbench.scoring.score_report import ScoreReport

PLOTS = (
    ("auroc-vs-crs", "AUROC against CRS", "auroc_vs_crs",
     "Cross-task AUROC against CRS with its interval; filled: the leading tier; ringed: the Pareto front."),
    ("axis-profile", "Axis profile per encoder", "axis_profile",
     "Each encoder's four axes minus the reference's (skill u; right is better)."),
    ("rank-distribution", "Rank distribution", "rank_distribution",
     "P(CRS rank = k) over the bootstrap draws; starred: the leading tier."),
)


def _svg_uri(figure) -> str:
    sink = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "crsbench-leaderboard"}):  # fixed ids: byte-stable
        figure.savefig(sink, format="svg", metadata={"Date": None})
    matplotlib.pyplot.close(figure)
    return "data:image/svg+xml;base64," + base64.b64encode(sink.getvalue()).decode("ascii")


def plots(report: ScoreReport, cohort: Cohort) -> list[dict]:
    """[{anchor, title, caption, uri or absent}] of the three figures."""
    import matplotlib.pyplot  # noqa: F401 (close() in _svg_uri)

    from crsbench.report import figure_style, figures, sources
    from crsbench.report.data import ReportData
    from crsbench.results.record_set import validated

    records = validated(cohort.records)
    data = ReportData(report, records, sources.gather(None, records), cohort.predictions)
    out = []
    key = figure_style.name_key(data.encoders)
    for anchor, title, name, caption in PLOTS:
        caption = f"{caption} Key: {figure_style.key_text(key)}." if key else caption
        with matplotlib.rc_context(figure_style.STYLE), figure_style.keyed(key):
            drawn = getattr(figures, name)(data)
            if isinstance(drawn, figure_style.Absent):
                out.append({"anchor": anchor, "title": title, "caption": caption, "uri": None, "absent": drawn.reason})
                continue
            out.append({"anchor": anchor, "title": title, "caption": caption, "uri": _svg_uri(drawn), "absent": None})
    return out
