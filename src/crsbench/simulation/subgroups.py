"""A cohort with patient subgroups and a known truth, for the subgroup stage's validation
(benchmarks/subgroup_validation.py, tests/subgroups/test_subgroup_validation.py).

Two classes, prevalence `prevalence`, one case per patient. Every case carries two attributes drawn
independently of its label: sex (F/M, equal shares) and an age band (three equal shares). An encoder
scores a case as mu * y + d + eps, d a difficulty shared by every encoder (so encoders are paired) and eps
its own noise, both unit normal (V = 2): its population AUROC is Phi(mu / sqrt(2 V)). The planted
encoder's mu is lowered on the subgroup sex = F so that its AUROC there is `effect` below its AUROC
elsewhere; the other encoder (the reference) has the same AUROC in every subgroup. So the true difference
to the rest is -effect for the planted subgroup and 0 for every other (encoder, subgroup), and the true
worst-subgroup AUROC is the smallest subgroup value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps
from scipy.special import expit

from crsbench.scoring.subgroups import SubgroupInput

PLANTED = ("sex", "F")
AGE_BANDS = ("<50", "50-70", ">=70")
ENCODERS = ("reference", "planted")
VARIANCE = 2.0  # difficulty and noise, unit variance each


@dataclass(frozen=True)
class SubgroupDesign:
    n_cases: int = 300  # the demo's test set
    prevalence: float = 0.4
    auroc: float = 0.85  # every encoder's AUROC outside the planted subgroup
    effect: float = 0.05  # how much lower the planted encoder's AUROC is on PLANTED


def separation(auroc: float) -> float:
    """mu of a binormal score with this AUROC (V = VARIANCE)."""
    return float(np.sqrt(2 * VARIANCE) * sps.norm.ppf(auroc))


def true_difference(design: SubgroupDesign, encoder: str, attribute: str, subgroup: str) -> float:
    """The population AUROC in the subgroup minus the population AUROC in the rest of the set."""
    if encoder != "planted" or design.effect == 0:
        return 0.0
    if (attribute, subgroup) == PLANTED:
        return -design.effect
    if attribute == PLANTED[0]:  # the rest of M is F: its AUROC is the planted one
        return design.effect
    return 0.0  # an age band holds both sexes in the same shares as its rest


def draw_cohort(design: SubgroupDesign, rng: np.random.Generator, n_draws: int) -> SubgroupInput:
    """One realised test set with both encoders' predictions and n_draws bootstrap draws (row 0 the point)."""
    n = design.n_cases
    y = (rng.random(n) < design.prevalence).astype(np.int64)
    sex = np.where(rng.random(n) < 0.5, "F", "M")
    age = np.asarray(AGE_BANDS)[rng.integers(0, len(AGE_BANDS), n)]
    difficulty = rng.normal(size=n)
    base, planted = separation(design.auroc), separation(design.auroc - design.effect)
    probabilities, vectors = {}, {}
    for e, encoder in enumerate(ENCODERS):
        mu = np.where((sex == PLANTED[1]) & (encoder == "planted"), planted, base)
        score = mu * y + difficulty + rng.normal(size=n)
        p = expit(score - score.mean())
        probabilities[encoder] = np.column_stack([1 - p, p])
        vectors[(e, 0)] = (encoder,)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=n_draws - 1)
    weights = np.vstack([np.ones(n), counts])
    prior = (1 - design.prevalence, design.prevalence)
    return SubgroupInput("sim", "test", "single_label", 2, y, np.arange(n).astype(str),
                         {"sex": sex, "age_band": age}, vectors, {(0, 0): prior, (1, 0): prior}, weights, probabilities)


def true_worst(design: SubgroupDesign) -> float:
    """The population worst-subgroup AUROC of every attribute and encoder when nothing is planted (effect 0):
    every subgroup's AUROC is `auroc`, and the true gap is 0."""
    if design.effect:
        raise ValueError("the true worst subgroup is stated for the null design (effect 0) only")
    return design.auroc


def _covers(table, design: SubgroupDesign, encoder: str, attributes) -> bool:
    """Every subgroup of these attributes covers its true difference to the rest, for this encoder."""
    part = table[(table["encoder"] == encoder) & table["attribute"].isin(list(attributes))]
    truth = np.array([true_difference(design, encoder, a, g) for a, g in zip(part["attribute"], part["subgroup"])])
    return bool(((part["diff_low"] <= truth) & (truth <= part["diff_high"])).all())


def replicate(design: SubgroupDesign, runs: int, n_draws: int, seed: int, level: float = 0.95,
              per_attribute: bool = False):
    """Per run and encoder: whether the planted subgroup's difference to the rest excludes 0 (and to the
    reference), whether every subgroup of each attribute covers its true difference at once, whether every
    subgroup of both attributes does (the family the flags are read in), and the worst subgroup's AUROC and
    gap with their bootstrap bias estimates. `per_attribute`: also the family's coverage when each attribute
    is scored alone (intervals simultaneous within an attribute only), on the same draws. One generator, so
    a seed gives one table."""
    import pandas as pd

    from crsbench.scoring.subgroups import subgroup_tables

    rng = np.random.default_rng(seed)
    rows = []
    for run in range(runs):
        item = draw_cohort(design, rng, n_draws)
        result = subgroup_tables([item], list(ENCODERS), "reference", np.ones((n_draws, 1)), {}, level)
        table = result.table
        alone = {a: subgroup_tables([replace(item, attributes={a: v})], list(ENCODERS), "reference",
                                    np.ones((n_draws, 1)), {}, level).table
                 for a, v in item.attributes.items()} if per_attribute else {}
        for encoder in ENCODERS:
            mine = table[table["encoder"] == encoder]
            planted = mine[(mine["attribute"] == PLANTED[0]) & (mine["subgroup"] == PLANTED[1])].iloc[0]
            row = {"run": run, "encoder": encoder, "planted_excludes": bool(planted["diff_high"] < 0),
                   "planted_ref_excludes": bool(planted["ref_diff_high"] < 0)}
            for attribute in ("sex", "age_band"):
                part = mine[mine["attribute"] == attribute]
                truth = np.array([true_difference(design, encoder, attribute, g) for g in part["subgroup"]])
                row[f"covers_{attribute}"] = bool(((part["diff_low"] <= truth) & (truth <= part["diff_high"])).all())
                row[f"assessable_{attribute}"] = bool(part["assessable"].all())
                row[f"smallest_{attribute}"] = int(part["n_cases"].min())
                worst = result.worst[(result.worst["encoder"] == encoder) & (result.worst["attribute"] == attribute)]
                row[f"worst_{attribute}"] = float(worst["worst_auroc"].iloc[0])
                row[f"worst_bias_{attribute}"] = float(worst["worst_bias"].iloc[0])
                row[f"gap_{attribute}"] = float(worst["gap"].iloc[0])
                row[f"gap_bias_{attribute}"] = float(worst["gap_bias"].iloc[0])
            row["covers_family"] = _covers(table, design, encoder, ("sex", "age_band"))
            if per_attribute:
                row["covers_family_per_attribute"] = all(_covers(alone[a], design, encoder, (a,)) for a in alone)
            rows.append(row)
    return pd.DataFrame(rows)
