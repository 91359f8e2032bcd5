"""The report's comparison figures: the forest plot of each axis against the reference, encoder x task
and encoder x perturbation heat maps, per-class AUROC, and score against cost per image.

Each is a pure function of the report's data (the score value, and the run records for the per-class
and perturbation views) returning a Figure, or Absent with the reason. Colours and name handling are
figure_style's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from crsbench.scoring.axes import AXES
from crsbench.report import evidence
from crsbench.report.figure_style import AXIS_LABELS, COLUMN_WIDTH, Absent, Drawn, figure, label
from crsbench.report.figures_front import pareto_front_figure
from crsbench.report.figures_subgroups import subgroup_dots

if TYPE_CHECKING:  # annotations only
    from crsbench.report.data import ReportData
    from crsbench.scoring.score_report import ScoreReport


def forest_table(report: ScoreReport) -> pd.DataFrame:
    """Per encoder and axis (and the CRS): its cross-task difference to the reference with the paired
    case-level interval where the paired bootstrap ran (the same draws for both, so what they share cancels).
    Without it, the point difference alone."""
    rows = []
    intervals = report.intervals.axis_intervals
    overall = intervals[intervals["scope"] == "overall"] if len(intervals) else intervals
    paired = "diff_low" in overall.columns
    ref = report.reference
    for axis in [a for a in AXES if a in report.axes_used]:
        for encoder in report.point.scores.index:
            value = float(report.point.scores.loc[encoder, axis]) - float(report.point.scores.loc[ref, axis])
            low = high = np.nan
            if len(overall) and paired:
                hit = overall[(overall["encoder"] == encoder) & (overall["axis"] == axis)]
                if len(hit):
                    low, high = float(hit["diff_low"].iloc[0]), float(hit["diff_high"].iloc[0])
            rows.append({"axis": axis, "encoder": str(encoder), "value": value, "ci_low": low, "ci_high": high})
    for encoder in report.point.scores.index:
        row = report.point.scores.loc[encoder]
        rows.append({"axis": "crs", "encoder": str(encoder), "value": float(row["crs"]),
                     "ci_low": float(row["ci_low"]), "ci_high": float(row["ci_high"])})
    return pd.DataFrame(rows)


def forest(data: ReportData) -> Drawn:
    """One panel per axis and one for the CRS: each encoder's difference to the reference with its paired
    interval; zero (the reference) as a dashed line."""
    report = data.report
    table = forest_table(report)
    if table.empty:
        return Absent("no scored axis")
    panels = [a for a in AXES if a in report.axes_used] + ["crs"]
    encoders = data.encoders
    lines = max(label(e, 24).count("\n") + 1 for e in encoders)  # wrapped names need taller rows
    fig = figure(0.9 + 0.2 * lines * len(encoders) * ((len(panels) + 1) // 2), width=COLUMN_WIDTH * 1.6)
    axs = fig.subplots((len(panels) + 1) // 2, 2, squeeze=False).ravel()
    y = np.arange(len(encoders))
    for ax, axis in zip(axs, panels):
        part = table[table["axis"] == axis].set_index("encoder").reindex(encoders)
        for yi, encoder in zip(y, encoders):
            r = part.loc[encoder]
            colour = data.palette.colour(encoder)
            if np.isfinite(r["ci_low"]):
                ax.hlines(yi, r["ci_low"], r["ci_high"], color=colour, linewidth=1.2)
            ax.plot(r["value"], yi, "o", color=colour, markersize=3.5)
        ax.axvline(0.0, color="#333333", linewidth=0.7, linestyle="--")
        ax.set_yticks(y, [label(e, 24) for e in encoders])
        ax.set_ylim(len(encoders) - 0.5, -0.5)
        # two lines: a long axis name beside a second panel would run off the figure on one
        ax.set_title("CRS" if axis == "crs" else f"{AXIS_LABELS[axis]},\nminus the reference's", loc="left")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # ticks that do not run into each other
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
        ax.tick_params(axis="y", length=0)
    for ax in axs[len(panels):]:
        ax.set_visible(False)
    return fig


def task_matrix(report: ScoreReport) -> pd.DataFrame:
    """CRS per (encoder, task): encoders best first, tasks in order."""
    frame = report.point.scores_by_task
    if frame.empty:
        return pd.DataFrame()
    matrix = frame.pivot_table(index="encoder", columns="task", values="crs", aggfunc="first")
    tasks = [t for t in report.settings.tasks if t in matrix.columns]
    return matrix.reindex(index=[e for e in report.point.scores.index if e in matrix.index], columns=tasks)


def perturbation_matrix(records: pd.DataFrame) -> pd.DataFrame:
    """Mean AUROC drop (clean minus perturbed, 100% labels) per (encoder, perturbation), over severities,
    seeds and tasks."""
    curves = evidence.robustness_curves(records)
    if curves.empty:
        return pd.DataFrame()
    clean = curves[curves["severity"] == 0].set_index(["task", "condition", "encoder"])["mean"]
    perturbed = curves[curves["severity"] > 0].copy()
    perturbed["drop"] = [clean.get((t, c, e), np.nan) - m for t, c, e, m in
                         zip(perturbed["task"], perturbed["condition"], perturbed["encoder"], perturbed["mean"])]
    return perturbed.pivot_table(index="encoder", columns="condition", values="drop", aggfunc="mean")


def _heat(fig_height: float, matrix: pd.DataFrame, encoders: list[str], cmap: str, title: str, fmt: str,
          centre: float | None = None) -> Figure:
    matrix = matrix.reindex(index=[e for e in encoders if e in matrix.index])
    values = matrix.to_numpy(dtype=float)
    fig = figure(fig_height, width=COLUMN_WIDTH * (1.0 if matrix.shape[1] <= 4 else 1.5))
    ax = fig.subplots()
    finite = values[np.isfinite(values)]
    # every value at the centre (one encoder against itself): any span colours it neutral
    span = (float(np.max(np.abs(finite - (centre or 0)))) if finite.size else 0.0) or 1.0
    low, high = ((centre or 0) - span, (centre or 0) + span) if centre is not None else \
        (min(0.0, float(finite.min())) if finite.size else 0.0, float(finite.max()) if finite.size else 1.0)
    image = ax.imshow(values, cmap=cmap, aspect="auto", vmin=low, vmax=high)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                # dark cells take white text
                strength = abs(values[i, j] - (centre or 0)) / span if centre is not None else \
                    (values[i, j] - low) / max(high - low, 1e-12)
                ax.text(j, i, format(values[i, j], fmt), ha="center", va="center", fontsize=5.8,
                        color="white" if strength > 0.6 else "#111111")
    ax.set_yticks(range(len(matrix.index)), [label(e) for e in matrix.index])
    # rotated: room for a whole name
    ax.set_xticks(range(len(matrix.columns)), [label(c, 24) for c in matrix.columns], rotation=30, ha="right")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
    bar.set_label(title)
    bar.ax.tick_params(labelsize=6)
    return fig


def encoder_task_heatmap(data: ReportData) -> Drawn:
    matrix = task_matrix(data.report)
    if matrix.empty:
        return Absent("no per-task scores")
    return _heat(0.8 + 0.26 * len(matrix), matrix, data.encoders, "RdBu", "CRS on the task\n(reference 0)", ".1f",
                 centre=0.0)


def encoder_perturbation_heatmap(data: ReportData) -> Drawn:
    matrix = perturbation_matrix(data.records)
    if matrix.empty:
        return Absent("no perturbation was run: nothing to show per perturbation")
    return _heat(0.8 + 0.26 * len(matrix), matrix, data.encoders, "RdBu_r", "AUROC drop\n(clean \u2212 perturbed)",
                 ".3f", centre=0.0)


def per_class_auroc_table(records: pd.DataFrame, task: str) -> pd.DataFrame:
    """Seed-mean one-vs-rest AUROC per (encoder, class) on the clean test at 100% labels, from records as
    scored (Records.frame: list fields decoded)."""
    full = records[(records["task"] == task) & (records["condition_kind"] == "clean")
                   & (records["fraction"].astype(float) == evidence.FULL_LABELS)]
    if "auroc_per_class" not in full or full["auroc_per_class"].isna().all():
        return pd.DataFrame()
    rows = []
    for row in full.itertuples():
        values = row.auroc_per_class  # a list or None: the records as scored (ReportData.records)
        if values is None:
            continue
        for k, v in enumerate(values):
            rows.append({"encoder": row.encoder, "class": k, "auroc": np.nan if v is None else float(v)})
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows).groupby(["encoder", "class"])["auroc"].mean().unstack("class")


def per_class_auroc(data: ReportData, task: str) -> Drawn:
    table = per_class_auroc_table(data.records, task)
    if table.empty:
        return Absent(f"the records of task {task!r} hold no per-class AUROC")
    encoders = [e for e in data.encoders if e in table.index]
    counts = data.report.evidence.class_counts
    test = counts[(counts["task"] == task) & (counts["set"] == "test")].set_index("class") if len(counts) else None
    cases = test["cases"] if test is not None else pd.Series(dtype=float)
    names = test["name"] if test is not None and "name" in test else pd.Series(dtype=object)
    classes = list(table.columns)
    fig = figure(2.4, width=COLUMN_WIDTH * (1.0 if len(classes) <= 4 else 1.5))
    ax = fig.subplots()
    width = 0.8 / max(len(encoders), 1)
    for i, encoder in enumerate(encoders):
        x = np.arange(len(classes)) - 0.4 + width * (i + 0.5)
        ax.bar(x, table.loc[encoder].to_numpy(dtype=float), width=width, color=data.palette.colour(encoder),
               label=label(encoder))
    ax.axhline(0.5, color="#999999", linewidth=0.6, linestyle=":")
    words = [label(names.get(k, f"class {k}"), 14) for k in classes]
    ax.set_xticks(range(len(classes)), [f"{w}\nn={int(cases.get(k, 0))}" if len(cases) else w
                                        for w, k in zip(words, classes)])
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("one-vs-rest AUROC")
    ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return fig


def score_against_cost(data: ReportData) -> Drawn:
    costs = getattr(data, "seconds_per_image", None) or {}
    scores = data.report.point.scores
    known = [e for e in data.encoders if e in costs]
    if len(known) < 2:
        return Absent("no measured embedding cost per image for these results (`select` measures it; run records "
                      "hold probe times only)")
    fig = figure(2.6)
    ax = fig.subplots()
    for encoder in known:
        ms = 1000 * float(costs[encoder])
        ax.scatter(ms, float(scores.loc[encoder, "skill"]), color=data.palette.colour(encoder), s=30,
                   label=label(encoder))
    ax.set_xscale("log")
    ax.set_xlabel("embedding cost (ms per image, measured, log scale)")
    ax.set_ylabel("skill (100 x weighted mean of u)")
    ax.grid(linewidth=0.3, alpha=0.5)
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    return fig


BUILDERS = {"forest": forest, "encoder_task": encoder_task_heatmap, "encoder_perturbation": encoder_perturbation_heatmap,
            "score_cost": score_against_cost, "per_class_auroc": per_class_auroc, "pareto_front": pareto_front_figure,
            "subgroups": subgroup_dots}
