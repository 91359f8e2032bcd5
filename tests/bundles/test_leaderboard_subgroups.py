"""The leaderboard's subgroup view: per encoder and attribute the worst subgroup and the gap with their
intervals and bias estimates, and the flagged differences, each the scored value's own numbers; on a
planted gap, the page names it."""

from __future__ import annotations

import re

from crsbench.bundles.compare import Cohort
from crsbench.bundles.leaderboard import render
from crsbench.bundles.leaderboard_subgroups import subgroup_view
from crsbench.report.subgroup_view import difference_sentence

from _planted_subgroup import planted_sex_gap


def test_the_subgroup_view_holds_the_scored_worst_subgroup_gap_and_flagged_difference(monkeypatch):
    records, stored, report = planted_sex_gap(n_boot=200)
    view = subgroup_view(report, {}, {})
    assert view["absent"] == "" and view["target"] == report.subgroups.target
    (task,) = view["tables"]
    columns = [c["key"] for c in task["table"]["columns"]]
    rows = {(r["encoder"], r["cells"][columns.index("attribute")]["text"]): r["cells"] for r in task["table"]["rows"]}
    worst = report.subgroups.worst.query("encoder == 'b' and attribute == 'sex'").iloc[0]
    cells = rows[("b", "sex")]
    assert cells[columns.index("worst_subgroup")]["text"] == "F" == worst["worst_subgroup"]
    assert cells[columns.index("worst_auroc")]["sort"] == worst["worst_auroc"]
    assert cells[columns.index("worst_interval")]["sort"] == worst["worst_low"]
    assert cells[columns.index("gap")]["sort"] == worst["gap"] > 0.2
    assert cells[columns.index("gap_interval")]["text"] == f"[{worst['gap_low']:.3f}, {worst['gap_high']:.3f}]"
    flagged_row = next(report.subgroups.table.query("encoder == 'b' and subgroup == 'F'").itertuples())
    assert flagged_row.diff_excludes_zero
    assert cells[columns.index("flagged")]["text"].startswith(f"F {flagged_row.diff:+.3f} [")
    assert rows[("a", "sex")][columns.index("flagged")]["text"] == "none"  # a has no planted gap
    assert task["sentences"][0] == difference_sentence(flagged_row)
    # the simulated records carry no dataset columns for the report's figures: the page's plots are not the subject
    monkeypatch.setattr("crsbench.bundles.leaderboard_plots.plots", lambda report, cohort: [])
    page = render(report, Cohort(records, stored, []))
    assert 'data-view="subgroups"' in page and 'href="#view=subgroups"' in page
    assert difference_sentence(flagged_row).replace("'", "&#39;") in page
    section = page[page.index('id="subgroups"'):page.index('id="plots"')]
    assert re.search(r"Task sim: worst subgroup and gap per attribute", section)
