"""Per-case predictions drawn from a known population: what validates the case-level bootstrap
(PROTOCOL section 8) and times it on a cohort of the demo's shape.

A cohort of encoders sees one test set. Cases come in clusters (a patient's images) that share a
difficulty d (a latent shift of every class score, the same for every encoder); each encoder adds
its own per-case noise. Encoder e with separation mu' scores class c of case i as
z = mu' [y_i = c] + d_ic + eps_eic (unit noise, V = 1 + difficulty_sd^2) and predicts
p_c proportional to exp(slope * (log prior_c + mu' z_c / V)): slope 1 is the population's own
posterior (perfectly calibrated), other slopes are over- or under-confident. mu' = separation at
100% labels; at a label fraction f it is scaled by 1 - hunger * log10(1/f) / log10(1/f_min), times
1 + seed_sd * N(0, 1) per seed; a perturbation at severity k of 5 scales it by 1 - fragility * k / 5.
For two classes the population AUROC is Phi(mu' / sqrt(V)) and the population binned calibration
errors (ECE, RMS) integrals, so the population axes and CRS are known exactly (population_axes).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.special import expit

from crsbench import axis_math, metrics
from crsbench.axes import AXES
from crsbench.crs import CRSConfig, crs_batch
from crsbench.records import RECORD_SCHEMA_VERSION
from crsbench.predictions import CaseSet, Predictions, probability_hash


@dataclass(frozen=True)
class EncoderTruth:
    name: str
    separation: float
    slope: float = 1.0
    hunger: float = 0.3
    fragility: float = 0.2


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

    def classes(self, task: str) -> int:
        return self.task_classes[self.tasks.index(task)] if self.task_classes else self.n_classes

    @property
    def variance(self) -> float:
        return 1.0 + self.difficulty_sd**2

    def priors(self, k: int = 2) -> np.ndarray:
        if k == 2:
            return np.array([1 - self.prevalence, self.prevalence])
        return np.full(k, 1.0 / k)

    def label_factor(self, hunger: float, fraction: float) -> float:
        lowest = min(self.fractions)
        return 1.0 - hunger * np.log10(1 / fraction) / np.log10(1 / lowest) if lowest < 1 else 1.0


def _probabilities(z: np.ndarray, separation: float, slope: float, design: Design, multi_label: bool) -> np.ndarray:
    if multi_label:
        logit = np.log(design.prevalence / (1 - design.prevalence)) + separation / design.variance * (z - separation / 2)
        return expit(slope * logit)
    logits = slope * (np.log(design.priors(z.shape[1])) + separation * z / design.variance)
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def simulate(design: Design, rng: np.random.Generator) -> tuple[pd.DataFrame, Predictions]:
    """Records (the metrics of each prediction vector) and the per-case predictions of one cohort."""
    rows, index, cases_by_id, probs_by_hash = [], [], {}, {}
    n = design.n_cases
    n_clusters = -(-n // design.cluster_size)
    cluster = np.repeat(np.arange(n_clusters), design.cluster_size)[:n]
    for task in design.tasks:
        k = design.classes(task)
        multi = task in design.multi_label_tasks
        if multi:
            y = (rng.random((n, k)) < design.prevalence).astype(float)
            positive = y
        else:
            y = rng.choice(k, size=n, p=design.priors(k))
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
        for truth in design.encoders:
            noise = rng.normal(size=(n, k))
            seed_effect = {(s, f): rng.normal() for s in design.seeds for f in design.fractions}

            def vector(separation: float) -> np.ndarray:
                p = _probabilities(positive * separation + difficulty + noise, separation, truth.slope, design, multi)
                return p.astype(np.float32)

            grid = [(f, "clean", "clean", 0) for f in design.fractions]
            grid += [(1.0, "perturbation", name, sev) for name in design.perturbations for sev in design.severities]
            for seed in design.seeds:
                for fraction, kind, condition, severity in grid:
                    separation = truth.separation * design.label_factor(truth.hunger, fraction)
                    if fraction < 1.0:
                        separation *= 1 + design.seed_sd * seed_effect[(seed, fraction)]
                    if kind == "perturbation":
                        separation *= 1 - truth.fragility * severity / 5
                    probs = vector(separation)
                    digest = probability_hash(probs)
                    probs_by_hash[digest] = probs
                    key = hashlib.sha256(f"{task}|{truth.name}|{seed}|{fraction}|{condition}|{severity}".encode()).hexdigest()[:32]
                    proba = probs.astype(np.float64)
                    if not multi:
                        proba /= proba.sum(axis=1, keepdims=True)
                    rows.append({
                        "record_key": key, "encoder": truth.name, "task": task, "task_type": task_type,
                        "seed": seed, "fraction": fraction, "condition_kind": kind, "condition": condition,
                        "severity": severity, "auroc": metrics.auroc_macro(task_type, y, proba),
                        "ece": metrics.ece(task_type, y, proba), "brier": metrics.brier(task_type, y, proba),
                        "nll": metrics.nll(task_type, y, proba), "suite_hash": "simulated",
                        "schema_version": RECORD_SCHEMA_VERSION, **counts,
                    })
                    index.append({"record_key": key, "test_set": test_set, "probs": digest, "encoder": truth.name,
                                  "task": task, "seed": seed, "fraction": fraction, "condition_kind": kind,
                                  "condition": condition, "severity": severity})
    stored = Predictions.in_memory(pd.DataFrame(index), cases_by_id, probs_by_hash)
    return pd.DataFrame(rows), stored


# --------------------------------------------------------------------------- the population


def _population_two_class(separation: float, slope: float, design: Design, n_bins: int = 15) -> dict[str, float]:
    """Two classes at infinite sample size, by integration over the score difference: the top-label
    binned ECE (sum_b |P_b gap_b|), the RMS binned error (sqrt(sum_b P_b gap_b^2), the target of
    metrics.calibration_error_debiased), both with the equal-width bins of metrics.ece, and the
    Brier skill against the prior (1 - E[(p1 - y)^2] / (pi (1 - pi)))."""
    sd = np.sqrt(2 * design.variance)
    t = np.linspace(-separation - 12 * sd, separation + 12 * sd, 400_001)
    prior1 = design.prevalence
    positive, negative = prior1 * sps.norm.pdf(t, separation, sd), (1 - prior1) * sps.norm.pdf(t, -separation, sd)
    density = positive + negative
    logit = np.log(prior1 / (1 - prior1)) + separation * t / design.variance
    p1, q1 = expit(slope * logit), expit(logit)
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
        "brier_skill": 1.0 - brier / (prior1 * (1 - prior1)),
    }


def population_axes(design: Design) -> pd.DataFrame:
    """The population value of each axis (two classes, one task): seed-averaged expectations."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    root_v = np.sqrt(design.variance)
    fractions = sorted(design.fractions)
    rows = {}
    for truth in design.encoders:
        clean = sps.norm.cdf(truth.separation / root_v)
        curve = []
        for f in fractions:
            mu = truth.separation * design.label_factor(truth.hunger, f)
            curve.append(clean if f == 1.0 else float((weights * sps.norm.cdf(mu * (1 + design.seed_sd * nodes) / root_v)).sum()))
        pert = [sps.norm.cdf(truth.separation * (1 - truth.fragility * s / 5) / root_v)
                for _ in design.perturbations for s in design.severities]
        rows[truth.name] = {
            "discrimination": clean,
            "calibration": _population_two_class(truth.separation, truth.slope, design)["brier_skill"],
            "label_efficiency": float(axis_math.label_efficiency(np.array(curve), fractions)),
            "robustness": float(axis_math.robustness(np.array(pert))),
        }
    return pd.DataFrame(rows).T[list(AXES)]


def population_calibration_errors(design: Design) -> pd.DataFrame:
    """Per encoder, the population ECE and RMS calibration error (what the displays estimate)."""
    return pd.DataFrame({t.name: _population_two_class(t.separation, t.slope, design) for t in design.encoders}).T


def population_crs(design: Design, reference: str, config: CRSConfig) -> pd.Series:
    values = population_axes(design)
    ref = list(values.index).index(reference)
    return pd.Series(crs_batch(values.to_numpy(), ref, config, list(AXES)).crs, index=values.index)
