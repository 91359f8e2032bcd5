"""The recommendation in plain words, from a scored result (pure: a ScoreReport in, sentences out).

Each sentence carries the numbers it rests on. When the leading tier holds more than one encoder it
says so and estimates what would separate them, from the measured bootstrap standard errors: a
standard error shrinks about as 1/sqrt(n) with n independent test cases (patients when grouped), and
its seed part as 1/sqrt(seeds). The tier drops an encoder when its CRS difference to the top exceeds
q standard errors (q: the simultaneous critical value the tier used), so separating needs the error
below difference / q.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

AXIS_WORDS = {"discrimination": "AUROC", "calibration": "Brier skill", "label_efficiency": "label efficiency",
              "robustness": "robustness"}
# what a label-efficiency or robustness value is, for the sentence that compares them
AXIS_MEANING = {
    "label_efficiency": "AUROC averaged over the label fractions",
    "robustness": "AUROC under perturbation and shift",
}
MAX_FACTOR = 100.0  # beyond this many times the data, "more data" is not a useful answer
RATIO_WORDS = {2: "twice", 3: "three times", 4: "four times"}


# below this many independent test units the tier is optimistic: by simulation it held the true best 91% of
# the time at 60 cases and 94% at 150, against the stated 95% (docs/bootstrap.md)
SMALL_TEST_SET = 100


@dataclass(frozen=True)
class Evidence:
    """What the advice needs besides the scored report."""

    n_test: int  # independent test units (patients when grouped, else images)
    n_seeds: int
    unit: str = "test images"
    seed_se: Mapping[str, float] | None = None  # seed-only bootstrap standard error of the difference to the top
    seconds_per_image: Mapping[str, float] | None = None  # measured embedding cost per encoder
    n_test_images: int | None = None  # test images (the calibration error is over images), when not n_test


def _ratio_words(ratio: float) -> str:
    rounded = round(ratio)
    if rounded in RATIO_WORDS and abs(ratio - rounded) < 0.15:
        return RATIO_WORDS[rounded]
    return f"{ratio:.1f} times"


def calibration_error(row) -> float:
    """The records' ECE, shown beside the calibration axis (which is the Brier skill, not 1 - ECE)."""
    return float(row.get("ece", math.nan))


def _axis_gap(axis: str, better, worse) -> str:
    """How `worse` falls short of `better` on one axis, in words with both numbers."""
    if axis == "calibration":
        e_worse, e_better = calibration_error(worse), calibration_error(better)
        ece = f"; ECE {e_worse:.3f} vs {e_better:.3f}" if math.isfinite(e_worse) and math.isfinite(e_better) else ""
        return f"a lower Brier skill ({float(worse[axis]):.3f} vs {float(better[axis]):.3f}{ece})"
    if axis == "discrimination":
        return f"a lower AUROC ({float(worse[axis]):.3f} vs {float(better[axis]):.3f})"
    return (f"lower {AXIS_WORDS[axis]} ({float(worse[axis]):.3f} vs {float(better[axis]):.3f} "
            f"{AXIS_MEANING[axis]})")


def _scaled(scores: pd.DataFrame, axes, anchors: Mapping[str, float], scales: Mapping[str, float]) -> pd.DataFrame:
    """u = (s - L) / m, the skill the CRS reads, so axes compare with one another."""
    return pd.DataFrame({a: (scores[a].astype(float) - anchors.get(a, 0.0)) / scales.get(a, 1.0) for a in axes},
                        index=scores.index)


def critical_value(tier: pd.DataFrame) -> float:
    """q the tier used: diff_low = diff - q * se for every encoder with spread."""
    if tier.empty or "se" not in tier:
        return math.nan
    spread = tier[(tier["se"] > 0) & (tier["diff"] > 0)]
    if spread.empty:
        return math.nan
    return float(np.median((spread["diff"] - spread["diff_low"]) / spread["se"]))


def standard_errors(tier: pd.DataFrame, level: float = 0.95) -> dict[str, float] | None:
    """Standard error of each encoder's CRS difference to the top: the tier's own `se`, or, from a
    tier that gives only a percentile interval of the difference, its width over 2 z (normal approximation)."""
    if tier is None or tier.empty:
        return None
    if "se" in tier:
        return {str(e): float(v) for e, v in tier["se"].items()}
    if {"diff_low", "diff_high"} <= set(tier.columns):
        from scipy.stats import norm

        z = float(norm.ppf(0.5 + level / 2))
        return {str(e): float(h - l) / (2 * z) for e, l, h in zip(tier.index, tier["diff_low"], tier["diff_high"])}
    return None


def separation_sentence(top: str, other: str, diff: float, se: float, q: float, evidence: Evidence) -> str:
    """What more data would separate `other` from `top`, from the measured standard error."""
    if not (diff > 1e-9) or not math.isfinite(q) or not se > 0:
        return (f"{top} and {other} score the same (CRS difference {diff:.2f}): more data would not separate "
                "them; choose on cost or convenience.")
    target = diff / q
    factor = (se / target) ** 2
    head = (f"Separating {other} from {top} (CRS difference {diff:.2f}, bootstrap standard error {se:.2f}) needs "
            f"the error below {target:.2f}")
    if factor > MAX_FACTOR:
        return (f"{head}: more than {MAX_FACTOR:.0f} times the {evidence.unit}; in practice they perform alike "
                "on this cohort.")
    cases = f"about {factor:.1f} times the {evidence.unit} (~{math.ceil(factor * evidence.n_test):,} instead of " \
            f"{evidence.n_test:,})"
    seed_se = (evidence.seed_se or {}).get(other)
    if seed_se is None or not math.isfinite(seed_se):
        return f"{head}: {cases}, or more seeds."
    seed_var = min(seed_se ** 2, se ** 2)
    case_var = se ** 2 - seed_var
    if case_var >= target ** 2 or seed_var <= 0:
        return f"{head}: {cases}; more seeds alone cannot, the test set's share of the error is already above it."
    seeds = math.ceil(evidence.n_seeds * seed_var / (target ** 2 - case_var))
    return f"{head}: {cases}, or about {seeds} seeds instead of {evidence.n_seeds} on the same test set."


def recommendation(report, evidence: Evidence) -> list[str]:
    """Sentences in reading order: the choice and why, what higher-AUROC alternatives lose, and when the
    data cannot separate the leading encoders, what would."""
    scores = report.scores
    if scores.empty:
        return ["No encoder could be scored."]
    tier = list(report.leading_tier)
    if not tier:
        return [f"{scores.index[0]} has the highest CRS ({float(scores.iloc[0]['crs']):.2f}); no bootstrap was run, "
                "so there is no leading tier to recommend from."]
    axes = [a for a in report.axes_used if a in scores]
    scaled = _scaled(scores, axes, report.settings.get("anchors") or {}, report.settings.get("scales") or {})
    top = str(scores.index[0])
    row = scores.loc[top]
    sentences = []
    if len(tier) == 1:
        sentences.append(f"Recommendation: {top}, alone in the leading tier ({_crs_words(top, row, report)}).")
        sentences += _how_separated(top, scores, report, evidence)
    else:
        others = ", ".join(e for e in tier if e != top)
        sentences.append(f"The data cannot separate {', '.join(tier)}: all are in the leading tier. {top} has the "
                         f"highest CRS ({_crs_words(top, row, report)}), but {others} may be as good.")
    sentences.append(_why(top, scaled, scores, evidence))
    sentences += _higher_auroc(top, scores, scaled, axes)
    if len(tier) > 1:
        sentences += _what_would_separate(top, tier, report, evidence)
    return sentences


def _how_separated(top: str, scores: pd.DataFrame, report, evidence: Evidence) -> list[str]:
    """How firmly a lone leader is ahead of the runner-up: the tier's one-sided simultaneous bound on the
    CRS difference, and, on a small test set, the tier's measured coverage there. The share of bootstrap
    draws in which it stays ahead is not quoted: draws of a difference are pulled towards 0, and a tier
    read from them kept the true best in 0.997-1.0 of simulations but separated almost nothing
    (docs/bootstrap.md)."""
    if len(scores) < 2:
        return []
    runner = str(scores.index[1])
    table = getattr(report, "leading_tier_table", None)
    sentences = []
    if table is not None and runner in getattr(table, "index", ()) and {"diff", "diff_low"} <= set(table.columns):
        sentences.append(
            f"Separation from the runner-up {runner}: CRS difference {float(table.loc[runner, 'diff']):.2f}, at least "
            f"{float(table.loc[runner, 'diff_low']):.2f} at the tier's one-sided 95% bound (simultaneous over every "
            "rival; the two-sided interval above may still reach 0)."
        )
    if evidence.n_test < SMALL_TEST_SET:
        sentences.append(f"With {evidence.n_test:,} {evidence.unit} the tier's stated 95% is nearer 90% (measured by "
                         "simulation); more test cases would firm this up.")
    return sentences


def _crs_words(encoder: str, row, report) -> str:
    if encoder == report.reference:
        return "CRS 0, the reference"
    interval = "" if pd.isna(row.get("ci_low", math.nan)) else f", interval [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    return f"CRS {float(row['crs']):+.2f} against {report.reference}{interval}"


def axis_value_words(axis: str, row, evidence: Evidence | None = None) -> str:
    """One axis of one encoder as a reader knows it, in the axis's own units."""
    if axis == "calibration":
        error = calibration_error(row)
        ece = f" (ECE {error:.3f})" if math.isfinite(error) else ""
        return f"Brier skill {float(row[axis]):.3f}{ece}"
    if axis == "discrimination":
        return f"AUROC {float(row[axis]):.3f}"
    return f"{AXIS_WORDS[axis]} {float(row[axis]):.3f} ({AXIS_MEANING[axis]})"


def _why(top: str, scaled: pd.DataFrame, scores: pd.DataFrame, evidence: Evidence) -> str:
    """Where the choice is weakest, in the skill the CRS reads, and whether others are weaker still."""
    if scaled.empty:
        return ""
    weakest = scaled.loc[top].idxmin()
    worst = scaled.min(axis=1)
    best_worst = bool(worst.loc[top] >= worst.max() - 1e-12) and len(scaled) > 1
    lead = "the best worst axis of all encoders" if best_worst else "not the best worst axis"
    others = [axis_value_words(a, scores.loc[top], evidence) for a in scaled.columns if a != weakest]
    weakest_words = axis_value_words(weakest, scores.loc[top], evidence)
    return (f"{top}: {lead}, its weakest being {AXIS_WORDS[weakest]} ({weakest_words}); "
            f"{', '.join(others)}.")


def _higher_auroc(top: str, scores: pd.DataFrame, scaled: pd.DataFrame, axes) -> list[str]:
    if "discrimination" not in scores:
        return []
    top_auroc = float(scores.loc[top, "discrimination"])
    out = []
    for encoder, row in scores[scores["discrimination"] > top_auroc].iterrows():
        shortfall = (scaled.loc[top] - scaled.loc[encoder]).drop("discrimination", errors="ignore")
        if shortfall.empty or shortfall.max() <= 0:
            continue
        axis = shortfall.idxmax()
        out.append(f"{encoder} has {float(row['discrimination']) - top_auroc:.3f} higher AUROC but "
                   f"{_axis_gap(axis, scores.loc[top], row)}, and a lower CRS ({float(row['crs']):.2f} vs "
                   f"{float(scores.loc[top, 'crs']):.2f}).")
    return out


def _what_would_separate(top: str, tier: list[str], report, evidence: Evidence) -> list[str]:
    table = report.leading_tier_table
    q = critical_value(table)
    out = [separation_sentence(top, e, float(table.loc[e, "diff"]), float(table.loc[e, "se"]), q, evidence)
           for e in tier if e != top and e in table.index]
    costs = evidence.seconds_per_image or {}
    priced = {e: costs[e] for e in tier if e in costs}
    if len(priced) > 1:
        cheapest = min(priced, key=priced.get)
        out.append(f"Until then any of them is defensible; the cheapest to run is {cheapest} "
                   f"({priced[cheapest] * 1000:.1f} ms per image, measured).")
    return out
