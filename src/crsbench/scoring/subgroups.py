"""Discrimination and calibration per patient subgroup (sex, age band, site, view): records and stored
predictions in, tables out (docs/subgroups.md).

Per task, test set (and shift set where it carries the attribute), attribute, subgroup and encoder, from
the fitted probes' stored predictions at 100 % labels, seeds averaged as the axes average them:

- AUROC (macro over labels for multi-label, as the discrimination axis) and Brier skill against the same
  training prior as the calibration axis, on the subgroup's cases;
- the signed difference to the rest of the set (subgroup minus rest) and the difference to the reference
  encoder on the same subgroup;
- per encoder and attribute, the worst subgroup's AUROC and the gap (best minus worst), with the
  bootstrap's estimate of their small-subgroup bias beside them (the minimum of noisy values is biased
  down and a range up; benchmarks/subgroup_validation.py measures the true bias against the estimate).

Intervals read the case-and-seed bootstrap's own draws (the same cluster counts per task, replayed from
the state the bootstrap recorded, and the same seed counts), so they are paired across encoders and with
every other axis. They are simultaneous over an attribute's assessable subgroups: the max statistic
max_g |theta*_g - theta_g| / se_g over the draws gives one multiplier q per encoder and quantity, and every
subgroup's interval is theta_g +/- q se_g (se_g the draws' standard deviation). The quantile is taken at
1 - (1 - level) / A, A the set's attributes with an assessable subgroup (family_level), so the flags of one
encoder on one set are family-wise at `level` over all its attributes.

A subgroup (or its rest) with fewer than MIN_CASES cases or, for some label, fewer than MIN_PER_CLASS
positives or negatives is not assessable: the reason is given and no number.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.core.hashing import sha256_of
from crsbench.crs import axis_math
from crsbench.datasets.subgroups import UNKNOWN
from crsbench.metrics.weighted import WeightedMetrics, case_major
from crsbench.results.predictions import Predictions
from crsbench.scoring.refit_draws import RefitDraws

MIN_CASES = 30  # fewer cases in a subgroup: not assessable
MIN_PER_CLASS = 10  # fewer positives or negatives of some label in a subgroup: not assessable
MAX_CELLS = 4_000_000  # draws x cases of one weight matrix held at once

def flagged(table: pd.DataFrame) -> pd.DataFrame:
    """The rows whose difference to the rest has an interval that excludes 0."""
    return table[table["diff_excludes_zero"].astype("boolean").fillna(False).astype(bool)]


def thresholds() -> dict[str, int]:
    return {"min_cases": MIN_CASES, "min_per_class": MIN_PER_CLASS}


TABLE_COLUMNS = (
    "task", "set", "attribute", "subgroup", "encoder", "n_cases", "n_clusters", "assessable", "reason",
    "auroc", "auroc_low", "auroc_high", "brier_skill", "brier_skill_low", "brier_skill_high", "rest_auroc",
    "diff", "diff_low", "diff_high", "diff_excludes_zero", "ref_diff", "ref_diff_low", "ref_diff_high",
)
WORST_COLUMNS = (
    "task", "set", "attribute", "encoder", "n_subgroups", "n_assessable", "worst_subgroup", "worst_auroc",
    "worst_low", "worst_high", "worst_bias", "best_subgroup", "gap", "gap_low", "gap_high", "gap_bias",
)
LABEL_COLUMNS = ("task", "set", "attribute", "subgroup", "encoder", "label", "auroc")
REFIT_QUANTITIES = ("auroc", "rest_auroc", "brier_skill")  # what a refit's record carries per subgroup


@dataclass(frozen=True)
class SubgroupInput:
    """One scored set with attributes: its per-case subgroups, labels, task type, and per (encoder, seed) the
    prediction vector(s) of the fitted probe at 100 % labels (several on a shift set: their AUROCs averaged),
    each (encoder, seed)'s training prior, and the case weights of every draw (row 0 the point)."""

    task: str
    role: str  # test | shift
    task_type: str
    n_classes: int
    labels: np.ndarray
    clusters: np.ndarray
    attributes: dict[str, np.ndarray]
    vectors: dict[tuple[int, int], tuple[str, ...]]
    prior: dict[tuple[int, int], tuple[float, ...]]
    weights: np.ndarray  # (n_draws, n_cases)
    probabilities: dict[str, np.ndarray]  # float64 [n, k] per probability hash in `vectors`, as the axes read them
    refits: SubgroupRefits | None = None  # the training-sample term, where the refits carry subgroup metrics


@dataclass(frozen=True)
class SubgroupRefits:
    """A set's training-sample term: its task's refit draws (the axes' own, scoring.refit_draws.RefitDraws) and, per
    attribute whose refits all carry metrics for today's values, per subgroup the K refits' values (K, 3, E):
    AUROC in the subgroup, in the rest, Brier skill (REFIT_QUANTITIES). A subgroup's draws get
    sum_k g_bk dev_k / sqrt(K - 1) * scale_b, dev_k its refit k's deviation from the refits' mean: the term
    the task's axes get, from the same draws, so subgroups stay paired with encoders and axes."""

    draws: RefitDraws
    values: dict[str, dict[str, np.ndarray]]

    def terms(self, attribute: str, groups: Sequence[str]) -> np.ndarray:
        """(n_draws, 3, G, E): the term of each quantity of these subgroups; 0 for a quantity some refit leaves
        undefined (the Brier skill of a shift set, which has none)."""
        values = np.stack([self.values[attribute][g] for g in groups], axis=2)  # (K, 3, G, E)
        deviations = values - values.mean(axis=0, keepdims=True)
        undefined = np.isnan(deviations).any(axis=(0, 2, 3))
        deviations[:, undefined] = 0.0
        return self.draws.term(deviations)


@dataclass(frozen=True)
class SubgroupResult:
    table: pd.DataFrame
    worst: pd.DataFrame
    labels: pd.DataFrame


def label_columns(task_type: str, labels: np.ndarray, n_classes: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(positive, observed) 0/1 masks per label the AUROC reads: the positive class for two classes, each
    class one-vs-rest for more, each label (where observed) for multi-label."""
    if task_type == "multi_label":
        return [(np.nan_to_num(labels[:, j]) == 1, ~np.isnan(labels[:, j])) for j in range(labels.shape[1])]
    every = np.ones(len(labels), dtype=bool)
    if n_classes == 2:
        return [(labels == 1, every)]
    return [(labels == c, every) for c in range(n_classes)]


def assessable_reason(mask: np.ndarray, columns: list[tuple[np.ndarray, np.ndarray]], names: Sequence[str],
                      what: str = "") -> str:
    """"" when the cases in `mask` meet the thresholds, else why not (the first shortfall)."""
    n = int(mask.sum())
    if n < MIN_CASES:
        return f"{what}{n} cases (< {MIN_CASES})"
    for (positive, observed), name in zip(columns, names):
        pos = int((mask & observed & positive).sum())
        neg = int((mask & observed & ~positive).sum())
        if pos < MIN_PER_CLASS or neg < MIN_PER_CLASS:
            which, count = ("positives", pos) if pos < MIN_PER_CLASS else ("negatives", neg)
            return f"{what}{count} {which} of {name} (< {MIN_PER_CLASS})"
    return ""


def simultaneous(draws: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per subgroup of draws (n_draws, G, ...), row 0 the point: theta_g +/- q se_g with q the
    `level` quantile over draws of max_g |theta*_g - theta_g| / se_g (a subgroup without spread is left out
    of the maximum and gets its point as both bounds). Without draws: NaN."""
    point = draws[0]
    if len(draws) < 3 or draws.shape[1] == 0:
        return np.full_like(point, np.nan), np.full_like(point, np.nan)
    rest = draws[1:]
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a quantity not defined on this set (skill on a shift set)
        se = np.nanstd(rest, axis=0, ddof=1)
        z = np.abs(rest - point) / np.where(se > 0, se, np.nan)
    z = np.where(np.isnan(z), 0.0, z)  # a subgroup without spread adds nothing to the maximum
    q = np.quantile(z.max(axis=1), level, axis=0)  # per trailing index (encoder)
    se = np.nan_to_num(se)
    return point - q * se, point + q * se


def family_level(level: float, n_attributes: int) -> float:
    """The level of each attribute's simultaneous intervals that makes the flags of one encoder on one set
    family-wise at `level` over all its attributes' subgroups (Bonferroni over the attributes; the max
    statistic within each). docs/subgroups.md (Multiplicity) gives the family-wise error on the null
    simulation with intervals per attribute alone and with this level."""
    return 1 - (1 - level) / max(1, n_attributes)


def _chunks(n_draws: int, n_cases: int) -> list[slice]:
    step = max(1, MAX_CELLS // max(n_cases, 1))
    return [slice(start, start + step) for start in range(0, n_draws, step)]


def subgroup_tables(sets: Sequence[SubgroupInput], encoders: Sequence[str], reference: str,
                    seed_counts: np.ndarray, class_names: dict[str, Sequence[str]], level: float) -> SubgroupResult:
    """The three tables (module docstring) of the sets given; seed_counts (n_draws, S), row 0 ones."""
    rows, worst_rows, label_rows = [], [], []
    ref = list(encoders).index(reference)
    for item in sets:
        t, w, lab = _one_set(item, list(encoders), ref, seed_counts, class_names.get(item.task), level)
        rows += t
        worst_rows += w
        label_rows += lab
    return SubgroupResult(pd.DataFrame(rows, columns=list(TABLE_COLUMNS)),
                          pd.DataFrame(worst_rows, columns=list(WORST_COLUMNS)),
                          pd.DataFrame(label_rows, columns=list(LABEL_COLUMNS)))


def scored_probabilities(probabilities: np.ndarray, task_type: str) -> np.ndarray:
    """float64 probabilities as the axes read a stored (float32) vector: rows renormalised to sum to 1 for
    single-label."""
    probs = np.asarray(probabilities).astype(np.float64)
    if task_type != "multi_label":
        probs /= probs.sum(axis=1, keepdims=True)
    return probs


def vector_probabilities(stored: Predictions, digests, task_type: str) -> dict[str, np.ndarray]:
    """float64 probabilities per hash, as the axes read them (`scored_probabilities`)."""
    return {digest: scored_probabilities(stored.probabilities(digest), task_type) for digest in dict.fromkeys(digests)}


def attribute_digest(values: np.ndarray) -> str:
    """A short digest of an attribute's value per case, in case order: a refit's metrics are read only for the
    attribute values they were computed on (attributes rebanded or replaced after the run do not match)."""
    return sha256_of(*np.asarray(values).astype(str).tolist())[:16]


def side_values(inside: Sequence[WeightedMetrics], outside: Sequence[WeightedMetrics], prior: WeightedMetrics | None,
                w_in, w_out) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per weight row: the AUROC in the subgroup and in the rest (each the mean over the vectors given, a shift
    set's several), and the subgroup's Brier skill against the prior predictor on its cases (NaN without one).
    The one computation of a subgroup's values, for the fitted probes' draws and a refit's record alike."""
    auroc = np.mean([m.auroc(w_in) for m in inside], axis=0)
    rest = np.mean([m.auroc(w_out) for m in outside], axis=0)
    if prior is None:
        return auroc, rest, np.full(len(auroc), np.nan)
    return auroc, rest, axis_math.brier_skill(inside[0].brier(w_in), prior.brier(w_in))


def subgroup_metrics(task_type: str, labels: np.ndarray, probabilities: np.ndarray,
                     attributes: dict[str, np.ndarray], prior: Sequence[float] | None) -> list[dict]:
    """What a refit's record carries (results.records.SubgroupMetrics): per attribute and subgroup of one
    prediction vector, at unit weights, the values `side_values` gives the fitted probes' vectors; the Brier
    skill where `prior` (the training prevalence) is given (the test set; None on a shift set). A side
    without cases, or without both classes, has no AUROC (null)."""
    probs = scored_probabilities(probabilities, task_type)
    one = np.ones((1, len(probs)))
    rows = []
    for attribute, raw in sorted(attributes.items()):
        values = np.asarray(raw).astype(str)
        digest = attribute_digest(values)
        for group in subgroup_order(values):
            mask = values == group
            row = {"attribute": attribute, "subgroup": group, "values": digest, "n_cases": int(mask.sum()),
                   "auroc": None, "rest_auroc": None, "brier_skill": None}
            if mask.all():
                rows.append(row)
                continue
            inside = WeightedMetrics(task_type, labels[mask], probs[mask])
            outside = WeightedMetrics(task_type, labels[~mask], probs[~mask])
            baseline = None if prior is None else WeightedMetrics(
                task_type, labels[mask], np.tile(np.asarray(prior, dtype=np.float64), (int(mask.sum()), 1)))
            auroc, rest, skill = side_values([inside], [outside], baseline, one[:, mask], one[:, ~mask])
            row.update({name: _finite(v[0]) for name, v in (("auroc", auroc), ("rest_auroc", rest),
                                                            ("brier_skill", skill))})
            rows.append(row)
    return rows


def stored_metrics(metrics: Sequence[dict] | None, attribute: str, digest: str) -> dict[str, dict]:
    """subgroup -> its row of a refit record's `subgroup_metrics` (as `subgroup_metrics` writes them), for one
    attribute with the values `digest` names; rows made for other values of the attribute are not read."""
    return {m["subgroup"]: m for m in metrics or () if m["attribute"] == attribute and m["values"] == digest}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def subgroup_order(values: np.ndarray) -> list[str]:
    """Subgroups sorted, UNKNOWN last."""
    return sorted(set(values.tolist()), key=lambda v: (v == UNKNOWN, v))


def _subgroups(values: np.ndarray, columns, column_names) -> tuple[list[str], list[np.ndarray], list[str]]:
    """An attribute's subgroups, their masks, and why each is not assessable ("" where it is)."""
    groups = subgroup_order(values)
    masks = [values == g for g in groups]
    reasons = [assessable_reason(m, columns, column_names) or assessable_reason(~m, columns, column_names, "rest: ")
               for m in masks]
    return groups, masks, reasons


def _one_set(item: SubgroupInput, encoders: list[str], ref: int, seed_counts: np.ndarray,
             names: Sequence[str] | None, level: float) -> tuple[list, list, list]:
    n_draws, n_seeds = seed_counts.shape
    n_enc = len(encoders)
    k = item.n_classes
    names = list(names) if names else [str(c) for c in range(k)]
    columns = label_columns(item.task_type, item.labels, k)
    column_names = [names[1]] if item.task_type != "multi_label" and k == 2 else names[:len(columns)]
    seed_share = seed_counts / seed_counts.sum(axis=1, keepdims=True)
    rows, worst_rows, label_rows = [], [], []
    subgroups = {attribute: _subgroups(values, columns, column_names) for attribute, values in item.attributes.items()}
    # the flags of one encoder on this set are one family: the attributes with a subgroup to flag
    family = family_level(level, sum(1 for _, _, reasons in subgroups.values() if not all(reasons)))
    for attribute, (groups, masks, reasons) in sorted(subgroups.items()):
        kept = [i for i, r in enumerate(reasons) if not r]
        # (n_draws, G_kept, E): the subgroup's AUROC, the rest's, and the subgroup's Brier skill
        auroc = np.full((n_draws, len(kept), n_enc), np.nan)
        rest = np.full_like(auroc, np.nan)
        skill = np.full_like(auroc, np.nan)
        per_label = {}
        for slot, i in enumerate(kept):
            a, r, s, per_label[i] = _subgroup_draws(item, masks[i], seed_share, n_enc, n_seeds)
            auroc[:, slot], rest[:, slot], skill[:, slot] = a, r, s
        if kept and item.refits is not None and attribute in item.refits.values:
            term = item.refits.terms(attribute, [groups[i] for i in kept])
            auroc, rest, skill = auroc + term[:, 0], rest + term[:, 1], skill + term[:, 2]
        diff = auroc - rest
        ref_diff = auroc - auroc[:, :, ref:ref + 1]
        bounds = {name: simultaneous(v, family) for name, v in
                  (("auroc", auroc), ("skill", skill), ("diff", diff), ("ref_diff", ref_diff))}
        for i, group in enumerate(groups):
            mask = masks[i]
            base = {"task": item.task, "set": item.role, "attribute": attribute, "subgroup": group,
                    "n_cases": int(mask.sum()), "n_clusters": int(len(np.unique(item.clusters[mask])))}
            for e, encoder in enumerate(encoders):
                row = {**base, "encoder": encoder, "assessable": not reasons[i], "reason": reasons[i]}
                if i in kept:
                    slot = kept.index(i)
                    row.update(_numbers(slot, e, auroc, rest, skill, diff, ref_diff, bounds))
                    for j, label in enumerate(names if item.task_type == "multi_label" else ()):
                        label_rows.append({**base, "encoder": encoder, "label": label,
                                           "auroc": float(per_label[i][e, j])})
                rows.append(row)
        for e, encoder in enumerate(encoders):
            worst_rows.append(_worst_row(item, attribute, encoder, [groups[i] for i in kept], auroc[:, :, e],
                                         len(groups), level))
    return rows, worst_rows, label_rows


def _numbers(slot: int, e: int, auroc, rest, skill, diff, ref_diff, bounds) -> dict:
    def point_and_bounds(name: str, values: np.ndarray, key: str) -> dict:
        low, high = bounds[key]
        return {name: float(values[0, slot, e]), f"{name}_low": float(low[slot, e]),
                f"{name}_high": float(high[slot, e])}

    out = {**point_and_bounds("auroc", auroc, "auroc"), **point_and_bounds("brier_skill", skill, "skill"),
           "rest_auroc": float(rest[0, slot, e]), **point_and_bounds("diff", diff, "diff"),
           **point_and_bounds("ref_diff", ref_diff, "ref_diff")}
    out["diff_excludes_zero"] = bool(out["diff_low"] > 0 or out["diff_high"] < 0)
    return out


def _subgroup_draws(item: SubgroupInput, mask: np.ndarray, seed_share: np.ndarray, n_enc: int, n_seeds: int):
    """(n_draws, E) AUROC in the subgroup, in the rest, Brier skill in the subgroup (seed means under each draw's
    seed counts), and the point AUROC per label (E, L). Each side's metrics are built on its own cases and read
    its columns of the draws' weights: the same values as the whole set's under weights zeroed outside, for
    half the work."""
    n_draws = len(item.weights)
    per_seed = {name: np.full((n_draws, n_enc, n_seeds), np.nan) for name in ("auroc", "rest", "skill")}
    labels = np.full((n_enc, n_seeds, item.labels.shape[1] if item.labels.ndim == 2 else 1), np.nan)
    sides = {"in": np.flatnonzero(mask), "out": np.flatnonzero(~mask)}
    built: dict[tuple, WeightedMetrics] = {}

    def side(digest: str, name: str) -> WeightedMetrics:
        if (digest, name) not in built:
            cases = sides[name]
            built[(digest, name)] = WeightedMetrics(item.task_type, item.labels[cases], item.probabilities[digest][cases])
        return built[(digest, name)]

    def prior_in(prior: tuple[float, ...]) -> WeightedMetrics:
        """The prior predictor on the subgroup's cases: every case predicted the training prevalence."""
        if prior not in built:
            cases = sides["in"]
            built[prior] = WeightedMetrics(item.task_type, item.labels[cases],
                                           np.tile(np.asarray(prior, dtype=np.float64), (len(cases), 1)))
        return built[prior]

    for part in _chunks(n_draws, len(mask)):
        weights = {name: case_major(item.weights[part][:, cases]) for name, cases in sides.items()}
        cache: dict = {}
        for (e, s), digests in item.vectors.items():
            prior = item.prior[(e, s)]
            key = (digests, prior)
            if key not in cache:
                baseline = prior_in(prior) if prior and item.role == "test" else None  # calibration: test set only
                cache[key] = side_values([side(d, "in") for d in digests], [side(d, "out") for d in digests], baseline,
                                         weights["in"], weights["out"])
            per_seed["auroc"][part, e, s], per_seed["rest"][part, e, s], per_seed["skill"][part, e, s] = cache[key]
    if item.task_type == "multi_label":
        point = np.ones((1, len(sides["in"])))
        for (e, s), digests in item.vectors.items():
            labels[e, s] = np.mean([side(d, "in").auroc_per_class(point)[0] for d in digests], axis=0)
    out = [np.einsum("bs,bes->be", seed_share, per_seed[name]) for name in ("auroc", "rest", "skill")]
    return (*out, labels.mean(axis=1))  # the point: every seed weighs 1


def _worst_row(item: SubgroupInput, attribute: str, encoder: str, kept: list[str], auroc: np.ndarray,
               n_groups: int, level: float) -> dict:
    """The worst subgroup's AUROC and the gap (best minus worst) over the assessable subgroups, each with its
    percentile interval and the bootstrap's estimate of its bias (mean of the draws' statistic minus the
    point's): the minimum of noisy values is biased down, their range up."""
    row = {"task": item.task, "set": item.role, "attribute": attribute, "encoder": encoder,
           "n_subgroups": n_groups, "n_assessable": len(kept)}
    if len(kept) < 2:
        return row
    point = auroc[0]
    worst, best = int(np.nanargmin(point)), int(np.nanargmax(point))
    minimum, gap = np.nanmin(auroc, axis=1), np.nanmax(auroc, axis=1) - np.nanmin(auroc, axis=1)
    alpha = (1 - level) / 2
    row.update({"worst_subgroup": kept[worst], "worst_auroc": float(minimum[0]), "best_subgroup": kept[best],
                "gap": float(gap[0])})
    if len(auroc) > 2:
        row.update({"worst_low": float(np.nanquantile(minimum[1:], alpha)),
                    "worst_high": float(np.nanquantile(minimum[1:], 1 - alpha)),
                    "worst_bias": float(np.nanmean(minimum[1:]) - minimum[0]),
                    "gap_low": float(np.nanquantile(gap[1:], alpha)), "gap_high": float(np.nanquantile(gap[1:], 1 - alpha)),
                    "gap_bias": float(np.nanmean(gap[1:]) - gap[0])})
    return row
