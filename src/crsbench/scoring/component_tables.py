"""The published components as tables, with bootstrap probabilities, and where the two definitions part.

Pure: the cross-task axis values (E, A), the bootstrap's axis draws (B, E, A) of the same cohort (or
None), the reference and the CRSConfig in; four tables out (docs/crs.md section 2b):

- `components`, per encoder: dominance over the reference (the composite's smooth term), balance and
  worst axis in points with their intervals, the worst axis's name and P(each axis is the worst), the
  Pareto relation to the reference with the probability of each relation, on the front and P(front);
- `pareto_pairs`, per ordered pair: the point relation and P(dominates), P(is dominated),
  P(incomparable);
- `definitions`, per encoder: the CRS and its rank under both definitions;
- `disagreements`, the pairs the two definitions order differently, with P(first above second) under
  each (encoder_a: the one the mean of skills puts above; encoder_b: the one the components put above)
  and a verdict: "reversal" when both resolve the pair, in opposite directions; "tie" when neither
  does; "resolved by <definition> only" when one does. A definition resolves a pair when P(first above second) lies
  outside [(1 - level) / 2, 1 - (1 - level) / 2], the two-sided sense of the interval level (0.025 and
  0.975 at 95%).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from crsbench.crs import components as comp
from crsbench.crs.definition import DEFINITIONS, CRSConfig, crs_chain, reference_index, scaled_values
from crsbench.scoring.rank_agreement import rank_agreement, rank_agreement_intervals

TIE = "tie"
REVERSAL = "reversal"
NO_BOOTSTRAP = "no bootstrap"


@dataclass(frozen=True)
class ComponentTables:
    components: pd.DataFrame
    pareto_pairs: pd.DataFrame
    definitions: pd.DataFrame
    disagreements: pd.DataFrame
    agreement: pd.DataFrame = field(default_factory=pd.DataFrame)  # AUROC vs CRS under each definition


def agreement_by_definition(values: pd.DataFrame, draws: np.ndarray | None, reference: str, config: CRSConfig,
                            baselines: Sequence[str] = (), *, n_seeds: int, method: str) -> pd.DataFrame:
    """AUROC against the CRS under each definition (the cohort without floor baselines), one row each, with
    bootstrap intervals from the axis draws where there are draws (rank_agreement.rank_agreement_intervals)."""
    axes = list(values.columns)
    if "discrimination" not in axes:
        return pd.DataFrame()
    encoders = [str(e) for e in values.index]
    ref = reference_index(encoders, reference)
    cohort = [e for e in encoders if e not in set(baselines)]
    configs = {c.definition: c for c in (config, config.other_definition())}
    auroc = values["discrimination"].astype(float)
    rows = []
    for d in DEFINITIONS:
        crs = pd.Series(crs_chain(values.to_numpy(dtype=float), ref, configs[d].chain(axes)).crs, index=values.index)
        agreement = rank_agreement(auroc.loc[cohort], crs.loc[cohort])
        if draws is None or len(draws) == 0:
            summary = agreement.summary()
        else:
            summary, _ = rank_agreement_intervals(agreement, encoders, draws[..., axes.index("discrimination")],
                                                  crs_chain(draws, ref, configs[d].chain(axes)).crs,
                                                  n_seeds=n_seeds, level=config.level, method=method)
        rows.append(summary.assign(definition=d))
    return pd.concat(rows, ignore_index=True)


def _interval(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - level
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Competition ranks (1 = best; ties share the better rank) per row."""
    return 1 + (scores[..., None, :] > scores[..., :, None]).sum(axis=-1)


def component_tables(values: pd.DataFrame, draws: np.ndarray | None, reference: str, config: CRSConfig,
                     level: float | None = None) -> ComponentTables:
    """The four tables (module docstring). `values`: one row per encoder, one column per axis used;
    `draws`: (B, E, A) in the same order, without the point, or None (probabilities NaN)."""
    encoders, axes = [str(e) for e in values.index], list(values.columns)
    level = config.level if level is None else level
    ref = reference_index(encoders, reference)
    chain = config.chain(axes)
    point = values.to_numpy(dtype=float)
    u = scaled_values(point, chain.anchors, chain.scales)
    u_draws = None if draws is None or len(draws) == 0 else scaled_values(draws, chain.anchors, chain.scales)
    args = dict(weights=chain.axis_weights, component_weights=chain.component_weights, tol=chain.tolerance,
                tau=chain.balance_tau)
    parts = comp.components(u, ref, **args)
    relations = comp.relation_matrix(u, chain.tolerance, chain.axis_weights)
    front = comp.pareto_front(u, chain.tolerance, chain.axis_weights)
    table = pd.DataFrame(index=pd.Index(encoders, name="encoder"))
    table["dominance"] = parts.dominance
    table["balance"] = parts.balance
    table["worst"] = parts.worst
    table["worst_axis"] = [axes[i] for i in parts.worst_index]
    table["relation_to_reference"] = [comp.RELATION_NAMES[int(r)] for r in relations[:, ref]]
    table.loc[reference, "relation_to_reference"] = "reference"
    table["on_front"] = front
    if u_draws is not None:
        drawn = comp.components(u_draws, ref, **args)
        drawn_relations = comp.relation_matrix(u_draws, chain.tolerance, chain.axis_weights)
        for name, series in (("balance", drawn.balance), ("worst", drawn.worst)):
            table[f"{name}_low"], table[f"{name}_high"] = _interval(series, level)
        to_ref = drawn_relations[:, :, ref]
        table["p_dominates_reference"] = (to_ref == comp.DOMINATES).mean(axis=0)
        table["p_dominated_by_reference"] = (to_ref == comp.DOMINATED).mean(axis=0)
        table["p_incomparable_reference"] = (to_ref == comp.INCOMPARABLE).mean(axis=0)
        table.loc[reference, ["p_dominates_reference", "p_dominated_by_reference", "p_incomparable_reference"]] = np.nan
        table["p_front"] = (~(drawn_relations == comp.DOMINATED).any(axis=-1)).mean(axis=0)
        for k, axis in enumerate(axes):
            table[f"p_worst_{axis}"] = (drawn.worst_index == k).mean(axis=0)
    else:
        for column in ("balance_low", "balance_high", "worst_low", "worst_high", "p_dominates_reference",
                       "p_dominated_by_reference", "p_incomparable_reference", "p_front",
                       *(f"p_worst_{a}" for a in axes)):
            table[column] = np.nan
        drawn_relations = None
    return ComponentTables(table, _pairs(encoders, relations, drawn_relations),
                           *_definitions(encoders, point, draws, ref, config, axes, level))


def _pairs(encoders: Sequence[str], relations: np.ndarray, drawn: np.ndarray | None) -> pd.DataFrame:
    rows = []
    for i, e in enumerate(encoders):
        for j, f in enumerate(encoders):
            if i == j:
                continue
            row = {"encoder": e, "versus": f, "relation": comp.RELATION_NAMES[int(relations[i, j])]}
            for name, code in (("p_dominates", comp.DOMINATES), ("p_dominated", comp.DOMINATED),
                               ("p_incomparable", comp.INCOMPARABLE)):
                row[name] = float((drawn[:, i, j] == code).mean()) if drawn is not None else np.nan
            rows.append(row)
    return pd.DataFrame(rows, columns=["encoder", "versus", "relation", "p_dominates", "p_dominated", "p_incomparable"])


def _definitions(encoders, point, draws, ref, config: CRSConfig, axes, level) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both definitions' scores and ranks, and the pairs they order differently: encoder_a is the one the
    mean of skills puts above, encoder_b the one the components put above; P(a above b) under each."""
    configs = {c.definition: c for c in (config, config.other_definition())}
    scores = {d: crs_chain(point, ref, configs[d].chain(axes)).crs for d in DEFINITIONS}
    table = pd.DataFrame(index=pd.Index(encoders, name="encoder"))
    for d in DEFINITIONS:
        table[f"crs_{d}"] = scores[d]
        table[f"rank_{d}"] = _ranks(scores[d])
    has_draws = draws is not None and len(draws) > 0
    drawn = {d: crs_chain(draws, ref, configs[d].chain(axes)).crs for d in DEFINITIONS} if has_draws else {}
    low = (1.0 - level) / 2
    mean, composite = scores["mean_of_skills"], scores["components"]
    rows = []
    for i, a in enumerate(encoders):
        for j, b in enumerate(encoders):
            if not (mean[i] > mean[j] and composite[i] < composite[j]):
                continue
            row = {"encoder_a": a, "encoder_b": b}
            sides = []
            for d in DEFINITIONS:
                p = float((drawn[d][:, i] > drawn[d][:, j]).mean()) if has_draws else np.nan
                row[f"p_a_above_b_{d}"] = p
                sides.append(0 if not has_draws or low < p < 1 - low else (1 if p >= 1 - low else -1))
            row["verdict"] = _verdict(*sides) if has_draws else NO_BOOTSTRAP
            rows.append(row)
    columns = ["encoder_a", "encoder_b", *(f"p_a_above_b_{d}" for d in DEFINITIONS), "verdict"]
    return table, pd.DataFrame(rows, columns=columns)


def _verdict(mean_side: int, components_side: int) -> str:
    """+1: the definition resolves a above b; -1: b above a; 0: it does not resolve the pair."""
    if mean_side == 0 and components_side == 0:
        return TIE
    if mean_side == 1 and components_side == -1:
        return REVERSAL
    if mean_side != 0 and components_side != 0:
        return "same order in the bootstrap"  # both resolve it one way, against one point order
    return "resolved by mean_of_skills only" if mean_side else "resolved by components only"


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    frame = table.reset_index() if table.index.name == "encoder" else table
    return [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]


def components_summary(components: pd.DataFrame, pareto_pairs: pd.DataFrame, definitions: pd.DataFrame,
                       disagreements: pd.DataFrame, definition: str,
                       agreement: pd.DataFrame | None = None) -> dict[str, Any]:
    """The components and both definitions' orders as named JSON fields (summary.json, --json, bundles)."""
    orders = {d: [str(e) for e in definitions.sort_values([f"rank_{d}", f"crs_{d}"], ascending=[True, False],
                                                              kind="stable").index]
              for d in DEFINITIONS} if len(definitions) else {}
    front = components.index[components["on_front"].astype(bool)] if len(components) else []
    return {
        "definition": definition,
        "components": _records(components),
        "pareto_front": [str(e) for e in front],
        "pareto_pairs": _records(pareto_pairs),
        "orders": orders,
        "disagreements": _records(disagreements),
        "rank_agreement_by_definition": _records(agreement) if agreement is not None else [],
    }
