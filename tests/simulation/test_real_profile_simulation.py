"""P9-P14 and the probe's refit noise on simulated cohorts calibrated to real embeddings.

Four cohorts, each one task with three encoders (EfficientNet-Lite0 with its ImageNet weights at 64 px, or
96 px on PH2, and the floor baselines raw-pixels and colour-texture): RetinaMNIST (5 grades, 400 test cases),
PneumoniaMNIST (binary, 624 test cases; probes trained on a fixed stratified 800 of the 4,708 training images
and validated on 200), PH2 (3 classes, 200 lesions split 70/10/20 by crsbench's grouped stratified split: 40
test cases) from ../shared/data, and the demo's generated dermoscopy task (3 classes, 400 / 100 / 300
images). Per cohort the real run is a small protocol: the project's probe (crsbench.probe.linear; C grid 1e-4..1)
at 100% labels and at 10% for 5 seeds, on the clean test set and under gaussian_noise at severity 3, plus 4
refits at the chosen C on bootstrap resamples of the training split. Its records and per-case predictions
go through `simulation.fit.design_from_records`, which returns a Design with the real test-set size, priors
and test class shares whose population axes equal the measured ones (the Brier skill as near as the model
reaches), with the real shared case difficulty, seed spread and refit spread (docs/bootstrap.md,
"Real-calibrated cohorts"). The tests then draw benchmark runs from each design (a refit of every probe, a
test set, the seeds' subsets) and score them with the paired case-and-seed bootstrap. Figures and Monte
Carlo standard errors: docs/crs.md section 3 and docs/bootstrap.md; every test prints its own.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.scoring.axes import AXES, compute_axes
from crsbench.scoring.case_bootstrap import case_bootstrap
from crsbench.crs.definition import CRSConfig, crs_batch
from crsbench.simulation.cohort import (
    Design,
    population_axes,
    population_crs,
    realise_refits,
    records_from_predictions,
    simulate,
)
from crsbench.simulation.fit import design_from_records, fit_truth

from _shared_data import shared_file
from _worker_groups import one_worker_each

pytestmark = pytest.mark.slow

LITE0 = "lite0"
ENCODERS = (LITE0, "raw-pixels", "colour-texture")
FRACTIONS = (0.1, 1.0)
SEEDS = (0, 1, 2, 3, 4)
PERTURBATION = "gaussian_noise"
SEVERITIES = (3,)
REFITS = 4
C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)  # the project's grid without C = 10, never chosen here and 5x slower
PNEUMONIA_TRAIN, PNEUMONIA_VAL = 800, 200
COHORTS = ("retinamnist", "pneumoniamnist", "ph2", "demo-derm")
CONFIG = CRSConfig(n_boot=200, n_weight_draws=0)


# --------------------------------------------------------------------------- the real runs


@dataclass
class RealSplits:
    images: dict[str, list | np.ndarray]  # split -> uint8 [n, H, W, 3] (or a list of such images)
    labels: dict[str, np.ndarray]
    groups: np.ndarray | None = None  # test clusters
    lite0_size: int = 64


def _grey_to_rgb(images: np.ndarray) -> np.ndarray:
    return np.repeat(images[..., None], 3, axis=-1) if images.ndim == 3 else images


def _medmnist(name: str, rng: np.random.Generator) -> RealSplits:
    data = np.load(shared_file("medmnist", f"{name}.npz"))
    images = {s: _grey_to_rgb(data[f"{s}_images"]) for s in ("train", "val", "test")}
    labels = {s: data[f"{s}_labels"][:, 0].astype(int) for s in ("train", "val", "test")}
    if name == "pneumoniamnist":  # a fixed stratified subset of train and val keeps the cost down
        for split, size in (("train", PNEUMONIA_TRAIN), ("val", PNEUMONIA_VAL)):
            y = labels[split]
            keep = np.sort(np.concatenate([
                rng.choice(np.flatnonzero(y == c), int(round(size * np.mean(y == c))), replace=False) for c in (0, 1)]))
            images[split], labels[split] = images[split][keep], y[keep]
    return RealSplits(images, labels)


def _ph2() -> RealSplits:
    from PIL import Image

    from crsbench.datasets.splits import grouped_stratified_split

    labels = shared_file("ph2", "labels.csv")
    table = pd.read_csv(labels)
    classes = sorted(table["diagnosis"].unique())
    y = table["diagnosis"].map({c: i for i, c in enumerate(classes)}).to_numpy()
    split = grouped_stratified_split(y, table["image"].to_numpy(), (0.7, 0.1, 0.2), seed=0)
    pictures = [np.array(Image.open(labels.parent / "images" / f).convert("RGB")) for f in table["image"]]
    images = {s: [pictures[i] for i in np.flatnonzero(split == s)] for s in ("train", "val", "test")}
    return RealSplits(images, {s: y[split == s] for s in ("train", "val", "test")}, lite0_size=96)


def _demo() -> RealSplits:
    from crsbench.datasets.synthetic import demo_dataset

    dataset = demo_dataset("derm", n_train=400)  # 400 / 100 / 300 generated 64 px images
    parts = {s: dataset.split(s) for s in ("train", "val", "test")}
    images = {s: np.stack([p.images[i] for i in range(len(p))]) for s, p in parts.items()}
    return RealSplits(images, {s: np.asarray(p.labels).astype(int) for s, p in parts.items()}, parts["test"].groups)


def _encoder(name: str, lite0_size: int):
    from crsbench.encoders.registry import get_encoder

    return get_encoder("efficientnet-lite0", input_size=lite0_size) if name == LITE0 else get_encoder(name)


def _embed(encoder, images, batch: int = 256) -> np.ndarray:
    rule = encoder.spec.pixels()
    if isinstance(images, list):  # decoded files of slightly different sizes: one resize each
        return np.concatenate([encoder.encode(np.stack([rule.apply(im) for im in images[i:i + batch]]))
                               for i in range(0, len(images), batch)])
    return np.concatenate([encoder.encode(rule.apply_batch(images[i:i + batch])) for i in range(0, len(images), batch)])


def _perturbed(images, task: str, severity: int):
    from crsbench.perturbations import perturb

    ids = [f"{task}-test-{i}" for i in range(len(images))]
    if isinstance(images, list):
        return [perturb(im[None], [i], PERTURBATION, severity)[0] for im, i in zip(images, ids)]
    return perturb(np.ascontiguousarray(images), ids, PERTURBATION, severity)


@dataclass
class RealCohort:
    name: str
    records: pd.DataFrame
    predictions: object
    refit_auroc_sd: dict[str, float]
    seconds: float
    design: Design | None = None


def _auroc(y: np.ndarray, proba: np.ndarray) -> float:
    from crsbench.metrics import classification as metrics

    return metrics.auroc_macro("single_label", y, proba)


def _probes(task: str, name: str, stored: dict, y: dict, k: int, rng: np.random.Generator):
    """One encoder's probes: its prediction vectors on the grid, and the AUROC sd over refits."""
    from crsbench.probe.linear import ProbeConfig, fit_probe
    from crsbench.plan.subsets import fraction_subset

    def fit(rows: np.ndarray, config: ProbeConfig = ProbeConfig(c_grid=C_GRID)):
        return fit_probe("single_label", stored["train"][rows], y["train"][rows], stored["val"], y["val"], k,
                         config, device="cpu")

    vectors = []
    full = fit(np.arange(len(y["train"])))
    for seed in SEEDS:  # at 100% every seed fits on the same rows: one fit, shared
        vectors.append((name, seed, 1.0, "clean", "clean", 0, full.predict_proba(stored["test"])))
        for severity in SEVERITIES:
            vectors.append((name, seed, 1.0, "perturbation", PERTURBATION, severity,
                            full.predict_proba(stored[f"test@{severity}"])))
        for fraction in FRACTIONS[:-1]:
            rows = fraction_subset("single_label", y["train"], task, seed, fraction)
            vectors.append((name, seed, fraction, "clean", "clean", 0, fit(rows).predict_proba(stored["test"])))
    refits = []
    for _ in range(REFITS):  # at the C chosen on the whole split
        rows = rng.integers(0, len(y["train"]), len(y["train"]))
        if len(np.unique(y["train"][rows])) == k:
            refits.append(_auroc(y["test"], fit(rows, ProbeConfig(c_grid=(full.summary_c,))).predict_proba(stored["test"])))
    return vectors, float(np.std(refits, ddof=1))


def measure(task: str, splits: RealSplits, cache: Path) -> RealCohort:
    """The small real protocol of the module docstring: records and per-case predictions, and the
    AUROC sd over probe refits on bootstrap resamples of the training split."""
    import torch

    begun = started = time.perf_counter()
    threads = torch.get_num_threads()
    y = splits.labels
    k = int(max(v.max() for v in y.values())) + 1
    vectors, refit_sd = [], {}
    rng = np.random.default_rng(7)
    for name in ENCODERS:
        path = cache / f"{task}-{name}.npz"
        if path.exists():
            stored = dict(np.load(path))
        else:
            encoder = _encoder(name, splits.lite0_size)
            stored = {s: _embed(encoder, splits.images[s]) for s in ("train", "val", "test")}
            for severity in SEVERITIES:
                stored[f"test@{severity}"] = _embed(encoder, _perturbed(splits.images["test"], task, severity))
            np.savez(path, **stored)
        embedded = time.perf_counter()

        torch.set_num_threads(1)  # small solves: one thread, and no spinning against other work on the cores
        try:
            vectors_e, refit_sd[name] = _probes(task, name, stored, y, k, rng)
        finally:
            torch.set_num_threads(threads)
        vectors += vectors_e
        print(f"{task} {name}: embeddings {embedded - started:.1f} s, probes {time.perf_counter() - embedded:.1f} s")
        started = time.perf_counter()
    train_counts = np.bincount(y["train"], minlength=k)
    records, predictions = records_from_predictions(task, y["test"], vectors, train_counts, splits.groups)
    return RealCohort(task, records, predictions, refit_sd, time.perf_counter() - begun)


_REAL: dict[str, RealCohort] = {}


def real_cohort(name: str, cache: Path) -> RealCohort:
    """The measured cohort and its design, once per session."""
    if name not in _REAL:  # the real cohorts skip, with the path, when ../shared/data lacks their files
        rng = np.random.default_rng(0)
        splits = {"retinamnist": lambda: _medmnist("retinamnist", rng), "pneumoniamnist": lambda: _medmnist("pneumoniamnist", rng),
                  "ph2": _ph2, "demo-derm": _demo}[name]()
        cohort = measure(name, splits, cache)
        started = time.perf_counter()
        cohort.design = design_from_records(cohort.records, cohort.predictions, refit_auroc_sd=cohort.refit_auroc_sd)
        cohort.seconds += time.perf_counter() - started
        _REAL[name] = cohort
    return _REAL[name]


# --------------------------------------------------------------------------- simulated benchmark runs

REFERENCE = LITE0
REPETITIONS = 120
P11_REPETITIONS = 50
P12_REPETITIONS = 20
VARIANT_SEEDS = (0, 1, 2)
ANCHORS = CONFIG.anchor_vector(AXES)
SPANS = CONFIG.scale_vector(AXES)
WEIGHT = 100.0 / len(AXES)  # CRS points per unit of skill on one axis (equal weights)


def skill_units(values: np.ndarray) -> np.ndarray:
    return (values - ANCHORS) / SPANS


def _one(design: Design, truth) -> Design:
    return replace(design, encoders=(truth,))


def refit_polynomials(design: Design) -> dict[str, np.polynomial.Polynomial]:
    """Per encoder, its population axes (skill units) as a quartic in the refit effect g, through
    g = -2..2: the population a repetition's realised probes have, without integrating anew."""
    nodes = np.arange(-2, 3)
    out = {}
    for t in design.encoders:
        values = [population_axes(_one(design, replace(t, separation=t.separation * (1 + t.refit_sd * g), refit_sd=0.0)))
                  .to_numpy()[0] for g in nodes]
        u = skill_units(np.array(values))
        out[t.name] = [np.polynomial.Polynomial.fit(nodes, u[:, a], 4) for a in range(len(AXES))]
    return out


@dataclass
class Run:
    """REPETITIONS benchmark runs on one design: each draws every encoder's probe refit, a test set and
    the seeds' label subsets, and scores them with the paired case-and-seed bootstrap."""

    cohort: RealCohort
    expected: pd.Series  # population CRS averaged over probe refits: what the intervals should cover
    conditional: np.ndarray  # (R, E) population CRS of each repetition's realised probes
    points: np.ndarray  # (R, E) point CRS
    low: np.ndarray
    high: np.ndarray
    tiers: list[set[str]]
    tops: list[str]
    u_points: np.ndarray  # (R, E, A) point skill per axis
    u_conditional: np.ndarray  # (R, E, A) population skill per axis of the realised probes
    p13_checked: int = 0
    p13_mismatches: int = 0
    seconds: float = 0.0

    @property
    def design(self) -> Design:
        return self.cohort.design

    @property
    def encoders(self) -> list[str]:
        return [t.name for t in self.design.encoders]

    @property
    def best(self) -> str:
        return str(self.expected.idxmax())

    def own_noise(self) -> np.ndarray:
        """The pooled covariance (A, A) of an encoder's measurement noise in skill units, less the part
        every encoder shares (the same cases): what moves one encoder against another."""
        noise = self.u_points - self.u_conditional
        own = noise - noise.mean(axis=1, keepdims=True)
        e = noise.shape[1]
        return np.einsum("rea,reb->ab", own, own) / (own.shape[0] * own.shape[1]) * e / (e - 1)


_RUNS: dict[str, Run] = {}


def benchmark_runs(name: str, cache: Path) -> Run:
    if name in _RUNS:
        return _RUNS[name]
    cohort = real_cohort(name, cache)
    design = cohort.design
    started = time.perf_counter()
    names = [t.name for t in design.encoders]
    ref = names.index(REFERENCE)
    expected = population_crs(design, REFERENCE, CONFIG, over_refits=True)
    polynomials = refit_polynomials(design)
    rng = np.random.default_rng(2026)
    rows = {key: [] for key in ("conditional", "points", "low", "high", "u_points", "u_conditional")}
    tiers, tops = [], []
    axis_scores = None
    checked = mismatches = 0
    for repetition in range(REPETITIONS):
        realised = realise_refits(design, rng)
        g = [(r.separation / t.separation - 1) / t.refit_sd if t.refit_sd else 0.0
             for r, t in zip(realised.encoders, design.encoders)]
        u_true = np.array([[p(x) for p in polynomials[e]] for e, x in zip(names, g)])
        records, stored = simulate(realised, rng)
        axis_scores = axis_scores or compute_axes(records, delta=CONFIG.delta)
        config = CONFIG.model_copy(update={"seed": repetition})
        boot = case_bootstrap(records, stored, axis_scores, REFERENCE, config)
        overall = boot.overall
        values = boot.axis_intervals[boot.axis_intervals["scope"] == "overall"].pivot(
            index="encoder", columns="axis", values="value").loc[names, list(AXES)].to_numpy()
        skill = WEIGHT * u_true.sum(axis=1)
        rows["conditional"].append(skill - skill[ref])
        rows["points"].append(overall.intervals.loc[names, "crs"].to_numpy())
        rows["low"].append(overall.intervals.loc[names, "ci_low"].to_numpy())
        rows["high"].append(overall.intervals.loc[names, "ci_high"].to_numpy())
        rows["u_points"].append(skill_units(values))
        rows["u_conditional"].append(u_true)
        tiers.append(set(overall.leading_tier))
        tops.append(overall.top)
        # P13: the order under every reference, and (first repetitions) the tier and P(rank 1)
        order = np.argsort(-crs_batch(values, ref, CONFIG, AXES).crs, kind="stable")
        for other in range(len(names)):
            checked += 1
            mismatches += not np.array_equal(np.argsort(-crs_batch(values, other, CONFIG, AXES).crs, kind="stable"), order)
        if repetition < 2:
            for other in names:
                again = case_bootstrap(records, stored, axis_scores, other, config).overall
                checked += 1
                mismatches += (set(again.leading_tier) != tiers[-1]
                               or not np.allclose(again.intervals.loc[names, "p_rank1"], overall.intervals.loc[names, "p_rank1"]))
    run = Run(cohort, expected, *(np.array(rows[k]) for k in ("conditional", "points", "low", "high")), tiers, tops,
              np.array(rows["u_points"]), np.array(rows["u_conditional"]), checked, mismatches,
              time.perf_counter() - started)
    _RUNS[name] = run
    return run


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("real-embeddings")


# each cohort's measured run is built once per process: one worker runs all of its tests
@pytest.fixture(scope="module", params=one_worker_each("real-profile", COHORTS))
def run(request, cache) -> Run:
    return benchmark_runs(request.param, cache)


def se(p: float, n: int) -> float:
    return float(np.sqrt(max(p * (1 - p), 1e-12) / n))


def _table(run: Run) -> str:
    d = run.design
    lines = [f"{run.cohort.name}: {d.n_cases} test cases, {d.n_classes} classes, difficulty sd {d.difficulty_sd:.2f}, "
             f"seed sd {d.seed_sd:.3f}; real run {run.cohort.seconds:.0f} s, {REPETITIONS} simulated runs {run.seconds:.0f} s"]
    real = compute_axes(run.cohort.records).table[list(AXES)]
    population = population_axes(d)
    for t in d.encoders:
        lines.append(f"  {t.name:15s} real {np.round(real.loc[t.name].to_numpy(), 3)} design {np.round(population.loc[t.name].to_numpy(), 3)}"
                     f" | separation {t.separation:.3f} slope {t.slope:.2f} hunger {t.hunger:.3f} fragility {t.fragility:.3f}"
                     f" refit sd {t.refit_sd:.3f} (AUROC {run.cohort.refit_auroc_sd[t.name]:.4f})")
    return "\n".join(lines)


def test_the_design_reproduces_the_real_profile_and_noise(run):
    """The design's population axes are the measured ones (the Brier skill as near as the model reaches),
    and its test-set noise is the real data's: per encoder and axis, the sd of the simulated point
    estimates against the real cohort's own case-and-seed bootstrap standard error."""
    print("\n" + _table(run))
    real = compute_axes(run.cohort.records).table[list(AXES)]
    gap = population_axes(run.design) - real.loc[population_axes(run.design).index]
    boot = case_bootstrap(run.cohort.records, run.cohort.predictions, compute_axes(run.cohort.records), REFERENCE,
                          CRSConfig(n_boot=400, n_weight_draws=0))
    rows = boot.axis_intervals[boot.axis_intervals["scope"] == "overall"]
    width = rows.pivot(index="encoder", columns="axis", values="ci_high") - rows.pivot(index="encoder", columns="axis", values="ci_low")
    real_se = (width.loc[run.encoders, list(AXES)] / (2 * 1.96) / SPANS).to_numpy()
    simulated_sd = (run.u_points - run.u_conditional).std(axis=0, ddof=1)
    ratio = simulated_sd / real_se
    print(f"  population - real: max |gap| per axis {gap.abs().max().round(4).to_dict()}")
    print(f"  simulated sd / real bootstrap se, per axis (median over encoders): "
          f"{dict(zip(AXES, np.round(np.median(ratio, axis=0), 2)))}; all {np.round(ratio, 2).tolist()}")
    assert gap["discrimination"].abs().max() < 1e-3
    assert gap[["label_efficiency", "robustness"]].abs().max().max() < 0.01
    assert gap["calibration"].abs().max() < 0.03  # above the calibrated model's maximum: docs/bootstrap.md
    assert 0.67 < np.median(ratio) < 1.5


def test_p14_intervals_cover_the_tier_holds_the_best_and_the_point_top_beats_chance(run):
    """P14 at the real test-set size: coverage of the population CRS of the probes each run fitted, the
    tier holding the true best (by the CRS expected over refits) and leaving out encoders whose
    population gap exceeds the noise, the point top against chance, and the point estimate's bias."""
    names, r = run.encoders, REPETITIONS
    others = [i for i, e in enumerate(names) if e != REFERENCE]
    covered = (run.low[:, others] <= run.conditional[:, others]) & (run.conditional[:, others] <= run.high[:, others])
    coverage = float(covered.mean())
    holds = float(np.mean([run.best in tier for tier in run.tiers]))
    top = float(np.mean([t == run.best for t in run.tops]))
    sizes = float(np.mean([len(t) for t in run.tiers]))
    best = names.index(run.best)
    spread = (run.points[:, [best]] - run.points).std(axis=0, ddof=1)
    far = [e for i, e in enumerate(names) if e != run.best and run.expected[run.best] - run.expected[e] > 3 * spread[i]]
    left_out = float(np.mean([[e not in tier for e in far] for tier in run.tiers])) if far else float("nan")
    bias = run.points.mean(axis=0) - run.expected[names].to_numpy()
    bias_se = run.points.std(axis=0, ddof=1) / np.sqrt(r)
    nearest = {e: min([abs(run.expected[e] - run.expected[f]) for f in names if f != e]) for e in names}
    print(f"\n{run.cohort.name}: population CRS (expected over refits) {run.expected.round(2).to_dict()}, true best {run.best}")
    print(f"  coverage {coverage:.3f} (MC s.e. {se(0.95, r * len(others)):.3f}; per encoder "
          f"{dict(zip([names[i] for i in others], covered.mean(axis=0).round(3)))})")
    print(f"  tier holds the true best {holds:.3f} (s.e. {se(0.95, r):.3f}), mean size {sizes:.2f} of {len(names)};"
          f" far encoders {far} left out {left_out:.3f}")
    print(f"  point top = true best {top:.3f} (s.e. {se(top, r):.3f}; chance {1 / len(names):.3f})")
    print(f"  bias {dict(zip(names, bias.round(2)))} (s.e. {dict(zip(names, bias_se.round(2)))}); nearest gaps "
          f"{ {e: round(v, 2) for e, v in nearest.items()} }")
    assert 0.92 - 3 * se(0.95, r * len(others)) <= coverage <= 0.98 + 3 * se(0.95, r * len(others))
    assert holds >= 0.95 - 3 * se(0.95, r)
    assert top - 3 * se(top, r) > 1 / len(names)
    assert not far or left_out >= 0.9
    assert all(abs(b) - 3 * s < 0.25 * nearest[e] for e, b, s in zip(names, bias, bias_se) if e != REFERENCE)


def test_p10_redrawing_one_axis_moves_the_top_only_within_the_tier(run):
    """P10: the measurement noise of one axis drawn again (the next run's noise on that axis, added to
    this run's population values), and of all four (a fresh test set and seeds for the same probes): how
    often the new point top falls outside this run's tier, against the 5 % the tier allows. A whole fresh
    run (a refit of every probe too) is reported beside: the tier does not cover the refit."""
    names, r = run.encoders, REPETITIONS - 1
    noise = run.u_points - run.u_conditional
    outside, changed = {}, {}
    for a, axis in enumerate(AXES):
        hybrid = run.u_points[:-1].copy()
        hybrid[:, :, a] = run.u_conditional[:-1, :, a] + noise[1:, :, a]
        new_tops = [names[i] for i in hybrid.sum(axis=2).argmax(axis=1)]
        outside[axis] = float(np.mean([t not in tier for t, tier in zip(new_tops, run.tiers[:-1])]))
        changed[axis] = float(np.mean([t != old for t, old in zip(new_tops, run.tops[:-1])]))
    measured = run.u_conditional[:-1] + noise[1:]
    fresh_tops = [names[i] for i in measured.sum(axis=2).argmax(axis=1)]
    fresh = float(np.mean([t not in tier for t, tier in zip(fresh_tops, run.tiers[:-1])]))
    rerun = float(np.mean([t not in tier for t, tier in zip(run.tops[1:], run.tiers[:-1])]))
    bound = 0.05 + 3 * se(0.05, r)
    print(f"\n{run.cohort.name} P10: new top outside the tier, one axis re-drawn {outside}; top changed at all {changed};"
          f" all four re-drawn {fresh:.3f}; a whole fresh run, refits included {rerun:.3f}; bound {bound:.3f}")
    assert max(outside.values()) <= bound
    assert fresh <= bound


def test_p13_the_order_and_the_tier_do_not_depend_on_the_reference(run):
    print(f"\n{run.cohort.name} P13: {run.p13_mismatches} of {run.p13_checked} orders and tiers differed")
    assert run.p13_checked > 0 and run.p13_mismatches == 0


def test_refit_noise_inside_the_target_coverage(run):
    """The target is each encoder's CRS expected over probe refits on fresh training sets (refit sd from 5
    bootstrap refits of the real probe, at its chosen C): the intervals resample test cases and seeds but
    never refit at 100 % labels, so they cover it less often than the CRS of the probes a run fitted. The
    shortfall must be the one the refit spread predicts: with z the normal multiplier of the coverage of
    the fitted probes' CRS, s the interval's half-width / z and r the CRS sd over refits (the reference's
    refit included), 2 Phi(z s / sqrt(s^2 + r^2)) - 1, within 3 Monte Carlo standard errors."""
    from scipy.stats import norm

    names, r = run.encoders, REPETITIONS
    others = [i for i, e in enumerate(names) if e != REFERENCE]
    target = run.expected[names].to_numpy()[None, others]
    covered = (run.low[:, others] <= target) & (target <= run.high[:, others])
    conditional = (run.low[:, others] <= run.conditional[:, others]) & (run.conditional[:, others] <= run.high[:, others])
    refit = (run.conditional - run.expected[names].to_numpy()).std(axis=0, ddof=1)[others]
    z = norm.ppf((1 + conditional.mean(axis=0)) / 2)
    half = (run.high - run.low)[:, others].mean(axis=0) / 2
    predicted = 2 * norm.cdf(half / np.sqrt((half / z) ** 2 + refit**2)) - 1
    coverage, expected = float(covered.mean()), float(predicted.mean())
    mc = se(coverage, r * len(others))
    print(f"\n{run.cohort.name} refit: coverage of the CRS expected over refits {coverage:.3f} (MC s.e. {mc:.3f}), "
          f"predicted from the refit spread {expected:.3f}; of the fitted probes' CRS {conditional.mean():.3f}; "
          f"CRS sd over refits {dict(zip([names[i] for i in others], refit.round(2)))}, interval half-widths "
          f"{dict(zip([names[i] for i in others], half.round(2)))}")
    assert abs(coverage - expected) <= 3 * mc


# --------------------------------------------------------------------------- P9, P11, P12


def test_p9_no_axis_decides_for_more_than_half_of_a_cohort_with_the_real_noise(run):
    """P9 with the real noise: 2,000 cohorts of 15 encoders around this cohort's mean profile, each axis's
    true spread 4 times its measurement noise (comparable signal-to-noise), the estimates drawn with the
    covariance of one encoder's noise against another's measured in the simulated runs (skill units,
    correlated across axes). The deciding axis of an encoder is the axis contributing most to its gap to
    the encoder ranked just above it."""
    covariance = run.own_noise()
    sd = np.sqrt(np.diag(covariance))
    root = np.linalg.cholesky(covariance + 1e-12 * np.eye(len(AXES)))
    centre = skill_units(population_axes(run.design).to_numpy()).mean(axis=0)
    rng = np.random.default_rng(9)
    shares, axes = [], np.zeros(len(AXES))
    for _ in range(2000):
        estimated = centre + rng.normal(size=(15, len(AXES))) * 4 * sd + rng.normal(size=(15, len(AXES))) @ root.T
        contribution = WEIGHT * estimated
        order = np.argsort(-contribution.sum(axis=1))
        deciding = np.abs(contribution[order[:-1]] - contribution[order[1:]]).argmax(axis=1)
        counts = np.bincount(deciding, minlength=len(AXES))
        shares.append(counts.max() / len(deciding))
        axes += counts
    mean, mc = float(np.mean(shares)), float(np.std(shares) / np.sqrt(len(shares)))
    correlation = covariance / np.outer(sd, sd)
    print(f"\n{run.cohort.name} P9: noise sd per axis (skill units) {dict(zip(AXES, sd.round(4)))}, largest |correlation| "
          f"{np.abs(correlation - np.eye(len(AXES))).max():.2f}; largest share decided by one axis {mean:.3f} "
          f"(MC s.e. {mc:.4f}); deciding axes overall {dict(zip(AXES, (axes / axes.sum()).round(3)))}")
    assert mean + 3 * mc < 0.5


@dataclass
class Variants:
    """Encoders built around one real encoder (the base) in its cohort's design, fitted to target profiles."""

    run: Run
    design: Design
    kinds: dict[str, tuple[str, str, float]]  # name -> (property, axis, lead or deficit in skill units)
    population: pd.Series  # population CRS against the base
    achieved: pd.DataFrame  # population skill per axis, less the base's
    points: dict[str, np.ndarray]  # property -> (R, V) point CRS against the base, variants in `kinds` order
    axis_noise: np.ndarray  # sd of one encoder's point skill per axis over runs
    seconds: float


_VARIANTS: dict[str, Variants] = {}


def point_axes(records: pd.DataFrame, names: list[str]) -> np.ndarray:
    """compute_axes's four point values (E, A) on a complete simulated grid, by direct arithmetic: the seed-mean
    clean AUROC at 100 %, the Brier skill against the training prior, the label efficiency of the seed-mean
    curve (linear in the AUROCs, so the mean of the per-seed values) and the mean perturbed AUROC."""
    from crsbench.crs import axis_math

    clean = records[records["condition_kind"] == "clean"]
    curve = clean.groupby(["encoder", "fraction"])["auroc"].mean().unstack().loc[names]
    fractions = [float(f) for f in curve.columns]
    full = clean[clean["fraction"] == 1.0]
    first = full.iloc[0]
    prior = np.asarray(json.loads(first["positives_train"]), dtype=float)
    test = np.asarray(json.loads(first["positives_eval"]), dtype=float)
    prior_brier = float(axis_math.prior_brier_single_label(prior / first["n_train"], test))
    brier = full.groupby("encoder")["brier"].mean().loc[names].to_numpy()
    robust = records[records["condition_kind"] == "perturbation"].groupby("encoder")["auroc"].mean().loc[names].to_numpy()
    return np.column_stack([curve[1.0].to_numpy(), 1 - brier / prior_brier,
                            axis_math.label_efficiency(curve.to_numpy(), fractions), robust])
P12_DEFICITS = (0.01, 0.02, 0.04)  # skill units: 0.005, 0.01 and 0.02 AUROC, or 0.01 to 0.04 Brier skill
MAX_LEAD = 0.15
BRIER_ROOM = 0.12  # at least: the base's Brier skill below the calibrated maximum, room to move the AUROC alone


def variants(name: str, cache: Path) -> Variants:
    """The base: lite0's separation, hunger, fragility and class profile, under-confident enough to leave its
    Brier skill below the calibrated maximum by BRIER_ROOM or 1.5 times the calibration lead of P11, so that
    every axis can move alone. P11, per axis a:
    an encoder of its own (own case noise) leading the base by L = max(0.04, 2 sd of the axis difference of
    two encoders), at most MAX_LEAD, skill units on a and trailing it by L / 6 on every other axis. P12, per
    axis a: twins of the base (the same case noise and seed effects, one parameter changed) with deficits
    P12_DEFICITS on a, all other axes held."""
    if name in _VARIANTS:
        return _VARIANTS[name]
    from scipy.optimize import brentq

    from crsbench.simulation.cohort import population_brier_skill

    run = benchmark_runs(name, cache)
    started = time.perf_counter()
    covariance = run.own_noise()
    lead_noise = np.sqrt(2 * np.diag(covariance))
    lite0 = run.encoders.index(LITE0)
    axis_noise = (run.u_points - run.u_conditional)[:, lite0].std(axis=0, ddof=1)
    skeleton = replace(run.design, encoders=())
    base = next(t for t in run.design.encoders if t.name == LITE0)
    most = population_brier_skill(base.separation, 1.0, skeleton, base.class_profile)
    leads = np.clip(2 * lead_noise, 0.04, MAX_LEAD)
    room = max(BRIER_ROOM, 1.5 * leads[AXES.index("calibration")])
    slope = brentq(lambda s: population_brier_skill(base.separation, s, skeleton, base.class_profile) - (most - room),
                   0.01, 1.0, xtol=1e-4)
    base = replace(base, refit_sd=0.0, slope=slope)
    u_base = skill_units(population_axes(_one(skeleton, base)).to_numpy()[0])
    kinds, truths = {}, [base]
    for a, axis in enumerate(AXES):
        lead = float(leads[a])
        targets = {f"p11-{axis}": ("P11", lead, np.where(np.arange(len(AXES)) == a, lead, -lead / 6), "")}
        for deficit in P12_DEFICITS:
            targets[f"p12-{axis}-{deficit}"] = ("P12", deficit, -deficit * (np.arange(len(AXES)) == a), base.name)
        for label, (kind, size, step, twin) in targets.items():
            target = dict(zip(AXES, ANCHORS + (u_base + step) * SPANS))
            truth = fit_truth(label, target, skeleton, confidence=base.slope, class_profile=base.class_profile)
            truths.append(replace(truth, twin_of=twin))
            kinds[label] = (kind, axis, float(size))
    design = replace(run.design, encoders=tuple(truths))
    population = population_crs(design, base.name, CONFIG)
    achieved = pd.DataFrame(skill_units(population_axes(design).to_numpy()) - u_base, index=population.index, columns=AXES)
    rng = np.random.default_rng(11)
    points = {}
    for kind, repetitions in (("P11", P11_REPETITIONS), ("P12", P12_REPETITIONS)):
        cohort = replace(design, encoders=(base, *(t for t in truths[1:] if kinds[t.name][0] == kind)), seeds=VARIANT_SEEDS)
        names = [t.name for t in cohort.encoders]
        rows = []
        for repetition in range(repetitions):
            records, _ = simulate(cohort, rng)
            values = point_axes(records, names)
            if repetition == 0:  # the shortcut is compute_axes's arithmetic
                np.testing.assert_allclose(values, compute_axes(records).table.loc[names, list(AXES)].to_numpy(), atol=1e-9)
            rows.append(crs_batch(values, 0, CONFIG, AXES).crs[1:])
        points[kind] = np.array(rows)
    result = Variants(run, design, kinds, population.drop(base.name), achieved.drop(base.name), points,
                      axis_noise, time.perf_counter() - started)
    _VARIANTS[name] = result
    return result


def test_p11_a_lead_beyond_the_scale_and_the_noise_on_one_axis_ranks_above(run, cache):
    """P11: an encoder leading the base by L on one axis and trailing it by L / 6 (within the noise) on the
    others ranks above it in the population; its point CRS, each encoder with its own case noise, ranks
    above in the share of runs its noise predicts (Phi of the population gap over the sd of the point
    difference), within 3 MC s.e."""
    from scipy.stats import norm

    v = variants(run.cohort.name, cache)
    names = [n for n, (kind, _, _) in v.kinds.items() if kind == "P11"]
    points = v.points["P11"]
    above = (points > 0).mean(axis=0)
    predicted = norm.cdf(v.population[names].to_numpy() / points.std(axis=0, ddof=1))
    pooled, expected = float(above.mean()), float(predicted.mean())
    mc = se(pooled, P11_REPETITIONS * len(names))
    print(f"\n{run.cohort.name} P11 ({v.seconds:.0f} s for P11 and P12): lead L "
          f"{dict((v.kinds[n][1], round(v.kinds[n][2], 3)) for n in names)}; achieved skill differences "
          f"{v.achieved.loc[names].round(3).to_numpy().tolist()}; population CRS {v.population[names].round(2).to_dict()}; "
          f"point CRS above the base {dict(zip(names, above.round(3)))}, pooled {pooled:.3f} (MC s.e. {mc:.3f}), "
          f"predicted from the noise {expected:.3f}")
    for n in names:
        _, axis, lead = v.kinds[n]
        others = [a for a in AXES if a != axis]
        assert v.achieved.loc[n, axis] >= 0.9 * lead and (v.achieved.loc[n, others] >= -lead / 3).all()
        assert v.population[n] > 0
    assert abs(pooled - expected) <= 3 * mc


def test_p12_a_larger_deficit_never_scores_higher_and_beyond_the_noise_scores_lower(run, cache):
    """P12 on twins of the base (same cases, same noise, one parameter changed): deficits of 0.01, 0.02
    and 0.04 skill units on one axis, the other axes held. The population CRS falls by 25 points per unit
    of skill lost; the mean point CRS falls with every step of the deficit (within 3 MC s.e.); where a step
    is beyond twice the noise of the paired point difference (its sd over runs), the larger deficit scores
    higher in at most 1 - Phi(2) of runs plus 3 MC s.e.; and a deficit beyond twice that noise scores
    strictly below the base in at least Phi(2) of the runs, less 3 MC s.e."""
    from scipy.stats import norm

    v = variants(run.cohort.name, cache)
    twins = [n for n, (kind, _, _) in v.kinds.items() if kind == "P12"]
    points = v.points["P12"]
    rows, rising, beyond, steps_beyond, mean_steps = [], 0, [], [], []
    for axis in AXES:
        labels = [f"p12-{axis}-{d}" for d in P12_DEFICITS]
        columns = [twins.index(n) for n in labels]
        path = np.concatenate([np.zeros((len(points), 1)), points[:, columns]], axis=1)
        increments = np.diff(path, axis=1)
        rising += int((increments > 1e-9).any(axis=1).sum())
        sizes = WEIGHT * np.diff((0.0, *P12_DEFICITS))
        increment_noise = increments.std(axis=0, ddof=1)
        steps_beyond += [float((step > 1e-9).mean()) for step, size, sd in zip(increments.T, sizes, increment_noise)
                         if size > 2 * sd]
        mean_steps += [(float(step.mean()), float(sd / np.sqrt(len(step)))) for step, sd in zip(increments.T, increment_noise)]
        noise = points[:, columns].std(axis=0, ddof=1)
        below = (points[:, columns] < 0).mean(axis=0)
        beyond += [b for b, d, s in zip(below, P12_DEFICITS, noise) if WEIGHT * d > 2 * s]
        rows.append({"axis": axis, "population": v.population[labels].round(3).tolist(),
                     "expected": [round(-WEIGHT * d, 3) for d in P12_DEFICITS], "paired_noise": noise.round(3).tolist(),
                     "below": below.round(3).tolist(),
                     "others_moved": float(v.achieved.loc[labels, [a for a in AXES if a != axis]].abs().to_numpy().max())})
    table = pd.DataFrame(rows).set_index("axis")
    print(f"\n{run.cohort.name} P12 (twins; CRS in points; runs where a larger deficit scored higher somewhere on the "
          f"path: {rising} of {P12_REPETITIONS * len(AXES)}; where the step is beyond twice its noise: "
          f"{np.round(steps_beyond, 3).tolist()}; share below the base where the deficit is beyond twice the noise: "
          f"{np.round(beyond, 3).tolist()})\n{table.to_string()}")
    assert (table["others_moved"] < 0.002).all()
    for row in rows:
        assert np.allclose(row["population"], row["expected"], atol=0.02, rtol=0.03)
    assert all(mean < 3 * mc for mean, mc in mean_steps)
    assert steps_beyond and max(steps_beyond) <= 1 - norm.cdf(2) + 3 * se(1 - norm.cdf(2), P12_REPETITIONS)
    assert beyond and min(beyond) >= norm.cdf(2) - 3 * se(norm.cdf(2), P12_REPETITIONS)
