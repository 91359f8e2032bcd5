"""Simulator designs calibrated to real runs (docs/bootstrap.md, "Real-calibrated cohorts"): the step from
measured records and per-case predictions to a `simulation.Design` whose population axes equal the
measured ones. `design_from_records` reads the cohort; `fit_truth` meets each encoder's four axes (and,
with more than two classes, its per-class AUROC); `prediction_behaviour` reads the shared case difficulty
and each encoder's confidence. Pure functions; the model they fit is simulation.cohort's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.optimize import brentq, minimize_scalar
from scipy.special import log_softmax

from crsbench.metrics import classification as metrics
from crsbench.results.predictions import Predictions
from crsbench.results.records import list_field
from crsbench.simulation.cohort import (Design, EncoderTruth, curve_axes, is_two_class, population_key, many_class_values,
                                         truth_axes, population_auroc, population_brier_skill)


def _solve(f, low: float, high: float, xtol: float = 1e-6) -> float:
    """The root of a monotone f in [low, high]; the nearer end where f does not change sign there."""
    f_low, f_high = f(low), f(high)
    if f_low * f_high > 0:
        return low if abs(f_low) < abs(f_high) else high
    return float(brentq(f, low, high, xtol=xtol))


def auroc_slope(separation: float, slope: float, design: Design, profile: tuple[float, ...] = ()) -> float:
    """d AUROC / d separation, by central difference."""
    step = 1e-3 * max(abs(separation), 0.1)
    return (population_auroc(separation + step, slope, design, profile)
            - population_auroc(separation - step, slope, design, profile)) / (2 * step)


def _auroc_curve(slope: float, design: Design, top: float, profile: tuple[float, ...] = (), belief: float | None = None,
                 low: float = 0.0):
    """AUROC(separation) at this slope on [low, top]: exact with two classes, else a cubic spline
    through 17 evaluations on the population sample (fit_truth polishes what it solves on it)."""
    if is_two_class(design):
        return lambda mu: population_auroc(mu, slope, design)
    from scipy.interpolate import CubicSpline

    grid = np.linspace(low, top, 17)
    spline = CubicSpline(grid, [population_auroc(mu, slope, design, profile, belief) for mu in grid])
    return lambda mu: float(spline(np.clip(mu, low, top)))


def fit_class_profile(class_auroc: Sequence[float], design: Design, iterations: int = 10) -> tuple[float, ...]:
    """Relative class means (mean 1) whose one-vs-rest AUROCs at separation 1 and slope 1 have the shape
    of `class_auroc` (more than two classes): fixed-point steps r_c <- r_c probit(target_c) / probit(model_c),
    with r_c kept at or above 0.02. A class the others' separation already lifts above its target stays at
    that floor."""
    target = sps.norm.ppf(np.clip(np.asarray(class_auroc, dtype=float), 0.501, 0.999))
    profile = target / target.mean()
    for _ in range(iterations):
        model = np.asarray(many_class_values(1.0, 1.0, *population_key(design), tuple(profile))[2])
        profile = np.maximum(profile * target / sps.norm.ppf(np.clip(model, 0.501, 0.999)), 0.02)
    return tuple(float(v) for v in profile / profile.mean())


# Steeper over-confidence sends the model's probabilities to float32's 1.0 for negatives as well as positives
# (ties that bias the AUROC down), which real probes' logits do not reach.
MAX_SLOPE = 4.0


def fit_truth(name: str, target: Mapping[str, float], design: Design, *, confidence: float = 1.0,
              refit_sd: float = 0.0, class_auroc: Sequence[float] | None = None,
              class_profile: Sequence[float] | None = None) -> EncoderTruth:
    """The EncoderTruth whose population axes in `design` (one task) equal `target`.

    With more than two classes and `class_auroc` (the encoder's one-vs-rest AUROC per class), first the
    class profile (`fit_class_profile`, or `class_profile` as given): a probe that separates a frequent
    class well has a higher Brier skill at the same macro AUROC. Then the separation from the
    discrimination (macro AUROC); the slope from the Brier skill, on the side of 1 that `confidence`
    gives (> 1 over-confident, < 1 under-confident): a Brier skill above the calibrated model's maximum
    leaves slope 1, and one below what MAX_SLOPE reaches is met on the under-confident side; the hunger
    from the label efficiency; the fragility from the robustness (above 1 the most severe perturbation
    takes the AUROC below chance, as gaussian noise on 28 px images does to some encoders). With more
    than two classes the AUROC moves a little with the slope, so separation and slope are refined by
    two Newton steps, and hunger and fragility, solved on splines, by two secant steps on the population
    sample. A target outside what the model can reach is met as closely as it can (compare
    population_axes with the target).
    """
    auroc = float(np.clip(target["discrimination"], 0.5 + 1e-4, 1 - 1e-4))
    skill = float(target["calibration"])
    two = is_two_class(design)
    if two:
        profile = ()
    elif class_profile is not None:
        profile = tuple(float(v) for v in class_profile)
    else:
        profile = fit_class_profile(class_auroc, design) if class_auroc is not None else ()

    def slope_for(separation: float) -> float:
        if population_brier_skill(separation, 1.0, design, profile) <= skill:
            return 1.0

        def gap(s: float) -> float:
            return population_brier_skill(separation, s, design, profile) - skill

        if confidence > 1 and gap(MAX_SLOPE) <= 0:
            return _solve(gap, 1.0, MAX_SLOPE, 1e-4)
        return _solve(gap, 0.05, 1.0, 1e-4)  # under-confident, or over-confident beyond what MAX_SLOPE reaches

    if two:
        separation = _solve(lambda mu: population_auroc(mu, 1.0, design) - auroc, 1e-4, 12.0, 1e-6)
        slope = slope_for(separation)
    else:
        at_one = _auroc_curve(1.0, design, 8.0, profile)
        separation = _solve(lambda mu: at_one(mu) - auroc, 1e-4, 8.0, 1e-6)
        slope = slope_for(separation)
        for _ in range(2):
            gradient = auroc_slope(separation, slope, design, profile)
            separation = float(separation - (population_auroc(separation, slope, design, profile) - auroc) / gradient)
            slope = slope_for(separation)
    truth = EncoderTruth(name, separation, slope, hunger=0.0, fragility=0.0, refit_sd=refit_sd, class_profile=profile)
    reach = 2.0 * separation * (1 + 3 * design.seed_sd)  # hunger down to -1, seed effects to 3 sd
    curve = _auroc_curve(slope, design, reach, profile, low=-reach)
    exact = not two  # the spline's solution, polished on the population sample itself
    if len(design.fractions) > 1 and np.isfinite(target.get("label_efficiency", np.nan)):
        one = replace(design, perturbations=())
        hunger = _solve(lambda h: curve_axes(replace(truth, hunger=h), one, curve)[0] - target["label_efficiency"],
                        -1.0, 0.999, 1e-5)
        if exact:
            hunger = _secant(lambda h: truth_axes(replace(truth, hunger=h), one)["label_efficiency"]
                             - target["label_efficiency"], hunger, -1.0, 0.999)
        truth = replace(truth, hunger=hunger)
    if design.perturbations and np.isfinite(target.get("robustness", np.nan)):
        most = 5.0 / max(design.severities) * 2.0  # the most severe perturbation at minus the clean separation
        perturbed = _auroc_curve(slope, design, 1.5 * separation, profile, belief=separation, low=-1.5 * separation)
        fragility = _solve(lambda r: float(np.mean([perturbed(separation * (1 - r * s / 5)) for s in design.severities]))
                           - target["robustness"], -1.0, most, 1e-5)
        if exact:
            fragility = _secant(lambda r: float(np.mean([
                population_auroc(separation * (1 - r * s / 5), slope, design, profile, belief=separation)
                for s in design.severities])) - target["robustness"], fragility, -1.0, most)
        truth = replace(truth, fragility=fragility)
    return truth


def _secant(f, x: float, low: float, high: float, steps: int = 2) -> float:
    """Two secant steps from x (kept inside [low, high]): a spline's root made exact on the function itself."""
    x0, f0 = x, f(x)
    x1 = float(np.clip(x + 1e-3 * (1 if x < high else -1), low, high))
    for _ in range(steps):
        f1 = f(x1)
        if f1 == f0 or abs(f1) < 1e-7:
            break
        x0, f0, x1 = x1, f1, float(np.clip(x1 - f1 * (x1 - x0) / (f1 - f0), low, high))
    return x1 if abs(f(x1)) <= abs(f0) else x0


def _recalibration(labels: np.ndarray, probs: np.ndarray) -> float:
    """The factor t on the log-probabilities that maximises the test likelihood (softmax(t log p)):
    1 / t is the confidence, > 1 for an over-confident probe."""
    log_p = np.log(np.clip(probs.astype(np.float64), 1e-12, 1.0))

    def loss(log_t: float) -> float:
        return float(-log_softmax(np.exp(log_t) * log_p, axis=1)[np.arange(len(labels)), labels].mean())

    return float(np.exp(minimize_scalar(loss, bounds=(np.log(0.05), np.log(20.0)), method="bounded").x))


def prediction_behaviour(labels: np.ndarray, probs: Mapping[str, np.ndarray]) -> tuple[float, dict[str, float]]:
    """(difficulty_sd, confidence per encoder) from the clean 100%-label predictions on one test set.

    In the model the centred log-probability of the true class is linear in its class scores, whose
    case-level part (the difficulty, shared by every encoder) has variance difficulty_sd^2 of
    1 + difficulty_sd^2: the mean correlation rho, over pairs of encoders, of that quantity (less its
    class mean) gives difficulty_sd = sqrt(rho / (1 - rho)). The confidence is 1 / the factor on the
    log-probabilities that maximises the test likelihood (> 1: over-confident; the design's slope side).
    """
    labels = np.asarray(labels).astype(int)
    residual = {}
    for name, p in probs.items():
        log_p = np.log(np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1.0))
        true = (log_p - log_p.mean(axis=1, keepdims=True))[np.arange(len(labels)), labels]
        means = np.bincount(labels, weights=true) / np.maximum(np.bincount(labels), 1)
        residual[name] = true - means[labels]
    names = list(residual)
    pairs = [np.corrcoef(residual[a], residual[b])[0, 1] for i, a in enumerate(names) for b in names[i + 1:]]
    rho = float(np.clip(np.mean(pairs), 0.0, 0.95)) if pairs else 0.5
    return float(np.sqrt(rho / (1 - rho))), {name: 1.0 / _recalibration(labels, np.asarray(p)) for name, p in probs.items()}


def design_from_records(records: pd.DataFrame, predictions: Predictions, *,
                        refit_auroc_sd: Mapping[str, float] | None = None) -> Design:
    """A Design that reproduces a one-task cohort's measured profile and noise (docs/bootstrap.md).

    From the records (as `records_from_predictions` builds them from real probes) and their per-case
    predictions: the test-set size, cluster size, class count, training priors and test class shares; the label
    fractions, seeds, perturbations and severities; per encoder the four axes (compute_axes) and,
    with more than two classes, the one-vs-rest AUROC per class, met by `fit_truth`; the shared case
    difficulty and each encoder's confidence (`prediction_behaviour`); the seed spread `seed_sd`, the
    least-squares slope through 0 of the AUROC's sd over seeds on separation x dAUROC/dseparation, over
    encoders and fractions below 1; and each encoder's `refit_sd`, its AUROC sd over probe refits
    (`refit_auroc_sd`, measured elsewhere) over separation x dAUROC/dseparation.
    """
    from crsbench.scoring.axes import compute_axes

    rec = records
    tasks = rec["task"].unique()
    if len(tasks) != 1:
        raise ValueError(f"design_from_records takes one task, got {sorted(tasks)}")
    task = str(tasks[0])
    axes = compute_axes(rec).table
    encoders = list(axes.index)
    full = rec[(rec["condition_kind"] == "clean") & (rec["fraction"] == 1.0)].sort_values("seed").drop_duplicates("encoder")
    located = full.merge(predictions.index[["record_key", "test_set", "probs"]], on="record_key")
    cases = predictions.case_set(located["test_set"].iloc[0])
    labels = np.asarray(cases.labels).astype(int)
    probs = {row.encoder: predictions.probabilities(row.probs).astype(np.float64) for row in located.itertuples()}
    probs = {e: p / p.sum(axis=1, keepdims=True) for e, p in probs.items()}
    k = next(iter(probs.values())).shape[1]
    train = np.asarray(list_field(full.iloc[0]["positives_train"]), dtype=float)
    priors = train / train.sum()
    shares = np.bincount(labels, minlength=len(priors)) / len(labels)
    _, n_clusters = cases.cluster_codes()
    difficulty_sd, confidence = prediction_behaviour(labels, probs)
    class_auroc = {e: metrics.auroc_per_class("single_label", labels, p) for e, p in probs.items()}
    clean = rec[rec["condition_kind"] == "clean"]
    pert = rec[rec["condition_kind"] == "perturbation"]
    skeleton = Design(
        (), n_cases=len(labels), cluster_size=max(1, int(round(len(labels) / n_clusters))), n_classes=k,
        prevalence=float(priors[1]) if k == 2 else 0.4, difficulty_sd=difficulty_sd,
        seeds=tuple(int(s) for s in sorted(rec["seed"].unique())),
        fractions=tuple(float(f) for f in sorted(clean["fraction"].unique())),
        perturbations=tuple(sorted(pert["condition"].unique())),
        severities=tuple(int(s) for s in sorted(pert["severity"].unique())),
        tasks=(task,), class_priors=tuple(float(q) for q in priors) if k > 2 else (),
        test_priors=tuple(float(q) for q in shares),
    )

    def fit(design: Design) -> list[EncoderTruth]:
        return [fit_truth(e, axes.loc[e], design, confidence=confidence[e], class_auroc=class_auroc[e])
                for e in encoders]

    truths = fit(skeleton)
    below = clean[clean["fraction"] < 1.0]
    spread = below.groupby(["encoder", "fraction"])["auroc"].std(ddof=1)
    observed, gradients = [], []
    for truth in truths:
        for f in sorted(below["fraction"].unique()):
            mu = truth.separation * skeleton.label_factor(truth.hunger, f)
            if (truth.name, f) in spread.index and np.isfinite(spread[(truth.name, f)]):
                observed.append(spread[(truth.name, f)])
                gradients.append(mu * auroc_slope(mu, truth.slope, skeleton, truth.class_profile))
    if observed and np.dot(gradients, gradients) > 0:
        seed_sd = float(np.dot(observed, gradients) / np.dot(gradients, gradients))
        skeleton = replace(skeleton, seed_sd=seed_sd)
        truths = fit(skeleton)
    refits = dict(refit_auroc_sd or {})

    def refit_sd(t: EncoderTruth) -> float:
        gradient = t.separation * auroc_slope(t.separation, t.slope, skeleton, t.class_profile)
        return float(refits[t.name] / gradient) if refits.get(t.name) and gradient > 0 else 0.0

    return replace(skeleton, encoders=tuple(replace(t, refit_sd=refit_sd(t)) for t in truths))
