"""Records in, a complete CRS report out: the one entry point the CLI and the Python API call.

    report = score_records(records)              # axes, CRS, bootstrap, rank agreement, sensitivity
    write_score_report(report, "out/scores")     # CSV + Parquet (+ JSON for scores) + summary.json
    rich.print(scores_rich_table(report))        # the terminal view
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.axes import AXES, aggregate_seeds, compute_axes, seed_standard_error
from crsbench.crs import (
    COMPONENTS,
    DEFAULT_NOISE_FLOOR,
    DEFAULT_TAU,
    axis_weight_vector,
    component_weight_vector,
    crs_arrays,
)
from crsbench.stats import (
    DEFAULT_INTERVAL,
    DEFAULT_LEVEL,
    DEFAULT_N_BOOT,
    competition_ranks,
    paired_seed_bootstrap,
    rank_agreement,
    weight_sensitivity,
)

SCORE_COLUMNS: tuple[str, ...] = (
    *AXES,
    *COMPONENTS,
    "crs",
    "ci_low",
    "ci_high",
    "p_rank1",
    "in_leading_tier",
    "auroc_rank",
    "crs_rank",
)


@dataclass(frozen=True)
class ScoreReport:
    """Every table the CRS stage produces, indexed by encoder where that makes sense.

    scores: one row per encoder, sorted by crs_rank, columns SCORE_COLUMNS (an axis that is missing
    is NaN there and listed in `axes_missing` with its reason; the CRS uses `axes_used` only).
    """

    scores: pd.DataFrame
    axes: pd.DataFrame
    axes_by_task: pd.DataFrame
    axes_by_seed: pd.DataFrame
    profile: pd.DataFrame
    spread: pd.DataFrame
    rank_distribution: pd.DataFrame
    pairwise: pd.DataFrame
    leading_tier_table: pd.DataFrame
    rank_agreement: pd.DataFrame
    reversed_pairs: pd.DataFrame
    weight_sensitivity: pd.DataFrame
    seed_summary: pd.DataFrame
    reference: str
    axes_used: tuple[str, ...]
    axes_missing: dict[str, str]
    leading_tier: tuple[str, ...]
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by file stem, as `write_score_report` writes them."""
        return {
            "scores": self.scores,
            "axes": self.axes,
            "axes_by_task": self.axes_by_task,
            "axes_by_seed": self.axes_by_seed,
            "profile": self.profile,
            "spread": self.spread,
            "rank_distribution": self.rank_distribution,
            "pairwise": self.pairwise,
            "leading_tier": self.leading_tier_table,
            "rank_agreement": self.rank_agreement,
            "reversed_pairs": self.reversed_pairs,
            "weight_sensitivity": self.weight_sensitivity,
            "seed_summary": self.seed_summary,
        }

    def summary(self) -> dict[str, Any]:
        """The non-tabular facts: reference, axes used and missing, tier, notes, settings."""
        return {
            "reference": self.reference,
            "axes_used": list(self.axes_used),
            "axes_missing": dict(self.axes_missing),
            "leading_tier": list(self.leading_tier),
            "top": self.scores.index[0] if len(self.scores) else None,
            "rank_agreement": self.rank_agreement.to_dict(orient="records")[0] if len(self.rank_agreement) else {},
            "notes": list(self.notes),
            "settings": dict(self.settings),
        }


# --------------------------------------------------------------------------- helpers


def default_reference(encoders: list[str]) -> str:
    """The first encoder alphabetically: deterministic when the caller (the suite) names none."""
    return sorted(encoders)[0]


def _usable_axis_weights(
    axis_weights: Mapping[str, float] | None, used: tuple[str, ...], notes: list[str]
) -> dict[str, float] | None:
    if axis_weights is None:
        return None
    unknown = sorted(set(axis_weights) - set(AXES))
    if unknown:
        raise ValueError(f"unknown axis weight name(s) {unknown}; expected some of {list(AXES)}")
    dropped = sorted(set(axis_weights) - set(used))
    if dropped:
        notes.append(f"axis weight(s) for {dropped} ignored: the axis is missing")
    return {a: w for a, w in axis_weights.items() if a in used}


def _ranks(series: pd.Series) -> pd.Series:
    return pd.Series(competition_ranks(series.to_numpy(dtype=float)[None, :])[0], index=series.index)


# --------------------------------------------------------------------------- the entry point


def score_records(
    records: pd.DataFrame,
    reference: str | None = None,
    component_weights: Mapping[str, float] | None = None,
    axis_weights: Mapping[str, float] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    *,
    tau: float = DEFAULT_TAU,
    noise_floor: float = DEFAULT_NOISE_FLOOR,
    level: float = DEFAULT_LEVEL,
    interval: str = DEFAULT_INTERVAL,
    n_weight_draws: int = 1000,
    weight_concentration: float = 1.0,
    resample_cases: bool = False,
) -> ScoreReport:
    """Axes, CRS, paired-seed bootstrap, AUROC-vs-CRS agreement and weight sensitivity from records.

    reference: an encoder name; None picks the first encoder alphabetically (the CLI passes the
    suite's reference). Weights: mappings by name, names left out keep weight 1, normalised; axis
    weights for a missing axis are ignored with a note. n_boot=0 skips the bootstrap (intervals and
    tier are then NA); n_weight_draws=0 skips the sensitivity analysis. resample_cases=True raises
    DataError: records hold no per-case predictions (docs/crs.md, "Test-case resampling").
    """
    notes: list[str] = []
    axis_scores = compute_axes(records)
    notes.extend(axis_scores.notes)
    encoders = list(axis_scores.encoders)
    used = axis_scores.axes
    if reference is None:
        reference = default_reference(encoders)
        notes.append(f"reference not given: using {reference!r}, the first encoder alphabetically")
    elif reference not in encoders:
        raise ValueError(f"reference encoder {reference!r} is not in the records' cohort {encoders}")
    axis_weights = _usable_axis_weights(axis_weights, used, notes)
    component_vector = component_weight_vector(component_weights)
    axis_vector = axis_weight_vector(used, axis_weights)
    if axis_scores.missing:
        notes.append(f"CRS computed on {len(used)} axes {list(used)}; missing: {axis_scores.missing}")

    n_seeds = len(axis_scores.seeds)
    noise = pd.Series(
        seed_standard_error(axis_scores.cube, axis_scores.task_mask, np.ones((1, n_seeds)))[0], index=list(used)
    )
    table = axis_scores.table[list(used)]
    chain = crs_arrays(
        table,
        reference,
        component_weights=component_weights,
        axis_weights=axis_weights,
        tau=tau,
        noise_se=noise,
        noise_floor=noise_floor,
    )
    index = pd.Index(encoders, name="encoder")
    scores = axis_scores.table[list(AXES)].copy()
    scores["dominance"] = chain.dominance[0]
    scores["balance"] = chain.balance[0]
    scores["worst_axis"] = chain.worst_axis[0]
    scores["crs"] = chain.crs[0]

    boot = None
    if n_boot > 0:
        if n_seeds < 2:
            notes.append("one seed only: every bootstrap draw is the same, intervals have zero width")
        elif interval == "percentile" and n_seeds < 20:
            notes.append(
                f"{n_seeds} seeds: plain percentile intervals from so few seeds are approximate and too "
                "narrow (about 82% coverage for a nominal 95% with 5 seeds; docs/crs.md, Coverage); "
                "interval='expanded' widens them"
            )
        elif n_seeds < 10:
            notes.append(
                f"{n_seeds} seeds: intervals are approximate (a nominal 95% expanded interval covered "
                "about 91% with 5 seeds in simulation; docs/crs.md, Coverage)"
            )
        boot = paired_seed_bootstrap(
            axis_scores,
            reference,
            n_boot=n_boot,
            seed=seed,
            component_weights=component_weights,
            axis_weights=axis_weights,
            tau=tau,
            noise_floor=noise_floor,
            level=level,
            interval=interval,
            resample_cases=resample_cases,
        )
        scores["ci_low"] = boot.intervals["ci_low"]
        scores["ci_high"] = boot.intervals["ci_high"]
        scores["p_rank1"] = boot.intervals["p_rank1"]
        scores["in_leading_tier"] = boot.tier["in_leading_tier"].astype("boolean")
    else:
        if resample_cases:
            paired_seed_bootstrap(axis_scores, reference, n_boot=1, resample_cases=True)  # raises
        notes.append("bootstrap skipped (n_boot=0): no intervals, no leading tier")
        scores["ci_low"] = np.nan
        scores["ci_high"] = np.nan
        scores["p_rank1"] = np.nan
        scores["in_leading_tier"] = pd.array([pd.NA] * len(encoders), dtype="boolean")

    if "discrimination" in used:
        scores["auroc_rank"] = _ranks(scores["discrimination"])
        agreement = rank_agreement(scores["discrimination"], scores["crs"])
        agreement_table, reversed_pairs = agreement.summary(), agreement.reversed_pairs
    else:
        scores["auroc_rank"] = np.nan
        agreement_table, reversed_pairs = pd.DataFrame(), pd.DataFrame()
        notes.append("no discrimination axis: AUROC-vs-CRS agreement not computed")
    scores["crs_rank"] = _ranks(scores["crs"])
    scores = scores[list(SCORE_COLUMNS)].sort_values(["crs_rank", "crs"], ascending=[True, False], kind="stable")

    sensitivity = pd.DataFrame()
    if n_weight_draws > 0:
        sensitivity = weight_sensitivity(
            table,
            reference,
            n_draws=n_weight_draws,
            concentration=weight_concentration,
            seed=seed,
            component_weights=component_weights,
            axis_weights=axis_weights,
            tau=tau,
            noise_se=noise,
            noise_floor=noise_floor,
        )

    settings = {
        "reference": reference,
        "component_weights": dict(zip(COMPONENTS, map(float, component_vector))),
        "axis_weights": dict(zip(used, map(float, axis_vector))),
        "tau": tau,
        "noise_floor": noise_floor,
        "n_boot": n_boot,
        "seed": seed,
        "level": level,
        "interval": interval,
        "n_seeds": n_seeds,
        "seeds": list(axis_scores.seeds),
        "tasks": list(axis_scores.tasks),
        "n_weight_draws": n_weight_draws,
        "weight_concentration": weight_concentration,
        "resample_cases": resample_cases,
    }
    spread = pd.DataFrame({"spread": chain.spread[0], "noise_se": noise.to_numpy()}, index=pd.Index(used, name="axis"))
    return ScoreReport(
        scores=scores,
        axes=axis_scores.table,
        axes_by_task=axis_scores.per_task,
        axes_by_seed=axis_scores.per_seed,
        profile=pd.DataFrame(chain.scaled[0], index=index, columns=list(used)),
        spread=spread,
        rank_distribution=boot.rank_distribution if boot else pd.DataFrame(),
        pairwise=boot.pairwise if boot else pd.DataFrame(),
        leading_tier_table=boot.tier if boot else pd.DataFrame(),
        rank_agreement=agreement_table,
        reversed_pairs=reversed_pairs,
        weight_sensitivity=sensitivity,
        seed_summary=aggregate_seeds(records),
        reference=reference,
        axes_used=tuple(used),
        axes_missing=dict(axis_scores.missing),
        leading_tier=boot.leading_tier if boot else (),
        notes=tuple(notes),
        settings=settings,
    )


# --------------------------------------------------------------------------- writing


def _flat(table: pd.DataFrame) -> pd.DataFrame:
    """Index as a column (when it is named) and string column names, as CSV and Parquet want."""
    out = table.reset_index() if table.index.name is not None else table.reset_index(drop=True)
    out.columns = [str(c) for c in out.columns]
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (tuple, set)):
        return list(value)
    return str(value)


def _clean_json(value: Any) -> Any:
    """NaN and infinity become null, numpy scalars plain Python, so the JSON is strict."""
    if isinstance(value, dict):
        return {str(k): _clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_json(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA:
        return None
    return value


def write_score_report(report: ScoreReport, out_dir: str | Path) -> dict[str, Path]:
    """Write every table as CSV and Parquet, the scores also as JSON, and summary.json.

    Returns the written paths by name ("scores.csv", ...). Existing files of the same name are
    replaced; nothing else in `out_dir` is touched.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for stem, table in report.tables().items():
        flat = _flat(table)
        for suffix in ("csv", "parquet"):
            path = out / f"{stem}.{suffix}"
            if suffix == "csv":
                flat.to_csv(path, index=False)
            else:
                flat.to_parquet(path, index=False)
            written[path.name] = path
    scores_json = out / "scores.json"
    records = _clean_json(_flat(report.scores).to_dict(orient="records"))
    scores_json.write_text(json.dumps(records, indent=2, default=_json_default) + "\n")
    written[scores_json.name] = scores_json
    summary = out / "summary.json"
    summary.write_text(json.dumps(_clean_json(report.summary()), indent=2, default=_json_default) + "\n")
    written[summary.name] = summary
    return written


# --------------------------------------------------------------------------- terminal


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.{digits}f}"


def scores_rich_table(report: ScoreReport):
    """The scores as a rich Table, best CRS first; missing axes show '-' and are named in the caption."""
    from rich.table import Table

    table = Table(title=f"Clinical Reliability Score (reference: {report.reference})")
    headers = [
        ("encoder", "left"),
        ("disc", "right"),
        ("calib", "right"),
        ("label eff", "right"),
        ("robust", "right"),
        ("dom", "right"),
        ("balance", "right"),
        ("worst", "right"),
        ("CRS", "right"),
        (f"{report.settings.get('level', DEFAULT_LEVEL):.0%} CI", "right"),
        ("P(#1)", "right"),
        ("tier", "center"),
        ("AUROC rank", "right"),
        ("CRS rank", "right"),
    ]
    for header, justify in headers:
        table.add_column(header, justify=justify)
    for encoder, row in report.scores.iterrows():
        interval = (
            f"[{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]" if pd.notna(row["ci_low"]) else "-"
        )
        tier = row["in_leading_tier"]
        table.add_row(
            str(encoder),
            *(_fmt(row[a]) for a in AXES),
            *(_fmt(row[c]) for c in COMPONENTS),
            _fmt(row["crs"]),
            interval,
            _fmt(row["p_rank1"], 2),
            "-" if tier is pd.NA else ("*" if bool(tier) else ""),
            _fmt(row["auroc_rank"]),
            _fmt(row["crs_rank"]),
        )
    caption = [f"axes used: {', '.join(report.axes_used)}"]
    caption += [f"{axis} missing: {reason}" for axis, reason in report.axes_missing.items()]
    caption.append("tier *: not resolved from the top encoder by the paired bootstrap")
    table.caption = "; ".join(caption)
    return table
