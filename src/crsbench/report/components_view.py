"""The published components and the two CRS definitions, for the terminal and the page: a compact table
under the score table, both orders side by side, and the pairs the definitions order differently."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from crsbench.core.printable import printable
from crsbench.crs.definition import DEFINITIONS
from crsbench.report import tables as page
from crsbench.report.terminal import definition_formula

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport

DEFINITION_WORDS = {"mean_of_skills": "mean of skills", "components": "components"}
RELATION_SHORT = {"dominates": "dominates", "is dominated": "dominated", "incomparable": "incomparable",
                  "reference": "reference"}


def components_caption(report: ScoreReport) -> str:
    """The line under the components table: the reference, the tolerance, and what each column means."""
    tolerance = report.settings.components.get("tolerance", 0)
    return (f"P dom / P dom'd: the bootstrap probability of dominating / being dominated by the reference "
            f"{report.reference} (nowhere worse by more than the tolerance, {tolerance:g} skill units per axis, and "
            "somewhere better by more); front: dominated by no encoder; balance: soft minimum of the skills, worst "
            "axis: the lowest skill (points), P: the bootstrap probability that it is the worst")


def _p(value) -> str:
    return "-" if value is None or pd.isna(value) else f"{float(value):.2f}"


def _points(value) -> str:
    # rounded first, then "+ 0.0": a value that rounds to zero prints 0.0, not -0.0
    return "-" if value is None or pd.isna(value) else f"{round(float(value), 1) + 0.0:.1f}"


def component_rows(report: ScoreReport) -> list[dict[str, str]]:
    """One row of display cells per encoder, in the order of the score table."""
    table = report.components.components
    if not len(table):
        return []
    axes = list(report.axes_used)
    rows = []
    for encoder in [e for e in report.point.scores.index if e in table.index]:
        row = table.loc[encoder]
        relation = RELATION_SHORT.get(str(row["relation_to_reference"]), str(row["relation_to_reference"]))
        if relation != "reference" and pd.notna(row.get("p_dominates_reference")):
            relation += f" ({_p(row['p_dominates_reference'])} / {_p(row['p_dominated_by_reference'])})"
        worst_p = row.get(f"p_worst_{row['worst_axis']}")
        balance = _points(row["balance"])
        if pd.notna(row.get("balance_low")):
            balance += f" [{_points(row['balance_low'])}, {_points(row['balance_high'])}]"
        rows.append({
            "encoder": str(encoder),
            "vs reference (P dom / P dom'd)": relation,
            "front (P)": ("yes" if bool(row["on_front"]) else "no") + f" ({_p(row.get('p_front'))})",
            "dominance": _points(row["dominance"]),
            "balance [CI]": balance,
            "worst axis (P)": f"{row['worst_axis']} {_points(row['worst'])} ({_p(worst_p)})"
            if row["worst_axis"] in axes else "-",
        })
    return rows


def components_table(report: ScoreReport) -> Table:
    """The compact components table shown under the cross-task score table (its caption: components_caption)."""
    table = Table(title=Text("Components across tasks"), box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, padding=(0, 1, 0, 0))
    rows = [{name: printable(_two_lines(name, v)) for name, v in row.items()} for row in component_rows(report)]
    for name in (rows[0] if rows else {"encoder": ""}):
        # each cell's lines whole (a name on one line, its figures on the next), so six columns fit 80 characters
        longest = max([len(line) for row in rows for line in row[name].splitlines()] + [len(w) for w in name.split()])
        table.add_column(name, justify="left" if name == "encoder" else "right", width=longest, overflow="fold")
    for row in rows:
        table.add_row(*(Text(v) for v in row.values()))
    return table


def _two_lines(column: str, cell: str) -> str:
    if column == "encoder" or column.startswith("front"):
        return cell
    word, _, rest = cell.partition(" ")
    if rest.startswith("(") and " / " in rest:  # the relation's two probabilities, as the caption names them
        rest = rest.strip("()").replace(" / ", "/")
    return f"{word}\n{rest}" if rest else word


def _orders(frame: pd.DataFrame, names) -> dict[str, pd.DataFrame]:
    return {d: frame.sort_values([f"rank_{d}", f"crs_{d}"], ascending=[True, False], kind="stable") for d in names}


def orders_table(report: ScoreReport) -> Table:
    """Both definitions' orders side by side, the ranking one first."""
    ranking = report.settings.definition
    names = [ranking] + [d for d in DEFINITIONS if d != ranking]
    table = Table(title=Text("Both CRS definitions side by side: rank and CRS under each\n(ranking: "
                             + DEFINITION_WORDS[ranking] + ")"))
    frame = report.components.definitions
    orders = _orders(frame, names)
    for d in names:
        table.add_column("#", justify="right")
        table.add_column(DEFINITION_WORDS[d], no_wrap=True)
        table.add_column("CRS", justify="right")
    for i in range(len(frame)):
        cells = []
        for d in names:
            row = orders[d].iloc[i]
            cells += [str(int(row[f"rank_{d}"])), Text(printable(str(orders[d].index[i]))), f"{row[f'crs_{d}']:.2f}"]
        table.add_row(*cells)
    return table


def _with_interval(row, name: str, digits: int) -> str:
    value = f"{row[name]:.{digits}f}"
    low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
    return value if low is None or pd.isna(low) else f"{value} [{low:.{digits}f}, {high:.{digits}f}]"


def agreement_lines(report: ScoreReport) -> list[Text]:
    """AUROC against the CRS under each definition, with the bootstrap intervals."""
    table = report.components.agreement
    lines = []
    for _, row in table.iterrows():
        if int(row["n_pairs"]) == 0:
            continue
        lines.append(Text(f"AUROC vs CRS ({DEFINITION_WORDS[row['definition']]}): Spearman "
                          f"{_with_interval(row, 'spearman', 2)}, Kendall tau-b {_with_interval(row, 'kendall_tau_b', 2)}, "
                          f"{int(row['n_reversed'])} of {int(row['n_pairs'])} orderings reversed, mean rank displacement "
                          f"{_with_interval(row, 'mean_abs_rank_displacement', 2)}"))
    return lines


def disagreement_lines(report: ScoreReport) -> list[Text]:
    """The pairs the definitions order differently, each with its bootstrap probability under both."""
    pairs = report.components.disagreements
    if not len(report.components.definitions):
        return []
    if not len(pairs):
        return [Text("The two CRS definitions order every pair alike.")]
    verdicts = pairs["verdict"].value_counts()
    head = (f"The two CRS definitions order {len(pairs)} pair(s) differently: "
            + ", ".join(f"{n} {v}" for v, n in verdicts.items())
            + " (a definition resolves a pair when its bootstrap P(a above b) is outside the central "
              f"{report.settings.level:.0%}; neither resolving it is a tie, not a reversal)")
    lines = [Text(head)]
    for pair in pairs.itertuples():
        lines.append(Text(f"  pair: {pair.encoder_a} above {pair.encoder_b} by the mean of skills "
                          f"(P {_p(pair.p_a_above_b_mean_of_skills)}), below by the components "
                          f"(P(above) {_p(pair.p_a_above_b_components)}): {pair.verdict}"))
    return lines


def page_tables(report: ScoreReport) -> list[page.Table]:
    """The components, both orders and the pairs they part on, as the report page's tables."""
    rows = component_rows(report)
    if not rows:
        return []
    parts = report.settings.components
    out = [page.Table(f"Components across tasks (tolerance {parts.get('tolerance', 0):g} skill units per axis)",
                 list(rows[0]), [list(r.values()) for r in rows], components_caption(report))]
    ranking = report.settings.definition
    names = [ranking] + [d for d in DEFINITIONS if d != ranking]
    frame = report.components.definitions
    orders = _orders(frame, names)
    headers = [h for d in names for h in (f"rank ({DEFINITION_WORDS[d]})", DEFINITION_WORDS[d], "CRS")]
    body = [[c for d in names for c in (str(int(orders[d].iloc[i][f"rank_{d}"])), str(orders[d].index[i]),
                                         f"{orders[d].iloc[i][f'crs_{d}']:.2f}")] for i in range(len(frame))]
    out.append(page.Table(f"The two CRS definitions side by side (ranking: {DEFINITION_WORDS[ranking]})", headers, body,
                     definition_formula(report)))
    pairs = report.components.disagreements
    if len(pairs):
        out.append(page.Table("Pairs the two definitions order differently",
                         ["above by the mean of skills", "above by the components", "P(above), mean of skills",
                          "P(above), components", "verdict"],
                         [[str(p.encoder_a), str(p.encoder_b), _p(p.p_a_above_b_mean_of_skills),
                           _p(p.p_a_above_b_components), str(p.verdict)] for p in pairs.itertuples()],
                         str(disagreement_lines(report)[0]), text_columns=2))
    agreement = report.components.agreement
    if len(agreement):
        names = [("spearman", 2), ("kendall_tau_b", 2), ("n_reversed", 0), ("mean_abs_rank_displacement", 2)]
        out.append(page.Table("AUROC against the CRS under each definition (without floor baselines)",
                         ["definition", "Spearman", "Kendall tau-b", "reversed pairs", "mean rank displacement"],
                         [[DEFINITION_WORDS[r["definition"]], *(_with_interval(r, n, k) for n, k in names)]
                          for _, r in agreement.iterrows()], "in brackets: bootstrap intervals"))
    return out
