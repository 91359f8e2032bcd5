"""The Pareto front of the four skills: the published "Pareto-aware" view of the cohort.

Two panels of skill pairs (AUROC against Brier skill, label efficiency against robustness), in skill
units; an encoder on the four-axis front (dominated by no other encoder beyond the tolerance,
crsbench.crs.components) is ringed and its bootstrap P(on the front) is printed beside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from crsbench.report.figure_style import AXIS_LABELS, COLUMN_WIDTH, Absent, Drawn, label

if TYPE_CHECKING:  # annotations only
    from crsbench.report.data import ReportData

PAIRS = (("discrimination", "calibration"), ("label_efficiency", "robustness"))


def pareto_front_figure(data: ReportData) -> Drawn:
    report = data.report
    parts, profile = report.components.components, report.point.profile
    pairs = [p for p in PAIRS if set(p) <= set(profile.columns)]
    if not len(parts) or not pairs:
        return Absent("no components or no pair of axes to draw (the components need at least two axes)")
    fig = Figure(figsize=(COLUMN_WIDTH, 3.0), layout="constrained")
    axes = fig.subplots(1, len(pairs), squeeze=False)[0]
    for ax, (x_axis, y_axis) in zip(axes, pairs):
        for encoder in profile.index:
            x, y = float(profile.loc[encoder, x_axis]), float(profile.loc[encoder, y_axis])
            colour = data.palette.colour(str(encoder))
            ax.scatter(x, y, s=26, color=colour, zorder=3)
            if bool(parts.loc[encoder, "on_front"]):
                ax.scatter(x, y, s=110, facecolor="none", edgecolor="#444444", linewidth=0.7, zorder=2)
            p = parts.loc[encoder, "p_front"]
            if pd.notna(p):
                ax.annotate(f"{p:.2f}", (x, y), textcoords="offset points", xytext=(4, 3), fontsize=6)
        ax.set_xlabel(f"{AXIS_LABELS.get(x_axis, x_axis)} (skill u)")
        ax.set_ylabel(f"{AXIS_LABELS.get(y_axis, y_axis)} (skill u)")
        ax.grid(linewidth=0.3, alpha=0.5)
    handles = [Line2D([], [], marker="o", linestyle="none", color=data.palette.colour(e), markersize=5)
               for e in data.encoders]
    handles.append(Line2D([], [], marker="o", linestyle="none", markerfacecolor="none", color="#444444", markersize=8))
    fig.legend(handles, [label(e) for e in data.encoders] + ["on the four-axis Pareto front"],
               loc="outside lower center", ncol=2, frameon=False)
    return fig

