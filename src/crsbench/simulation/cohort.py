"""Per-case predictions drawn from a known population: what validates the case-level bootstrap
(PROTOCOL section 8) and times it on a cohort of the demo's shape.

A cohort of encoders sees one test set. Cases come in clusters (a patient's images) that share a
difficulty d (a latent shift of every class score, the same for every encoder); each encoder adds
its own per-case noise. Encoder e with separation mu' scores class c of case i as
z = mu' [y_i = c] + d_ic + eps_eic (unit noise, V = 1 + difficulty_sd^2) and predicts
p_c proportional to exp(slope * (log prior_c + mu' z_c / V)): slope 1 is the population's own
posterior (perfectly calibrated), other slopes are over- or under-confident. With a class profile
(more than two classes) class c's mean score is mu' profile_c and the logit carries -(mu' profile_c)^2 / 2V.
The priors are the training split's; the test set's class shares may differ (`test_priors`).
mu' = separation at 100% labels; at a label fraction f it is scaled by
1 - hunger * log10(1/f) / log10(1/f_min), times 1 + seed_sd * N(0, 1) per seed; a perturbation at
severity k of 5 scales the class scores' separation by 1 - fragility * k / 5 while the probe, fitted
on clean images, keeps its clean weights (mu' in p stays the clean one), so a perturbation can take
the AUROC below chance. An encoder with `twin_of` shares another's per-case noise and seed effects:
the same encoder with one parameter changed, all else equal.

For two classes the population AUROC is Phi(mu' / sqrt(V)) and the population binned calibration
errors (ECE, RMS) and Brier skill integrals, so the population axes and CRS are known exactly
(population_axes). With more classes the population values come from one fixed sample of the same
model (POPULATION_CASES cases, common to every encoder, so differences between encoders carry
almost none of its error).

Designs calibrated to real data (docs/bootstrap.md, "Real-calibrated cohorts", simulation/fit.py): `design_from_records`
reads a cohort's records and per-case predictions (real runs, through `records_from_predictions`)
and returns a Design whose population axes equal the measured ones (`fit_truth`), with the test-set
size, class priors, shared case difficulty, seed spread and probe refit spread of the real data.
A probe refit on a fresh training set scales an encoder's separation by 1 + refit_sd * N(0, 1)
(`realise_refits`); `population_axes(design, over_refits=True)` is the expectation over refits.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.special import expit

from crsbench.crs import axis_math

from crsbench.metrics import classification as metrics
from crsbench.scoring.axes import AXES
from crsbench.crs.definition import CRSDefinition, crs_batch
from crsbench.results.records import RECORD_SCHEMA_VERSION
from crsbench.results.predictions import CaseSet, Predictions, probability_hash


@dataclass(frozen=True)
class EncoderTruth:
    name: str
    separation: float
    slope: float = 1.0
    hunger: float = 0.3
    fragility: float = 0.2
    refit_sd: float = 0.0  # relative sd of the separation between probe fits on fresh training sets
    class_profile: tuple[float, ...] = ()  # more than two classes: class c's mean score is separation * profile[c]
    twin_of: str = ""  # an encoder listed before this one whose case noise and seed effects this one shares
    task_separations: tuple[float, ...] = ()  # a realised run of several tasks: each task's probe's own separation

    def on_task(self, index: int) -> "EncoderTruth":
        """The truth one task of a realised run sees (each task has its own training split, so its own fit)."""
        return replace(self, separation=self.task_separations[index], task_separations=()) if self.task_separations else self


@dataclass(frozen=True)
class Design:
    encoders: tuple[EncoderTruth, ...]
    n_cases: int = 732
    cluster_size: int = 2
    n_classes: int = 2
    prevalence: float = 0.4  # two classes: share of class 1; more classes: equal priors
    difficulty_sd: float = 1.0
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    fractions: tuple[float, ...] = (0.1, 1.0)
    perturbations: tuple[str, ...] = ("noise",)
    severities: tuple[int, ...] = (1, 3, 5)
    seed_sd: float = 0.1
    tasks: tuple[str, ...] = ("sim",)
    multi_label_tasks: tuple[str, ...] = ()  # tasks scored per label (n_classes labels)
    task_classes: tuple[int, ...] = ()  # classes (or labels) per task; n_classes where not given
    task_cases: tuple[int, ...] = ()  # test cases per task; n_cases where not given
    class_priors: tuple[float, ...] = ()  # single-label priors when n_classes > 2; equal priors where not given
    test_priors: tuple[float, ...] = ()  # single-label class shares of the test set where they differ from the priors

    def cases(self, task: str) -> int:
        return self.task_cases[self.tasks.index(task)] if self.task_cases else self.n_cases

    def classes(self, task: str) -> int:
        return self.task_classes[self.tasks.index(task)] if self.task_classes else self.n_classes

    @property
    def variance(self) -> float:
        return 1.0 + self.difficulty_sd**2

    def priors(self, k: int = 2) -> np.ndarray:
        if k == 2:
            return np.array([1 - self.prevalence, self.prevalence])
        if len(self.class_priors) == k:
            return np.asarray(self.class_priors, dtype=float) / sum(self.class_priors)
        return np.full(k, 1.0 / k)

    def test_shares(self, k: int = 2) -> np.ndarray:
        """The test set's class shares: `test_priors`, else the priors the probe learned (the training split's)."""
        if len(self.test_priors) == k:
            return np.asarray(self.test_priors, dtype=float) / sum(self.test_priors)
        return self.priors(k)

    def label_factor(self, hunger: float, fraction: float) -> float:
        lowest = min(self.fractions)
        return 1.0 - hunger * np.log10(1 / fraction) / np.log10(1 / lowest) if lowest < 1 else 1.0


def _probabilities(z: np.ndarray, separation: float, slope: float, design: Design, multi_label: bool,
                   profile: tuple[float, ...] = ()) -> np.ndarray:
    if multi_label:
        logit = np.log(design.prevalence / (1 - design.prevalence)) + separation / design.variance * (z - separation / 2)
        return expit(slope * logit)
    if profile:  # class means m_c = separation * profile[c]: the posterior logit is log prior + (m z - m^2 / 2) / V
        means = separation * np.asarray(profile)
        logits = slope * (np.log(design.priors(z.shape[1])) + (means * z - means**2 / 2) / design.variance)
    else:
        logits = slope * (np.log(design.priors(z.shape[1])) + separation * z / design.variance)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def _record_key(task: str, encoder: str, seed: int, fraction: float, condition: str, severity: int, refit: int = 0) -> str:
    refit_part = f"|refit {refit}" if refit else ""
    return hashlib.sha256(f"{task}|{encoder}|{seed}|{fraction}|{condition}|{severity}{refit_part}".encode()).hexdigest()[:32]


def _record(task: str, task_type: str, encoder: str, seed: int, fraction: float, kind: str, condition: str,
            severity: int, y: np.ndarray, probs: np.ndarray, counts: dict, refit: int = 0) -> tuple[dict, dict, str]:
    """One record (the metrics of one prediction vector), its prediction index row and its hash."""
    digest = probability_hash(probs)
    key = _record_key(task, encoder, seed, fraction, condition, severity, refit)
    proba = probs.astype(np.float64)
    if task_type != "multi_label":
        proba /= proba.sum(axis=1, keepdims=True)
    row = {
        "record_key": key, "encoder": encoder, "task": task, "task_type": task_type,
        "seed": seed, "fraction": fraction, "condition_kind": kind, "condition": condition,
        "severity": severity, "auroc": metrics.auroc_macro(task_type, y, proba),
        "ece": metrics.ece(task_type, y, proba), "brier": metrics.brier(task_type, y, proba),
        "nll": metrics.nll(task_type, y, proba), "suite_hash": "simulated",
        "schema_version": RECORD_SCHEMA_VERSION, "refit": refit, **counts,
    }
    index = {"record_key": key, "probs": digest, "encoder": encoder, "task": task, "seed": seed,
             "fraction": fraction, "condition_kind": kind, "condition": condition, "severity": severity}
    return row, index, digest


def simulate(design: Design, rng: np.random.Generator, refits: int = 0,
             refit_sd: Mapping[str, float] | None = None) -> tuple[pd.DataFrame, Predictions]:
    """Records (the metrics of each prediction vector) and the per-case predictions of one cohort.

    refits: also K refit records per encoder (refit 1..K, the first seed, 100 % labels, clean and
    perturbed), each a probe refit on a resample of this run's training sample: the separation at 100 %
    times 1 + sd * N(0, 1), with sd `refit_sd[encoder]` (default the encoder's own refit_sd; a realised
    design has none left, so the caller passes the spread it was realised with). Same cases, same noise.
    Drawn after everything else, so the rest of the cohort is the same with or without them."""
    rows, index, cases_by_id, probs_by_hash = [], [], {}, {}
    for task in design.tasks:
        n = design.cases(task)
        n_clusters = -(-n // design.cluster_size)
        cluster = np.repeat(np.arange(n_clusters), design.cluster_size)[:n]
        k = design.classes(task)
        multi = task in design.multi_label_tasks
        if multi:
            y = (rng.random((n, k)) < design.prevalence).astype(float)
            positive = y
        else:
            y = rng.choice(k, size=n, p=design.test_shares(k))
            positive = np.eye(k)[y]
        difficulty = rng.normal(0, design.difficulty_sd, (n_clusters, k))[cluster]
        cases = CaseSet(np.array([f"{task}-{i}" for i in range(n)]), cluster.astype(str), y, task, "test")
        test_set = cases.identity()
        cases_by_id[test_set] = cases
        task_type = "multi_label" if multi else "single_label"
        # the training labels' prevalence the Brier skill compares with: the population's own
        n_train = 10_000
        prevalence = np.full(k, design.prevalence) if multi else design.priors(k)
        counts = {"n_train": n_train, "positives_train": json.dumps([int(round(n_train * q)) for q in prevalence]),
                  "n_eval": n, "positives_eval": json.dumps([int(v) for v in np.nansum(positive, axis=0)])}
        drawn, refit_vectors = {}, []
        for truth in (t.on_task(design.tasks.index(task)) for t in design.encoders):
            if truth.twin_of:  # the same encoder with other parameters: same cases, same noise, same seeds
                noise, seed_effect = drawn[truth.twin_of]
            else:
                noise = rng.normal(size=(n, k))
                seed_effect = {(s, f): rng.normal() for s in design.seeds for f in design.fractions}
            drawn[truth.name] = noise, seed_effect

            def vector(separation: float, belief: float, truth: EncoderTruth = truth, noise: np.ndarray = noise) -> np.ndarray:
                shift = separation * np.asarray(truth.class_profile) if truth.class_profile else separation
                p = _probabilities(positive * shift + difficulty + noise, belief, truth.slope, design, multi,
                                   truth.class_profile)
                return p.astype(np.float32)

            grid = [(f, "clean", "clean", 0) for f in design.fractions]
            grid += [(1.0, "perturbation", name, sev) for name in design.perturbations for sev in design.severities]
            for seed in design.seeds:
                for fraction, kind, condition, severity in grid:
                    separation = truth.separation * design.label_factor(truth.hunger, fraction)
                    if fraction < 1.0:
                        separation *= 1 + design.seed_sd * seed_effect[(seed, fraction)]
                    belief = separation  # the separation the probe was fitted at
                    if kind == "perturbation":
                        separation *= 1 - truth.fragility * severity / 5
                    probs = vector(separation, belief)
                    row, where, digest = _record(task, task_type, truth.name, seed, fraction, kind, condition,
                                                 severity, y, probs, counts)
                    probs_by_hash[digest] = probs
                    rows.append(row)
                    index.append({**where, "test_set": test_set})
            refit_vectors.append((truth, vector))
        for truth, vector in refit_vectors if refits else ():
            sd = (refit_sd or {}).get(truth.name, truth.refit_sd)
            effects = rng.normal(size=refits)
            for k in range(1, refits + 1):
                fitted = truth.separation * (1 + sd * effects[k - 1])
                for fraction, kind, condition, severity in grid:
                    if fraction != 1.0:
                        continue
                    separation = fitted * (1 - truth.fragility * severity / 5) if kind == "perturbation" else fitted
                    probs = vector(separation, fitted)
                    row, where, digest = _record(task, task_type, truth.name, design.seeds[0], 1.0, kind, condition,
                                                 severity, y, probs, counts, refit=k)
                    probs_by_hash[digest] = probs
                    rows.append(row)
                    index.append({**where, "test_set": test_set})
    stored = Predictions.in_memory(pd.DataFrame(index), cases_by_id, probs_by_hash)
    return pd.DataFrame(rows), stored


def records_from_predictions(
    task: str,
    labels: np.ndarray,
    vectors: Iterable[tuple[str, int, float, str, str, int, np.ndarray]],
    train_counts: Sequence[int],
    clusters: np.ndarray | None = None,
    task_type: str = "single_label",
) -> tuple[pd.DataFrame, Predictions]:
    """Records and in-memory predictions, as `simulate` gives them, from probabilities computed
    elsewhere (a real cohort's probes): `vectors` yields (encoder, seed, fraction, condition_kind,
    condition, severity, probabilities [n, k]) on one test set with these `labels` (int classes) and
    `clusters` (the case itself where None), optionally followed by the refit number (a refit record
    where above 0); `train_counts` are the training split's class counts."""
    labels = np.asarray(labels)
    n = len(labels)
    cluster = np.arange(n).astype(str) if clusters is None else np.asarray(clusters).astype(str)
    cases = CaseSet(np.array([f"{task}-{i}" for i in range(n)]), cluster, labels, task, "test")
    test_set = cases.identity()
    train = [int(c) for c in train_counts]
    k = len(train)
    counts = {"n_train": int(sum(train)), "positives_train": json.dumps(train), "n_eval": n,
              "positives_eval": json.dumps([int(c) for c in np.bincount(labels.astype(int), minlength=k)])}
    rows, index, probs_by_hash = [], [], {}
    for encoder, seed, fraction, kind, condition, severity, probs, *refit in vectors:
        probs = np.asarray(probs, dtype=np.float32)
        row, where, digest = _record(task, task_type, encoder, int(seed), float(fraction), kind, condition,
                                     int(severity), labels, probs, counts, refit=int(refit[0]) if refit else 0)
        probs_by_hash[digest] = probs
        rows.append(row)
        index.append({**where, "test_set": test_set})
    stored = Predictions.in_memory(pd.DataFrame(index), {test_set: cases}, probs_by_hash)
    return pd.DataFrame(rows), stored


# --------------------------------------------------------------------------- the population


def _population_two_class(separation: float, slope: float, design: Design, n_bins: int = 15) -> dict[str, float]:
    """Two classes at infinite sample size, by integration over the score difference: the top-label
    binned ECE (sum_b |P_b gap_b|), the RMS binned error (sqrt(sum_b P_b gap_b^2), the target of
    metrics.calibration.calibration_error_debiased), both with the equal-width bins of
    metrics.calibration.ece, and the Brier skill against the training prior (1 - E[(p1 - y)^2] /
    E[(pi - y)^2]). The test set's class shares (`test_shares`) weight the two classes; the probe's logit
    carries the training prior."""
    sd = np.sqrt(2 * design.variance)
    t = np.linspace(-separation - 12 * sd, separation + 12 * sd, 400_001)
    prior1, test1 = design.prevalence, float(design.test_shares(2)[1])
    positive, negative = test1 * sps.norm.pdf(t, separation, sd), (1 - test1) * sps.norm.pdf(t, -separation, sd)
    density = positive + negative
    logit = np.log(prior1 / (1 - prior1)) + separation * t / design.variance
    truth = np.log(test1 / (1 - test1)) + separation * t / design.variance
    p1, q1 = expit(slope * logit), expit(truth)
    confidence = np.maximum(p1, 1 - p1)
    correct = np.where(p1 >= 0.5, q1, 1 - q1)
    bins = np.searchsorted(np.arange(1, n_bins) / n_bins, confidence, side="left")
    step = t[1] - t[0]
    gap = np.bincount(bins, weights=(correct - confidence) * density, minlength=n_bins) * step
    mass = np.bincount(bins, weights=density, minlength=n_bins) * step
    occupied = mass > 0
    brier = float(((positive * (1 - p1) ** 2 + negative * p1**2) * step).sum())
    return {
        "ece": float(np.abs(gap).sum()),
        "rms": float(np.sqrt((gap[occupied] ** 2 / mass[occupied]).sum())),
        "brier_skill": 1.0 - brier / (test1 * (1 - prior1) ** 2 + (1 - test1) * prior1**2),
    }


POPULATION_CASES = 40_000  # more than two classes: the population is this fixed sample of the model
_MANY_CLASS_NODES = 3  # Gauss-Hermite nodes over the seed effect with more than two classes (40 with two)
_REFIT_NODES = 7  # Gauss-Hermite nodes over the refit effect


def is_two_class(design: Design) -> bool:
    task = design.tasks[0]
    return design.classes(task) == 2 and task not in design.multi_label_tasks


@lru_cache(maxsize=8)
def _population_sample(k: int, priors: tuple[float, ...], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Class labels in the priors' exact proportions and standard normal class noise, from a fixed seed."""
    counts = np.floor(np.asarray(priors) * n).astype(int)
    counts[int(np.argmax(priors))] += n - counts.sum()
    y = np.repeat(np.arange(k), counts)
    return y, np.random.default_rng(20_240_611).standard_normal((n, k))


def _class_aurocs(y: np.ndarray, scores: np.ndarray) -> list[float]:
    """One-vs-rest AUROC per class from ranks (continuous scores: no ties)."""
    n, k = scores.shape
    out = []
    for c in range(k):
        ranks = np.empty(n)
        ranks[np.argsort(scores[:, c])] = np.arange(1, n + 1)
        positive = y == c
        n_pos = positive.sum()
        out.append(float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (n - n_pos))))
    return out


@lru_cache(maxsize=4096)
def many_class_values(separation: float, slope: float, priors: tuple[float, ...], shares: tuple[float, ...],
                       variance: float, profile: tuple[float, ...] = (), belief: float | None = None
                       ) -> tuple[float, float, tuple[float, ...]]:
    """(macro AUROC, Brier skill against the priors, AUROC per class) of the model on the population sample
    of a test set with class `shares`; `belief`: the separation the probe was fitted at, where it differs
    from the data's (perturbations)."""
    k = len(priors)
    y, xi = _population_sample(k, shares, POPULATION_CASES)
    prior = np.asarray(priors)
    shape = np.asarray(profile) if profile else np.ones(k)
    belief = separation if belief is None else belief
    z = np.sqrt(variance) * xi
    z += (separation * shape)[y][:, None] * np.eye(k)[y]
    if profile:
        means = belief * shape
        logits = slope * (np.log(prior) + (means * z - means**2 / 2) / variance)
    else:
        logits = slope * (np.log(prior) + (belief / variance) * z)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    total = p.sum(axis=1, keepdims=True)
    p /= total
    log_p = logits - np.log(total)
    brier = float((p**2).sum(axis=1).mean() - 2 * p[np.arange(len(y)), y].mean() + 1)
    shares = np.bincount(y, minlength=k) / len(y)
    prior_brier = float(axis_math.prior_brier_single_label(prior, shares))
    per_class = _class_aurocs(y, log_p) if belief != 0 else [0.5] * k  # belief 0: one prediction for every case
    return float(np.mean(per_class)), 1.0 - brier / prior_brier, tuple(per_class)


def population_key(design: Design) -> tuple[tuple[float, ...], tuple[float, ...], float]:
    k = design.classes(design.tasks[0])

    def rounded(values: np.ndarray) -> tuple[float, ...]:
        return tuple(float(q) for q in np.round(values, 12))

    return rounded(design.priors(k)), rounded(design.test_shares(k)), float(design.variance)


def population_auroc(separation: float, slope: float, design: Design, profile: tuple[float, ...] = (),
                     belief: float | None = None) -> float:
    """The population macro AUROC of an encoder with this separation, slope and class profile (one task);
    `belief`: the separation its probe was fitted at (perturbed images: the clean one)."""
    if is_two_class(design):
        return float(sps.norm.cdf(separation / np.sqrt(design.variance)))
    return many_class_values(float(separation), float(slope), *population_key(design), tuple(profile),
                              None if belief is None else float(belief))[0]


def population_brier_skill(separation: float, slope: float, design: Design, profile: tuple[float, ...] = ()) -> float:
    if is_two_class(design):
        return _population_two_class(separation, slope, design)["brier_skill"]
    return many_class_values(float(separation), float(slope), *population_key(design), tuple(profile))[1]


def curve_axes(truth: EncoderTruth, design: Design, auroc, perturbed=None) -> tuple[float, float]:
    """(label efficiency, robustness) of `truth`, with `auroc(separation)` the population AUROC at its slope
    and `perturbed(separation)` that of its clean probe on images of this separation (default `auroc`)."""
    perturbed = perturbed or auroc
    nodes, weights = np.polynomial.hermite_e.hermegauss(40 if is_two_class(design) else _MANY_CLASS_NODES)
    weights = weights / weights.sum()
    fractions = sorted(design.fractions)
    clean = auroc(truth.separation)
    curve = []
    for f in fractions:
        mu = truth.separation * design.label_factor(truth.hunger, f)
        curve.append(clean if f == 1.0 else float(sum(w * auroc(mu * (1 + design.seed_sd * x)) for x, w in zip(nodes, weights))))
    by_severity = {s: perturbed(truth.separation * (1 - truth.fragility * s / 5)) for s in design.severities}
    pert = [by_severity[s] for _ in design.perturbations for s in design.severities]
    efficiency = float(axis_math.label_efficiency(np.array(curve), fractions)) if len(fractions) > 1 else np.nan
    return efficiency, float(axis_math.robustness(np.array(pert))) if pert else np.nan


def truth_axes(truth: EncoderTruth, design: Design) -> dict[str, float]:
    profile = truth.class_profile
    efficiency, robustness = curve_axes(
        truth, design, lambda mu: population_auroc(mu, truth.slope, design, profile),
        lambda mu: population_auroc(mu, truth.slope, design, profile, belief=truth.separation))
    return {
        "discrimination": population_auroc(truth.separation, truth.slope, design, profile),
        "calibration": population_brier_skill(truth.separation, truth.slope, design, profile),
        "label_efficiency": efficiency,
        "robustness": robustness,
    }


def _expected_axes(truth: EncoderTruth, design: Design, over_refits: bool) -> dict[str, float]:
    if not (over_refits and truth.refit_sd > 0):
        return truth_axes(truth, design)
    nodes, weights = np.polynomial.hermite_e.hermegauss(_REFIT_NODES)
    weights = weights / weights.sum()
    values = [truth_axes(replace(truth, separation=truth.separation * (1 + truth.refit_sd * x)), design) for x in nodes]
    return {axis: float(sum(w * v[axis] for w, v in zip(weights, values))) for axis in AXES}


def training_sample_covariance(truth: EncoderTruth, design: Design) -> np.ndarray:
    """The covariance (A, A), axes in AXES order, of one task's population axes over fresh training samples
    (the separation times 1 + refit_sd N(0, 1), `realise_refits`): what K refits estimate, known here."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(_REFIT_NODES)
    weights = weights / weights.sum()
    at_nodes = [truth_axes(replace(truth, separation=truth.separation * (1 + truth.refit_sd * x)), design) for x in nodes]
    values = np.array([[axes[a] for a in AXES] for axes in at_nodes])
    centred = np.nan_to_num(values - weights @ values)
    return (centred * weights[:, None]).T @ centred


def population_axes(design: Design, over_refits: bool = False) -> pd.DataFrame:
    """The population value of each axis (one task): seed-averaged expectations. `over_refits`: also
    averaged over probe refits on fresh training sets (each encoder's `refit_sd`)."""
    rows = {truth.name: _expected_axes(truth, design, over_refits) for truth in design.encoders}
    return pd.DataFrame(rows).T[list(AXES)]


def realise_refits(design: Design, rng: np.random.Generator) -> Design:
    """The design as one benchmark run sees it: each encoder with `refit_sd` > 0 gets, per task, the
    separation of one probe fitted on that task's fresh training set, separation * (1 + refit_sd * N(0, 1)),
    independent between tasks since every task has its own training split (one task: `separation` itself;
    several: `task_separations`, with `separation` the first task's); the others are unchanged (and draw
    nothing from `rng`)."""
    encoders = []
    for t in design.encoders:
        if t.refit_sd <= 0:
            encoders.append(t)
            continue
        realised = tuple(float(v) for v in t.separation * (1 + t.refit_sd * rng.normal(size=len(design.tasks))))
        encoders.append(replace(t, separation=realised[0], refit_sd=0.0,
                                task_separations=realised if len(realised) > 1 else ()))
    return replace(design, encoders=tuple(encoders))


def population_calibration_errors(design: Design) -> pd.DataFrame:
    """Per encoder, the population ECE and RMS calibration error (what the displays estimate)."""
    return pd.DataFrame({t.name: _population_two_class(t.separation, t.slope, design) for t in design.encoders}).T


def population_crs(design: Design, reference: str, config: CRSDefinition, over_refits: bool = False) -> pd.Series:
    values = population_axes(design, over_refits)
    ref = list(values.index).index(reference)
    return pd.Series(crs_batch(values.to_numpy(), ref, config, list(AXES)).crs, index=values.index)
