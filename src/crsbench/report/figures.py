"""The report's figures, drawn with matplotlib (Agg, no pyplot state) at a paper's column width.

Each builder takes the report's data and returns a Figure, or Absent with the reason a reader is
shown instead (never an empty panel). Colours, line styles and encoder names as figure text are
figure_style's, the same in every figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import matplotlib

matplotlib.use("Agg", force=False)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from crsbench.scoring.axes import AXES  # noqa: E402
from crsbench.report import evidence  # noqa: E402
from crsbench.report.figure_style import (  # noqa: E402
    AXIS_LABELS,
    COLUMN_WIDTH,
    Absent,
    Drawn,
    STYLE,
    encoder_handles,
    figure,
    label,
    legend_below,
)

if TYPE_CHECKING:  # annotations only
    from crsbench.report.data import ReportData

# --------------------------------------------------------------------------- cross-task figures


def axis_profile(data: ReportData) -> Drawn:
    """Small multiples: each encoder's four axes minus the reference's, in skill u."""
    report, palette = data.report, data.palette
    delta = evidence.profile_against_reference(report)
    encoders = [e for e in data.encoders if e != report.reference and e in delta.index]
    if not encoders:
        return Absent("only the reference encoder was scored: there is nothing to compare it with")
    ncols = 2 if len(encoders) > 1 else 1
    nrows = int(np.ceil(len(encoders) / ncols))
    fig = figure(0.35 + 0.95 * nrows)
    axs = np.atleast_1d(fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)).ravel()
    values = delta.to_numpy(dtype=float)
    span = np.nanmax(np.abs(values)) if np.isfinite(values).any() else 1.0
    span = max(span, 0.05) * 1.15
    y = np.arange(len(AXES))
    for ax, encoder in zip(axs, encoders):
        row = delta.loc[encoder]
        ax.barh(y, row.fillna(0).to_numpy(), color=palette.colour(encoder), height=0.6)
        for yi, axis in zip(y, AXES):
            if pd.isna(row[axis]):
                ax.text(0, yi, " missing", va="center", ha="left", fontsize=6, color="#555555")
        ax.axvline(0, color="#333333", linewidth=0.6)
        ax.set_title(label(encoder, 26), loc="left")
        ax.set_xlim(-span, span)
        ax.set_yticks(y, [AXIS_LABELS[a] for a in AXES])
        ax.set_ylim(len(AXES) - 0.5, -0.5)  # first axis on top; not invert_yaxis, which shared axes undo
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    for i, ax in enumerate(axs[len(encoders):], start=len(encoders)):
        ax.set_visible(False)
        axs[i - ncols].tick_params(labelbottom=True)  # the panel above has no panel under it
    fig.supxlabel(f"skill u minus reference ({label(report.reference, 18)}); right = better", fontsize=7)
    return fig


def auroc_vs_crs(data: ReportData) -> Drawn:
    """Cross-task AUROC against CRS, the CRS interval as a bar, the Pareto front, the leading tier."""
    report, palette = data.report, data.palette
    scores = report.point.scores
    if "discrimination" not in report.axes_used:
        return Absent("no discrimination axis (no clean records at 100% labels): AUROC is not known")
    x, y = scores["discrimination"].to_numpy(dtype=float), scores["crs"].to_numpy(dtype=float)
    front = evidence.pareto_front(x, y)
    tier = set(report.tier.members)
    fig = figure(2.9)
    ax = fig.subplots()
    order = np.argsort(x[front])
    ax.plot(x[front][order], y[front][order], color="#444444", linewidth=0.8, linestyle=":", zorder=1)
    for i, encoder in enumerate(scores.index):
        low, high = scores["ci_low"].iloc[i], scores["ci_high"].iloc[i]
        colour = palette.colour(encoder)
        if pd.notna(low):
            ax.vlines(x[i], low, high, color=colour, linewidth=1.0, alpha=0.8, zorder=2)
        in_tier = encoder in tier
        ax.scatter(x[i], y[i], s=42 if in_tier else 26, zorder=3, marker="o",
                   facecolor=colour if in_tier else "white", edgecolor=colour, linewidth=1.2)
        if front[i]:
            ax.scatter(x[i], y[i], s=110, zorder=2, facecolor="none", edgecolor="#444444", linewidth=0.6)
    ax.set_xlabel("AUROC (clean, 100% labels, mean over tasks)")
    ax.set_ylabel("CRS")
    ax.grid(linewidth=0.3, alpha=0.5)
    handles, labels = encoder_handles(data.encoders, palette, marker="o")
    for h in handles:
        h.set_linestyle("none")
    handles += [
        Line2D([], [], marker="o", linestyle="none", color="#333333", markerfacecolor="#333333", markersize=5),
        Line2D([], [], marker="o", linestyle="none", color="#333333", markerfacecolor="white", markersize=4),
        Line2D([], [], color="#444444", linestyle=":", marker="o", markerfacecolor="none", markersize=8),
    ]
    labels += ["leading tier (filled)", "not in tier (open)", "Pareto front (ringed)"]
    legend_below(fig, handles, labels, ncol=2)
    return fig


def rank_shift(data: ReportData) -> Drawn:
    """Slope chart from the AUROC rank to the CRS rank; pairs the two orders reverse drawn solid and bold."""
    report, palette = data.report, data.palette
    shift = evidence.rank_shift(report)
    if len(shift) < 2:
        return Absent("fewer than two ranked encoders (floor baselines are left out of the rankings, and the "
                      "discrimination axis must be present): no ranking to compare")
    n = len(shift)
    fig = figure(0.6 + 0.28 * max(n, 3))
    ax = fig.subplots()
    for encoder, row in shift.iterrows():
        bold = bool(row["reversed"])
        ax.plot([0, 1], [row["auroc_rank"], row["crs_rank"]], color=palette.colour(encoder),
                linestyle="-" if bold else (0, (2, 2)), linewidth=2.0 if bold else 0.9, marker="o",
                markersize=3.5, alpha=1.0 if bold else 0.7)
    for side, column, ha, pad in ((0, "auroc_rank", "right", -0.04), (1, "crs_rank", "left", 0.04)):
        for rank, group in shift.groupby(column):
            names = ", ".join(label(e, 16) for e in group.index)
            weight = "bold" if group["reversed"].any() else "normal"
            ax.text(side + pad, rank, f"{int(rank)}. {names}" if side == 1 else f"{names} {int(rank)}.",
                    ha=ha, va="center", fontsize=6.3, fontweight=weight)
    ax.set_xlim(-1.0, 2.0)
    ax.set_ylim(n + 0.6, 0.4)
    ax.set_xticks([0, 1], ["AUROC rank", "CRS rank"])
    ax.set_yticks([])
    for spine in ("left", "bottom"):
        ax.spines[spine].set_visible(False)
    ax.tick_params(axis="x", length=0)
    ax.xaxis.tick_top()
    n_rev = len(report.agreement.reversed_pairs)
    baselines = " (floor baselines left out)" if report.baselines else ""
    ax.set_title(f"{n_rev} reversed pair(s), bold{baselines}", fontsize=6.5, loc="center", pad=14)
    return fig


def rank_distribution(data: ReportData) -> Drawn:
    """P(rank = k) per encoder as a heat map; leading-tier encoders marked."""
    report = data.report
    probabilities, interval = evidence.rank_probabilities(report)
    if probabilities is None or probabilities.empty:
        return Absent("no bootstrap (n_boot = 0): no rank distribution")
    encoders = [e for e in data.encoders if e in probabilities.index]
    table = probabilities.loc[encoders]
    n = table.shape[1]
    fig = figure(0.8 + 0.26 * len(encoders), width=COLUMN_WIDTH)
    ax = fig.subplots()
    image = ax.imshow(table.to_numpy(dtype=float), cmap="Blues", vmin=0, vmax=1, aspect="auto")
    for i in range(len(encoders)):
        for k in range(n):
            value = float(table.iloc[i, k])
            if value >= 0.005:
                ax.text(k, i, f"{value:.2f}", ha="center", va="center", fontsize=5.8,
                        color="white" if value > 0.6 else "#111111")
    tier = set(report.tier.members)
    ax.set_yticks(range(len(encoders)), [("\u2605 " if e in tier else "") + label(e) for e in encoders])
    ax.set_xticks(range(n), [str(k + 1) for k in range(n)])
    ax.set_xlabel("CRS rank k")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    colourbar = fig.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
    colourbar.set_label("P(rank = k)")
    colourbar.ax.tick_params(labelsize=6)
    ax.set_title("\u2605 leading tier", fontsize=6.3, loc="left")
    return fig


def weight_sensitivity(data: ReportData) -> Drawn:
    """How often each encoder is top when the axis weights are drawn instead of equal."""
    sensitivity = data.report.point.weight_sensitivity
    if sensitivity is None or sensitivity.empty:
        return Absent("weight sensitivity not computed (n_weight_draws = 0)")
    encoders = [e for e in data.encoders if e in sensitivity.index]
    fig = figure(0.55 + 0.24 * len(encoders))
    ax = fig.subplots()
    shares = sensitivity.loc[encoders, "p_top"].to_numpy(dtype=float)
    y = np.arange(len(encoders))
    ax.barh(y, shares, color=[data.palette.colour(e) for e in encoders], height=0.6)
    for yi, encoder, share in zip(y, encoders, shares):
        row = sensitivity.loc[encoder]
        low, high = row["rank_p05"], row["rank_p95"]
        ranks = f"rank {low:.0f}" if low == high else f"ranks {low:.0f}\u2013{high:.0f}"
        ax.text(min(share, 1.0) + 0.01, yi, f"{share:.0%}  ({ranks})", va="center", fontsize=6)
    ax.set_yticks(y, [label(e) for e in encoders])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.35)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0", "25%", "50%", "75%", "100%"])
    ax.set_xlabel("share of draws with the encoder top")
    ax.tick_params(axis="y", length=0)
    return fig


# --------------------------------------------------------------------------- per-task figures


def _fraction_ticks(ax, fractions) -> None:
    ax.set_xscale("log")
    ax.set_xticks(fractions, [f"{f:.0%}" if f >= 0.01 else f"{f:.1%}" for f in fractions])
    ax.minorticks_off()


def label_efficiency(data: ReportData, task: str) -> Drawn:
    curves = data.label_curves[data.label_curves["task"] == task]
    if curves["fraction"].nunique() < 2:
        return Absent(f"task {task!r} has clean records at one label fraction only: no curve")
    fig = figure(2.5)
    ax = fig.subplots()
    encoders = [e for e in data.encoders if e in set(curves["encoder"])]
    for encoder in encoders:
        c = curves[curves["encoder"] == encoder].sort_values("fraction")
        colour = data.palette.colour(encoder)
        ax.plot(c["fraction"], c["mean"], color=colour, linestyle=data.palette.style(encoder), marker="o", markersize=2.5)
        if (c["n_seeds"] > 1).any():
            ax.fill_between(c["fraction"], c["min"], c["max"], color=colour, alpha=0.18, linewidth=0)
    _fraction_ticks(ax, sorted(curves["fraction"].unique()))
    ax.axhline(0.5, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_xlabel("label fraction (log scale)")
    ax.set_ylabel("AUROC (clean test)")
    ax.grid(linewidth=0.3, alpha=0.5)
    legend_below(fig, *encoder_handles(encoders, data.palette))
    return fig


def robustness(data: ReportData, task: str) -> Drawn:
    curves = data.robustness_curves[data.robustness_curves["task"] == task]
    drops = data.shift_drops[data.shift_drops["task"] == task]
    families = list(dict.fromkeys(curves["condition"]))
    shifts = list(dict.fromkeys(drops["condition"]))
    panels = len(families) + len(shifts)
    if panels == 0:
        return Absent(f"task {task!r} has no perturbation or shift records")
    ncols = 2 if panels > 1 else 1
    nrows = int(np.ceil(panels / ncols))
    fig = figure(0.75 + 1.45 * nrows)
    axs = fig.subplots(nrows, ncols, squeeze=False).ravel()
    encoders = [e for e in data.encoders if e in set(curves["encoder"]) | set(drops["encoder"])]
    perturbed_axes = []
    for ax, family in zip(axs, families):
        c = curves[curves["condition"] == family]
        for encoder in encoders:
            e = c[c["encoder"] == encoder].sort_values("severity")
            if e.empty:
                continue
            colour = data.palette.colour(encoder)
            ax.plot(e["severity"], e["mean"], color=colour, linestyle=data.palette.style(encoder), marker="o",
                    markersize=2.5)
            if (e["n_seeds"] > 1).any():
                ax.fill_between(e["severity"], e["min"], e["max"], color=colour, alpha=0.18, linewidth=0)
        ax.set_title(label(family, 28), loc="left")
        ax.set_xticks(sorted(c["severity"].unique()))
        ax.set_xlabel("severity (0 = clean)")
        ax.set_ylabel("AUROC")
        ax.grid(linewidth=0.3, alpha=0.5)
        perturbed_axes.append(ax)
    if perturbed_axes:
        low = min(a.get_ylim()[0] for a in perturbed_axes)
        high = max(a.get_ylim()[1] for a in perturbed_axes)
        for a in perturbed_axes:
            a.set_ylim(low, high)
    for ax, shift in zip(axs[len(families):], shifts):
        d = drops[drops["condition"] == shift].set_index("encoder").reindex([e for e in encoders if e in set(drops["encoder"])])
        y = np.arange(len(d))
        ax.barh(y, d["mean"], color=[data.palette.colour(e) for e in d.index], height=0.6)
        if (d["n_seeds"] > 1).any():
            ax.errorbar(d["mean"], y, xerr=[d["mean"] - d["min"], d["max"] - d["mean"]], fmt="none",
                        ecolor="#333333", elinewidth=0.7, capsize=1.5)
        ax.axvline(0, color="#333333", linewidth=0.6)
        ax.set_yticks(y, [label(e, 14) for e in d.index])
        ax.invert_yaxis()
        ax.set_title(label(shift, 28), loc="left")
        ax.set_xlabel("AUROC drop (clean \u2212 shifted)")
        ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    for ax in axs[panels:]:
        ax.set_visible(False)
    legend_below(fig, *encoder_handles(encoders, data.palette))
    return fig


def reliability(data: ReportData, task: str) -> Drawn:
    """Reliability diagrams of the task's leading encoders, from stored per-case predictions."""
    if data.predictions is None:
        return Absent(data.predictions_missing)
    encoders = data.reliability_encoders(task)
    curves = {e: data.reliability_curve(task, e) for e in encoders}
    curves = {e: c for e, c in curves.items() if c is not None}
    if not curves:
        return Absent(f"no stored predictions for the leading encoders of task {task!r} (clean test, 100% labels)")
    fig = figure(3.6)
    ax, below = fig.subplots(2, 1, height_ratios=[3, 1.1], sharex=True)
    ax.plot([0, 1], [0, 1], color="#999999", linewidth=0.7, linestyle=":")
    width = 0.1 / max(len(curves), 1)
    for i, (encoder, curve) in enumerate(curves.items()):
        colour = data.palette.colour(encoder)
        ax.plot(curve["confidence"], curve["accuracy"], color=colour, linestyle=data.palette.style(encoder),
                marker="o", markersize=2.5)
        # cases per bin, so a point resting on three cases reads as such
        left = np.floor(curve["confidence"].to_numpy() * 10).clip(0, 9) / 10
        below.bar(left + width * (i + 0.5), curve["count"], width=width, color=colour)
        for x, n in zip(left + width * (i + 0.5), curve["count"]):
            below.text(x, n, str(int(n)), ha="center", va="bottom", fontsize=4.5)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("observed frequency")
    ax.grid(linewidth=0.3, alpha=0.5)
    below.set_ylabel("cases\n(seeds pooled)")
    below.set_xlabel("predicted probability (bin mean)")
    below.grid(axis="y", linewidth=0.3, alpha=0.5)
    legend_below(fig, *encoder_handles(list(curves), data.palette), ncol=1)
    return fig


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class PlannedFigure:
    name: str  # file stem: ASCII, unique in the report
    title: str
    caption: str
    draw: Callable[[], Drawn]
    task: str | None = None


def _seeds(data: ReportData) -> str:
    n = data.report.settings.n_seeds
    return f"{n} seed{'s' if n != 1 else ''}"


def _list(values) -> str:
    return ", ".join(map(str, values)) or "none"


def caption_label_efficiency(data: ReportData, task: str) -> str:
    curves = data.label_curves[data.label_curves["task"] == task]
    fractions = ", ".join(f"{f:g}" for f in sorted(curves["fraction"].unique()))
    return (f"AUROC on the clean test against the share of training labels ({fractions}; log scale); line: mean "
            f"of {_seeds(data)}, band: seed minimum to maximum.")


def caption_robustness(data: ReportData, task: str) -> str:
    curves = data.robustness_curves[data.robustness_curves["task"] == task]
    drops = data.shift_drops[data.shift_drops["task"] == task]
    parts = []
    if len(curves):
        severities = sorted(int(v) for v in curves["severity"].unique() if v > 0)
        parts.append(f"AUROC against severity at 100% labels for the perturbations run "
                     f"({_list(dict.fromkeys(curves['condition']))}; severities {_list(severities)}; 0 is the clean "
                     "test), one panel each")
    else:
        parts.append("no perturbation was run")
    if len(drops):
        parts.append(f"bar panels: AUROC lost on the shift set(s) {_list(dict.fromkeys(drops['condition']))}, "
                     "whiskers: seed range")
    return "; ".join(parts) + "."


def caption_reliability(data: ReportData, task: str) -> str:
    return (f"Observed frequency against predicted probability (10 equal-width bins, {_seeds(data)} pooled, clean "
            "test, 100% labels) for the task's leading encoders; the dotted diagonal is perfect calibration; lower "
            "panel: cases in each bin.")


def caption_rank_distribution(data: ReportData, task=None) -> str:
    report = data.report
    return (f"P(rank = k) over {report.settings.n_boot} draws of the "
            f"{report.intervals.label or 'bootstrap'}; \u2605 marks the leading tier.")


def caption_forest(data: ReportData, task=None) -> str:
    report = data.report
    ran = len(report.intervals.axis_intervals) > 0
    level = f"{report.settings.level:.0%}"
    bars = (f"bars: the {level} paired case-level interval of the difference (both encoders on the same "
            "bootstrap draws)" if ran else "no per-axis interval: the paired case bootstrap did not run")
    return (f"Cross-task value of each axis and the CRS per encoder, minus the reference's ({report.reference}); "
            f"dashed: 0, the reference; {bars}.")


CROSS_TASK: tuple[tuple[str, str, object, Callable], ...] = (
    ("axis_profile", "Axis profiles against the reference",
     "Each encoder's four axes minus the reference's, in skill u = (value - no-value level) / span to perfect; "
     "bars right of 0 beat the reference.", axis_profile),
    ("forest", "Each axis against the reference", caption_forest, None),
    ("auroc_vs_crs", "AUROC against CRS",
     "Cross-task AUROC against CRS; vertical bars: CRS interval; ringed: the Pareto front (no encoder better on "
     "both); filled: the leading tier.", auroc_vs_crs),
    ("pareto_front", "The Pareto front of the four skills", lambda data, task=None: _front_caption(data), None),
    ("rank_shift", "From the AUROC ranking to the CRS ranking",
     "Each line joins an encoder's AUROC rank to its CRS rank; bold solid lines are encoders in a pair the two "
     "rankings order differently.", rank_shift),
    ("rank_distribution", "Bootstrap distribution of the CRS rank", caption_rank_distribution, rank_distribution),
    ("weight_sensitivity", "Weight sensitivity",
     "How often each encoder is top when the axis weights are drawn (Dirichlet) instead of equal; in "
     "brackets its 5-95% rank range.", weight_sensitivity),
    ("encoder_task", "CRS per encoder and task",
     "The CRS of each encoder on each task (the reference is 0 on every task); blue above the reference, red "
     "below.", None),
    ("encoder_perturbation", "AUROC lost per encoder and perturbation",
     "Mean AUROC drop (clean minus perturbed) at 100% labels per perturbation run, over its severities, the "
     "seeds and the tasks; red: AUROC lost, blue: AUROC gained.", None),
    ("score_cost", "Score against cost per image",
     "Skill against the measured embedding cost per image (log scale).", None),
)

PER_TASK: tuple[tuple[str, str, object, Callable], ...] = (
    ("label_efficiency", "Label efficiency", caption_label_efficiency, label_efficiency),
    ("robustness", "Robustness", caption_robustness, robustness),
    ("reliability", "Reliability diagrams", caption_reliability, reliability),
    ("per_class_auroc", "Per-class AUROC",
     "One-vs-rest AUROC per class on the clean test at 100% labels (seed mean); n: test cases of the class.", None),
    ("subgroups", "AUROC per patient subgroup", lambda data, task=None: _subgroup_caption(data, task), None),
)


def _subgroup_caption(data: ReportData, task=None) -> str:
    from crsbench.report.figures_subgroups import caption_subgroups

    return caption_subgroups(data, task)


def _front_caption(data: ReportData) -> str:
    tolerance = data.report.settings.components.get("tolerance", 0)
    return ("Each encoder's skills on two pairs of axes (0 = no value, 1 = perfect). Ringed: on the Pareto front of "
            f"all four axes: no encoder is nowhere worse by more than the tolerance ({tolerance:g} skill units) and "
            "somewhere better by more. Beside each point: its bootstrap probability of being on the front.")


def _caption(caption, data: ReportData, task=None) -> str:
    return caption(data, task) if callable(caption) else str(caption)


def slug(text: str) -> str:
    kept = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in str(text))
    return kept.strip("-")[:32] or "task"


def plan(data: ReportData, more: dict[str, Callable] | None = None) -> list[PlannedFigure]:
    """Every figure of the report in reading order: cross-task first, then each figure kind per task.
    Captions are generated from what ran. `more`: the builders of the entries without one here, by name
    (figures_more.BUILDERS; passed in, since that module draws with this one's helpers)."""
    more = more or {}
    planned = [PlannedFigure(name, title, _caption(caption, data), (lambda build=build or more[name]: build(data)))
               for name, title, caption, build in CROSS_TASK]
    for name, title, caption, build in PER_TASK:
        for i, task in enumerate(data.tasks, start=1):
            planned.append(PlannedFigure(f"{name}_{i}_{slug(task)}", f"{title}: task {task}",
                                         _caption(caption, data, task),
                                         (lambda build=build or more[name], task=task: build(data, task)), task=task))
    return planned


def render(planned: PlannedFigure) -> Drawn:
    with matplotlib.rc_context(STYLE):
        return planned.draw()
