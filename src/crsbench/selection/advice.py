"""The recommendation in plain words, from a scored result (pure: a ScoreReport in, sentences out).

Every number a sentence quotes is a field of the score value (its tables, `axis_evidence`,
`class_counts`) or of `separation_table`, which this module derives from the tier's interval and
returns as a table beside the sentences; tests/report/test_prose_numbers.py parses the numbers back out of
the sentences and checks each against its field.

Sample size. The tier keeps an encoder while the one-sided simultaneous bound of its CRS difference
to the top, `diff_low = diff - h`, reaches 0. The margin h shrinks about as 1/sqrt(n) with n
independent test units (patients when grouped), so with q = h / se (the tier's critical value) a new
test set of n' units separates the pair with probability about Phi(diff / se' - q), se' = se sqrt(n / n'),
if the difference is as measured. The advice quotes n' for a stated chance (SEPARATION_POWER), and the
n' at which the bound would just touch 0 on a test set like this one (half the time). Checked by
simulation in tests/selection/test_sample_size_advice.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

import pandas as pd
from scipy.stats import norm

from crsbench.scoring.axis_evidence import thin_axes
from crsbench.scoring.gap_variance import gap_sentence
from crsbench.report.claims import (
    AXIS_WORDS, floor_sentences, small_class_sentences, target_line, thin_sentences, tier_against_p_rank1)

if TYPE_CHECKING:  # annotations only: the advice reads the scored value
    from crsbench.scoring.score_report import ScoreReport

# what a label-efficiency or robustness value is, for the sentence that compares them
AXIS_MEANING = {
    "label_efficiency": "AUROC averaged over the label fractions",
    "robustness": "AUROC under perturbation and shift",
}
MAX_FACTOR = 100.0  # beyond this many times the data, "more data" is not a useful answer
SEPARATION_POWER = 0.8  # the chance of separation the sample-size advice is stated for

# below this many independent test units the tier is optimistic: by simulation it held the true best 91% of
# the time at 60 cases and 94% at 150, against the stated 95% (docs/bootstrap.md)
SMALL_TEST_SET = 100

SEPARATION_COLUMNS = ("encoder", "diff", "diff_low", "se", "q", "n_test", "n_half", "n_power", "factor_power",
                      "seeds_power", "power")


@dataclass(frozen=True)
class Evidence:
    """What the advice needs besides the scored report."""

    n_test: int  # independent test units (patients when grouped, else images)
    n_seeds: int
    unit: str = "test images"
    seed_se: Mapping[str, float] | None = None  # seed-only bootstrap standard error of the difference to the top
    seconds_per_image: Mapping[str, float] | None = None  # measured embedding cost per encoder
    n_test_images: int | None = None  # test images (the calibration error is over images), when not n_test
    class_names: tuple[str, ...] | None = None  # the classes' names, for the warning on small classes


def calibration_error(row) -> float:
    """The records' ECE, shown beside the calibration axis (which is the Brier skill, not 1 - ECE)."""
    return float(row.get("ece", math.nan))


def _axis_gap(axis: str, better, worse, meaning: Mapping[str, str] | None = None) -> str:
    """How `worse` falls short of `better` on one axis, in words with both numbers; `meaning` says what a
    label-efficiency or robustness value is on this cohort (robustness_meaning)."""
    if axis == "calibration":
        e_worse, e_better = calibration_error(worse), calibration_error(better)
        ece = f"; ECE {e_worse:.3f} vs {e_better:.3f}" if math.isfinite(e_worse) and math.isfinite(e_better) else ""
        return f"a lower Brier skill ({float(worse[axis]):.3f} vs {float(better[axis]):.3f}{ece})"
    if axis == "discrimination":
        return f"a lower AUROC ({float(worse[axis]):.3f} vs {float(better[axis]):.3f})"
    return (f"lower {AXIS_WORDS[axis]} ({float(worse[axis]):.3f} vs {float(better[axis]):.3f} "
            f"{(meaning or AXIS_MEANING)[axis]})")


def _scaled(scores: pd.DataFrame, axes, anchors: Mapping[str, float], scales: Mapping[str, float]) -> pd.DataFrame:
    """u = (s - L) / m, the skill the CRS reads, so axes compare with one another."""
    return pd.DataFrame({a: (scores[a].astype(float) - anchors.get(a, 0.0)) / scales.get(a, 1.0) for a in axes},
                        index=scores.index)


def standard_errors(tier: pd.DataFrame) -> dict[str, float] | None:
    """Standard error of each encoder's CRS difference to the top: the tier table's own `se`
    (bootstrap_summary.TIER_COLUMNS, whichever bootstrap ran); None without a tier."""
    if tier.empty:
        return None
    return {str(e): float(v) for e, v in tier["se"].items()}


def units_needed(diff: float, se: float, q: float, n_test: int, power: float = SEPARATION_POWER) -> float:
    """Test units at which the tier's bound diff - q se' clears 0 with probability `power`, if the difference
    is as measured (se' = se sqrt(n_test / n')); inf when there is no difference."""
    if not (diff > 1e-9) or not se > 0 or not math.isfinite(q):
        return math.inf
    return n_test * (se * (q + float(norm.ppf(power))) / diff) ** 2


def separation_table(report: ScoreReport, evidence: Evidence, power: float = SEPARATION_POWER) -> pd.DataFrame:
    """Per encoder of the leading tier other than the top: what separating it from the top would take,
    derived from the tier's own bound (module docstring). n_half: units at which the bound touches 0 on a
    test set like this one; n_power: units for `power`; seeds_power: seeds instead, on this test set (NaN
    where more seeds alone cannot)."""
    table = report.tier.table
    tier = list(report.tier.members)
    rows = []
    if table.empty or len(tier) < 2:
        return pd.DataFrame(columns=list(SEPARATION_COLUMNS))
    ses = standard_errors(table) or {}
    top = str(report.point.scores.index[0])
    for encoder in tier:
        if encoder == top or encoder not in table.index:
            continue
        diff, low = float(table.loc[encoder, "diff"]), float(table.loc[encoder, "diff_low"])
        se = float(ses.get(encoder, math.nan))
        q = (diff - low) / se if se > 0 else math.nan
        n_half = evidence.n_test * ((diff - low) / diff) ** 2 if diff > 1e-9 else math.inf
        n_power = units_needed(diff, se, q, evidence.n_test, power)
        seeds = math.nan
        seed_se = (evidence.seed_se or {}).get(encoder)
        if seed_se is not None and math.isfinite(seed_se) and math.isfinite(n_power):
            target = diff / (q + float(norm.ppf(power)))
            seed_var = min(seed_se ** 2, se ** 2)
            case_var = se ** 2 - seed_var
            if seed_var > 0 and case_var < target ** 2:
                seeds = math.ceil(evidence.n_seeds * seed_var / (target ** 2 - case_var))
        rows.append({"encoder": encoder, "diff": diff, "diff_low": low, "se": se, "q": q, "n_test": evidence.n_test,
                     "n_half": math.ceil(n_half) if math.isfinite(n_half) else math.inf,
                     "n_power": math.ceil(n_power) if math.isfinite(n_power) else math.inf,
                     "factor_power": n_power / evidence.n_test if evidence.n_test else math.inf,
                     "seeds_power": seeds, "power": power})
    return pd.DataFrame(rows, columns=list(SEPARATION_COLUMNS)).set_index("encoder")


def separation_sentence(top: str, other: str, row, evidence: Evidence) -> str:
    """What more data would separate `other` from `top`: one row of separation_table."""
    diff, low = float(row["diff"]), float(row["diff_low"])
    if not (diff > 1e-9) or not math.isfinite(float(row["n_power"])):
        return (f"{top} and {other} score the same (CRS difference {diff:.2f}): more data would not separate "
                "them; choose on cost or convenience.")
    head = (f"Separating {other} from {top}: CRS difference {diff:.2f}, whose one-sided simultaneous bound "
            f"{low:.2f} still reaches 0")
    if float(row["factor_power"]) > MAX_FACTOR:
        return (f"{head}; it would take more than {MAX_FACTOR:.0f} times the {evidence.unit}: in practice they "
                "perform alike on this cohort.")
    power = float(row["power"])
    text = (f"{head}. If the difference is as measured, ~{int(row['n_power']):,} {evidence.unit} instead of "
            f"{evidence.n_test:,} would separate them in about {power:.0%} of new test sets (at "
            f"~{int(row['n_half']):,} the bound just touches 0, half the time)")
    seeds = row["seeds_power"]
    if evidence.seed_se is None or (other not in (evidence.seed_se or {})):
        return text + "."
    if pd.isna(seeds):
        return text + "; more seeds alone cannot: the test set's share of the error is too large."
    return text + f", or about {int(seeds)} seeds instead of {evidence.n_seeds} on the same test set."


def recommendation(report: ScoreReport, evidence: Evidence) -> list[str]:
    """Sentences in reading order: the choice and why, what higher-AUROC alternatives lose, a floor
    baseline the encoders did not beat, axes resting on too little, the tier against P(#1), and when the
    data cannot separate the leading encoders, what would."""
    scores = report.point.scores
    if scores.empty:
        return ["No encoder could be scored."]
    tier = list(report.tier.members)
    if not tier:
        return [f"{scores.index[0]} has the highest CRS ({float(scores.iloc[0]['crs']):.2f}); no bootstrap was run, "
                "so there is no leading tier to recommend from."]
    axes = [a for a in report.axes_used if a in scores]
    scaled = _scaled(scores, axes, report.settings.anchors, report.settings.scales)
    top = str(scores.index[0])
    row = scores.loc[top]
    thin = thin_axes(report.evidence.axis_evidence)
    sentences = []
    if len(tier) == 1:
        sentences.append(f"Recommendation: {top}, alone in the leading tier ({_crs_words(top, row, report)}).")
        sentences += _how_separated(top, scores, report, evidence)
    else:
        others = ", ".join(e for e in tier if e != top)
        sentences.append(f"The data cannot separate {', '.join(tier)}: all are in the leading tier. {top} has the "
                         f"highest CRS ({_crs_words(top, row, report)}), but {others} may be as good.")
    sentences += floor_sentences(report)
    meaning = {**AXIS_MEANING, "robustness": robustness_meaning(report)}
    sentences.append(_why(top, scaled, scores, thin, meaning))
    sentences += thin_sentences(thin)
    sentences += small_class_sentences(report, evidence.class_names)
    sentences += _higher_auroc(top, scores, scaled, axes, meaning)
    sentences += tier_against_p_rank1(report)
    sentences.append(target_line(report))
    sentences.append(gap_sentence(report.intervals.gap_variance))
    if len(tier) > 1:
        sentences += _what_would_separate(top, tier, report, evidence)
    sentences += subgroup_sentences(report)
    return [s for s in sentences if s]


def subgroup_sentences(report: ScoreReport) -> list[str]:
    """Each encoder's subgroup whose AUROC differs from the rest's with an interval that excludes 0, and what
    the subgroup intervals cover; nothing when the cohort names no attribute."""
    from crsbench.report.subgroup_view import difference_sentences

    if report.subgroups.table.empty:
        return []
    flagged = [f"{sentence}." for sentence in difference_sentences(report)]
    if flagged:  # the family the flags are read in, so a reader of many sentences knows how many to expect by chance
        return [*flagged, f"Subgroup {report.subgroups.target.removeprefix('subgroup ')}."]
    return [f"No encoder's AUROC in a subgroup differs from the rest's with an interval that excludes 0 "
            f"({report.subgroups.target})."]


def _how_separated(top: str, scores: pd.DataFrame, report: ScoreReport, evidence: Evidence) -> list[str]:
    """How firmly a lone leader is ahead of the runner-up: the tier's one-sided simultaneous bound on the
    CRS difference, and, on a small test set, the tier's measured coverage there. The share of bootstrap
    draws in which it stays ahead is not quoted: draws of a difference are pulled towards 0, and a tier
    read from them kept the true best in 0.997-1.0 of simulations but separated almost nothing
    (docs/bootstrap.md)."""
    if len(scores) < 2:
        return []
    runner = str(scores.index[1])
    table = report.tier.table
    sentences = []
    if runner in table.index:
        sentences.append(
            f"Separation from the runner-up {runner}: CRS difference {float(table.loc[runner, 'diff']):.2f}, at least "
            f"{float(table.loc[runner, 'diff_low']):.2f} at the tier's one-sided 95% bound (simultaneous over every "
            "rival; the two-sided interval above may still reach 0)."
        )
    if evidence.n_test < SMALL_TEST_SET:
        sentences.append(f"With {evidence.n_test:,} {evidence.unit} the tier's stated 95% is nearer 90% (measured by "
                         "simulation); more test cases would firm this up.")
    return sentences


def _crs_words(encoder: str, row, report: ScoreReport) -> str:
    if encoder == report.reference:
        return "CRS 0, the reference"
    interval = "" if pd.isna(row.get("ci_low", math.nan)) else f", interval [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    return f"CRS {float(row['crs']):+.2f} against {report.reference}{interval}"


def robustness_meaning(report: ScoreReport) -> str:
    """What the robustness value is on this cohort: perturbations, a shift set, or both (from what ran)."""
    table = report.evidence.axis_evidence
    if table.empty:
        return AXIS_MEANING["robustness"]
    rows = table[table["axis"] == "robustness"]
    perturbed, shifted = bool((rows["n_perturbations"] > 0).any()), bool((rows["n_shift"] > 0).any())
    if perturbed and not shifted:
        return "AUROC under perturbation"
    if shifted and not perturbed:
        return "AUROC on the shift set alone: no perturbation was run"
    return AXIS_MEANING["robustness"]


def axis_value_words(axis: str, row, meaning: Mapping[str, str] | None = None) -> str:
    """One axis of one encoder as a reader knows it, in the axis's own units."""
    if axis == "calibration":
        error = calibration_error(row)
        ece = f" (ECE {error:.3f})" if math.isfinite(error) else ""
        return f"Brier skill {float(row[axis]):.3f}{ece}"
    if axis == "discrimination":
        return f"AUROC {float(row[axis]):.3f}"
    return f"{AXIS_WORDS[axis]} {float(row[axis]):.3f} ({(meaning or AXIS_MEANING)[axis]})"


def _why(top: str, scaled: pd.DataFrame, scores: pd.DataFrame, thin: Mapping[str, str] | None = None,
         meaning: Mapping[str, str] | None = None) -> str:
    """Where the choice is weakest, in the skill the CRS reads, and whether others are weaker still; an
    axis resting on too little is named apart, never as a strength."""
    thin = thin or {}
    if scaled.empty:
        return ""
    solid = [a for a in scaled.columns if a not in thin]
    if not solid:
        return ""
    weakest = scaled.loc[top, solid].idxmin()
    worst = scaled[solid].min(axis=1)
    best_worst = bool(worst.loc[top] >= worst.max() - 1e-12) and len(scaled) > 1
    lead = "the best worst axis of all encoders" if best_worst else "not the best worst axis"
    others = [axis_value_words(a, scores.loc[top], meaning) for a in solid if a != weakest]
    weakest_words = axis_value_words(weakest, scores.loc[top], meaning)
    apart = [f"{axis_value_words(a, scores.loc[top], meaning)}, resting on too little (below)" for a in scaled.columns
             if a in thin]
    rest = ", ".join(others + apart)
    return f"{top}: {lead}, its weakest being {AXIS_WORDS[weakest]} ({weakest_words})" + (f"; {rest}." if rest else ".")


def _higher_auroc(top: str, scores: pd.DataFrame, scaled: pd.DataFrame, axes,
                  meaning: Mapping[str, str] | None = None) -> list[str]:
    if "discrimination" not in scores:
        return []
    top_auroc = float(scores.loc[top, "discrimination"])
    out = []
    for encoder, row in scores[scores["discrimination"] > top_auroc].iterrows():
        shortfall = (scaled.loc[top] - scaled.loc[encoder]).drop("discrimination", errors="ignore")
        if shortfall.empty or shortfall.max() <= 0:
            continue
        axis = shortfall.idxmax()
        out.append(f"{encoder} has a higher AUROC ({float(row['discrimination']):.3f} vs {top_auroc:.3f}) but "
                   f"{_axis_gap(axis, scores.loc[top], row, meaning)}, and a lower CRS ({float(row['crs']):.2f} vs "
                   f"{float(scores.loc[top, 'crs']):.2f}).")
    return out


def _what_would_separate(top: str, tier: list[str], report: ScoreReport, evidence: Evidence) -> list[str]:
    table = separation_table(report, evidence)
    out = [separation_sentence(top, e, table.loc[e], evidence) for e in tier if e != top and e in table.index]
    costs = evidence.seconds_per_image or {}
    priced = {e: costs[e] for e in tier if e in costs}
    if len(priced) > 1:
        cheapest = min(priced, key=priced.get)
        out.append(f"Until then any of them is defensible; the cheapest to run is {cheapest} "
                   f"({priced[cheapest] * 1000:.1f} ms per image, measured).")
    return out
