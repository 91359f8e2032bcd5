"""How every figure of the report looks and names things: a paper's column width, one colour and line
style per encoder (Okabe-Ito, colour-blind safe; floor baselines in grey, dashed), the matplotlib style,
and encoder names as figure text (`label`: never read as mathtext, shortened through a key the caption
spells out). The figure modules and the report's data read it; it reads neither.
"""

from __future__ import annotations

import contextlib
import contextvars
import textwrap
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from crsbench.core.printable import printable

COLUMN_WIDTH = 3.5  # inches: one column of a two-column paper
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7", "#000000", "#F0E442")
BASELINE_GREYS: tuple[str, ...] = ("#7F7F7F", "#B0B0B0", "#505050")
LINE_STYLES: tuple[str, ...] = ("-", "--", ":", "-.")
BASELINE_STYLES: tuple[str, ...] = ("--", ":", "-.")  # greys alone are hard to tell apart
AXIS_LABELS: dict[str, str] = {
    "discrimination": "discrimination",
    "calibration": "calibration (Brier skill)",
    "label_efficiency": "label efficiency",
    "robustness": "robustness",
    "worst_subgroup": "worst subgroup",  # the optional subgroup axis
}
STYLE: dict[str, object] = {
    "font.size": 7,
    "axes.titlesize": 7.5,
    "axes.labelsize": 7,
    "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5,
    "legend.fontsize": 6.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "svg.fonttype": "path",  # the SVG renders the same everywhere, with no font to fetch
    "figure.dpi": 100,
}
PNG_DPI = 220


@dataclass(frozen=True)
class Absent:
    """A figure that cannot be drawn from these results, and why."""

    reason: str


Drawn = Figure | Absent


NAME_WIDTH = 22  # characters of an encoder name a figure shows on one line
_KEY: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("encoder_key", default={})


def name_key(encoders, width: int = NAME_WIDTH) -> dict[str, str]:
    """Short forms for the encoder names too long for a figure: "[k] prefix..." with k the key's number,
    so names that share a long prefix stay apart; the caption spells each in full (key_text)."""
    long = [printable(e) for e in encoders if len(printable(e)) > width]
    return {name: f"[{k}] {name[: width - 6]}\u2026" for k, name in enumerate(long, start=1)}


def key_text(key: dict[str, str]) -> str:
    return "; ".join(f"{short.split(' ', 1)[0]} = {name}" for name, short in key.items())


@contextlib.contextmanager
def keyed(key: dict[str, str]):
    """Figures drawn inside use `key`'s short forms for the encoders it names."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def label(name: object, width: int = NAME_WIDTH) -> str:
    """A user string as matplotlib text: dollar signs literal (no mathtext). An encoder with a key entry
    shows its short form (the caption spells it out); any other long string wraps onto more lines.
    Nothing is cut without a key."""
    text = printable(name)  # a control character would make the SVG invalid XML
    short = _KEY.get().get(text)
    if short is not None:
        text = short
    elif len(text) > width:
        # break after an underscore before splitting a word: "brightness_down" -> "brightness_" / "down"
        lines = textwrap.wrap(text.replace("_", "_\u2060 "), width, break_long_words=True, break_on_hyphens=True)
        text = "\n".join(line.replace("_\u2060 ", "_").replace("\u2060", "") for line in lines)
    return text.replace("\\", "\\\\").replace("$", r"\$")


@dataclass(frozen=True)
class Palette:
    """One colour and line style per encoder, the same in every figure of a report."""

    colours: dict[str, str]
    styles: dict[str, str]

    @classmethod
    def of(cls, encoders: list[str], baselines: tuple[str, ...] = ()) -> "Palette":
        colours, styles = {}, {}
        models = [e for e in encoders if e not in baselines]
        for i, encoder in enumerate(models):
            colours[encoder] = OKABE_ITO[i % len(OKABE_ITO)]
            styles[encoder] = LINE_STYLES[(i // len(OKABE_ITO)) % len(LINE_STYLES)]
        for i, encoder in enumerate(e for e in encoders if e in baselines):
            colours[encoder] = BASELINE_GREYS[i % len(BASELINE_GREYS)]
            styles[encoder] = BASELINE_STYLES[i % len(BASELINE_STYLES)]
        return cls(colours, styles)

    def colour(self, encoder: str) -> str:
        return self.colours.get(encoder, "#333333")

    def style(self, encoder: str) -> str:
        return self.styles.get(encoder, "-")


def figure(height: float, width: float = COLUMN_WIDTH) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def legend_below(fig: Figure, handles, labels, ncol: int = 2) -> None:
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, handlelength=1.8,
               columnspacing=1.0)


def encoder_handles(encoders: list[str], palette: Palette, marker: str | None = None):
    handles = [Line2D([], [], color=palette.colour(e), linestyle=palette.style(e), marker=marker, markersize=4)
               for e in encoders]
    return handles, [label(e) for e in encoders]
