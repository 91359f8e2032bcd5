"""Sentences the advice and the report's summary share, each from fields of the score value: a floor
baseline the encoders did not beat, axes resting on too little, small classes, the tier against P(#1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from crsbench.scoring.axis_evidence import MIN_CASES_PER_CLASS, class_name
from crsbench.scoring.refits import target_sentence

if TYPE_CHECKING:  # annotations only: the renderers take the scored value
    from crsbench.scoring.score_report import ScoreReport

AXIS_WORDS = {"discrimination": "AUROC", "calibration": "Brier skill", "label_efficiency": "label efficiency",
              "robustness": "robustness", "worst_subgroup": "worst-subgroup AUROC"}


def floor_encoders(report: ScoreReport) -> set[str]:
    """The training-free floor baselines among the scored encoders: those the suite marks, and registry
    entries of the baseline group (raw pixels, colour-texture), which `select` lists like any other."""
    marked = set(map(str, report.baselines))
    try:
        from crsbench.encoders.registry import encoder_spec
    except ImportError:  # the registry is part of the package; a stripped install still advises
        return marked
    for name in map(str, report.point.scores.index):
        try:  # a label may carry options (raw-pixels@input_size=16): the entry is the name before them
            if getattr(encoder_spec(name.split("@", 1)[0]), "group", "") == "baseline":
                marked.add(name)
        except Exception:  # not a registry name (a user's module:factory): only the suite can mark it
            continue
    return marked


def floor_sentences(report: ScoreReport, scope: str = "") -> list[str]:
    """A training-free floor baseline first or in the leading tier, in plain words."""
    baselines = floor_encoders(report)
    if not baselines:
        return []
    scores, tier = report.point.scores, [str(e) for e in report.tier.members]
    top = str(scores.index[0])
    where = f" {scope}" if scope else ""
    if top in baselines:
        models = scores[~scores.index.isin(list(baselines))]
        if models.empty:
            return [f"Every encoder scored{where} is a training-free floor baseline: no pretrained encoder was "
                    f"compared, so {top} leads only the floor."]
        return [f"{top} is a training-free floor baseline and has the highest CRS{where}: none of the pretrained "
                f"encoders beat it on this cohort (the best of them, {models.index[0]}, has CRS "
                f"{float(models.iloc[0]['crs']):.2f}); a pretrained encoder is not worth its cost here."]
    tied = [e for e in tier if e in baselines]
    if tied:
        return [f"The training-free floor baseline{'s' if len(tied) > 1 else ''} {', '.join(tied)} "
                f"{'are' if len(tied) > 1 else 'is'} in the leading tier{where}: {top} did not beat "
                f"{'them' if len(tied) > 1 else 'it'} beyond the noise on this cohort."]
    return []


def thin_sentences(thin: Mapping[str, str]) -> list[str]:
    """Axes below the evidence minimum, those with one reason in one sentence."""
    by_reason: dict[str, list[str]] = {}
    for axis, why in thin.items():
        by_reason.setdefault(why, []).append(AXIS_WORDS.get(axis, axis))
    out = []
    for why, names in by_reason.items():
        which = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        out.append(f"The {which} ax{'is rests' if len(names) == 1 else 'es rest'} on too little to be read as a "
                   f"strength or a weakness: {why}.")
    return out


def _named(row, class_names=None) -> str:
    """A class of the class-counts table: by `class_names` when given, else by the name the table keeps."""
    if class_names is None and isinstance(row.get("name"), str) and row["name"]:
        return str(row["name"])
    return class_name(int(row["class"]), class_names)


def small_class_sentences(report: ScoreReport, class_names=None) -> list[str]:
    """Classes with fewer test or shift cases than the minimum, by name."""
    counts = report.evidence.class_counts
    if counts is None or counts.empty:
        return []
    small = counts[counts["cases"] < MIN_CASES_PER_CLASS]
    if small.empty:
        return []
    parts = [f"{_named(r, class_names)} has {int(r['cases'])} case(s) in the "
             f"{'test set' if r['set'] == 'test' else 'shift set ' + str(r['set']).removeprefix('shift:')}"
             for _, r in small.iterrows()]
    return [f"Small classes (fewer than {MIN_CASES_PER_CLASS} cases): {'; '.join(parts)}: their AUROC and "
            "calibration rest on a handful of cases, so a verdict on them is weak."]


def tier_against_p_rank1(report: ScoreReport) -> list[str]:
    """Where an encoder outside the leading tier is first in more bootstrap draws than one inside it."""
    scores = report.point.scores
    if "p_rank1" not in scores or "in_leading_tier" not in scores:
        return []
    inside = scores[scores["in_leading_tier"].fillna(False).astype(bool)]
    outside = scores[~scores["in_leading_tier"].fillna(False).astype(bool)]
    if inside.empty or outside.empty:
        return []
    low_in = inside["p_rank1"].astype(float).idxmin()
    high_out = outside["p_rank1"].astype(float).idxmax()
    if not float(outside.loc[high_out, "p_rank1"]) > float(inside.loc[low_in, "p_rank1"]):
        return []
    return [f"P(#1) and the tier disagree: {high_out} is outside the leading tier yet first in "
            f"{float(outside.loc[high_out, 'p_rank1']):.0%} of bootstrap draws, more than {low_in} inside it "
            f"({float(inside.loc[low_in, 'p_rank1']):.0%}). P(#1) counts draws in which an encoder is first and "
            "moves with how many rivals share the lead; the tier asks whether its difference to the top is resolved "
            "(simultaneous bound). Read the tier as the verdict."]


def target_line(report: ScoreReport) -> str:
    """What the intervals and the tier are about, in one sentence: the line every output shows under its
    score tables (a value scored before the sentence existed is read as one without refits)."""
    sentence = report.intervals.target
    if sentence:
        return sentence
    label = report.intervals.label or ""
    return target_sentence("none" if not label else "seeds" if "seed" in label and "case" not in label else "cases")
