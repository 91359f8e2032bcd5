"""The training-sample term calibrated on real images, without the simulator: a pool design on PneumoniaMNIST
(docs/bootstrap.md, "Calibrated on real data").

The 5,856 PneumoniaMNIST images (its train, val and test splits pooled) are split once, stratified: a
held-out set of HELD_OUT images and a training pool of the rest. Every encoder embeds the pool, the held-out
set and the held-out set under gaussian noise (severity 3) once; a draw then costs probe fits only. A draw
is one benchmark run at training size n: n training and n / 6 validation images drawn without replacement
from the pool (together at most a tenth of it, so draws are nearly independent samples), a test set of
TEST_CASES images drawn from the held-out set, and the project's probe (C tuned on the validation set) at
100 % labels and at 10 % for three seeds, on the clean and the noisy test images. Per candidate estimator of
the training-sample spread, K = 4 more fits:

- bootstrap, C re-tuned: the product's refits (`plan.subsets.refit_resample`, C chosen again);
- bootstrap, C fixed: the same resamples at the C the run chose;
- half-samples: n / 2 rows drawn without replacement, C re-tuned, their spread about the run's own fit
  (`refits.spread_about`).

Each draw's probes are also scored on the whole held-out set. Over the draws of one size that score's
spread is the true spread over training samples (the test set fixed, only the training sample, its
validation rows and the seeds' subsets vary), and its mean is the target: the CRS expected over training
samples of that size. Per estimator:

- sd ratio: the estimator's sd of each encoder's CRS (a difference to the reference) and axis differences,
  root mean square over draws, over the true sd; its s.e. by a bootstrap over draws;
- coverage of the target by the run's 95 % interval (test cases, seeds and the estimator's term), its s.e.
  counted by draws; the mean width over the oracle's (the same construction, the same K, with the true
  covariance of the axes over draws in place of the estimate); the mean leading-tier size;
- the planted too-narrow estimator (no term: these fitted probes) and too-wide one (the product's term
  doubled) beside them, and the seconds of probe fits the estimator adds per draw.

Each finished draw is saved under `--store` (its folder named by the size, the pool, the test sets and the
estimators carried), and a rerun reads the saved ones back and goes on; the oracle, which needs the truth
over every draw, is scored last (about 0.3 s of CPU a draw). `--estimators retuned` carries only the
product's estimator (with the planted two and the oracle): 3.4 s of CPU a draw at n = 280 with three
encoders (measured over 144 draws), the 12 main and 12 refit fits about 75 ms each and the rest the axes of
the run and of each refit (the product's, in pandas) and two bootstraps; all three estimators take about
twice the fits and three times the axes.

`--generated` runs the same design on rows drawn from a known population (`simulation.embedding_samples`:
three encoders of 64-256 dimensions, 20,000 rows) in place of embedded images: the simulator's training
sample realised at the embedding level, each refit the project's probe on freshly drawn rows.

    python benchmarks/pool_calibration.py --smoke
    nice -n 10 python benchmarks/pool_calibration.py --draws 200 --sizes 280 140 --workers 2
    nice -n 10 python benchmarks/pool_calibration.py --draws 1000 --sizes 280 --estimators retuned --store draws
    nice -n 10 python benchmarks/pool_calibration.py --draws 900 600 --sizes 280 140 --estimators retuned --store draws
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.crs.definition import CRSConfig, crs_batch
from crsbench.results.record_set import Records
from crsbench.scoring.axes import compute_axes
from crsbench.scoring.case_bootstrap import case_bootstrap, training_spread
from crsbench.scoring.refits import RefitSpread, refit_axes, spread_about
from crsbench.simulation.cohort import records_from_predictions
from crsbench.simulation.training_samples import COVERAGE_FLOOR, WIDTH_BAND

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
NEEDS_SHARED_DATA = ("medmnist/pneumoniamnist.npz",)
HEADER = "pool "
TASK = "pneumoniamnist"
HELD_OUT = 1500
TEST_CASES = 320
REFITS = 4
SEEDS = (0, 1, 2)
FRACTIONS = (0.1, 1.0)
SEVERITY = 3
C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)  # the project's grid without C = 10, never chosen on these embeddings
CONFIG = CRSConfig(n_boot=100, n_weight_draws=0)  # 100 draws per run: six bootstraps a draw on two shared cores
# the reference is the first by name (the axes sort encoders by name): colour-texture
ENCODERS = {"lite0": ("efficientnet-lite0", {"input_size": 32}), "raw-pixels": ("raw-pixels", {}),
            "colour-texture": ("colour-texture", {})}
ESTIMATORS = ("bootstrap, C re-tuned", "bootstrap, C fixed", "half-samples")
ESTIMATOR_KEYS = dict(zip(ESTIMATORS, ("retuned", "fixed", "halves")))  # short names for the command line and the store
PLANTED = ("none (too narrow)", "C re-tuned, doubled (too wide)")


def pool_split(labels: np.ndarray, held_out: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(pool rows, held-out rows), the held-out set stratified by class."""
    rng = np.random.default_rng(seed)
    out = np.concatenate([rng.choice(np.flatnonzero(labels == c), int(round(held_out * np.mean(labels == c))), replace=False)
                          for c in np.unique(labels)])
    return np.setdiff1d(np.arange(len(labels)), out), np.sort(out)


def embed_all(images: np.ndarray, held_out: np.ndarray, encoders: dict, task: str = TASK) -> dict[str, dict[str, np.ndarray]]:
    """Per encoder: every image's vector ("all") and the held-out images' under gaussian noise ("noisy")."""
    from crsbench.encoders.registry import get_encoder
    from crsbench.perturbations import perturb

    rgb = np.repeat(images[..., None], 3, axis=-1) if images.ndim == 3 else images
    noisy = perturb(np.ascontiguousarray(rgb[held_out]), [f"{task}-{i}" for i in held_out], "gaussian_noise", SEVERITY)
    out = {}
    for name, (registered, options) in encoders.items():
        encoder = get_encoder(registered, **options)
        rule = encoder.spec.pixels()

        def embed(x: np.ndarray) -> np.ndarray:
            return np.concatenate([encoder.encode(rule.apply_batch(x[i:i + 256])) for i in range(0, len(x), 256)])

        out[name] = {"all": embed(rgb), "noisy": embed(noisy)}
    return out


def embedded(images: np.ndarray, held_out: np.ndarray, encoders: dict, task: str, cached: Path | None) -> dict:
    """`embed_all`, read from `cached` where it was kept (per encoder, so a subset of its encoders reads too)."""
    if cached is not None and cached.exists():
        stored = np.load(cached)
        return {e: {"all": stored[f"{e}/all"], "noisy": stored[f"{e}/noisy"]} for e in encoders}
    vectors = embed_all(images, held_out, encoders, task)
    if cached is not None:
        np.savez(cached, **{f"{e}/{k}": v for e, parts in vectors.items() for k, v in parts.items()})
    return vectors


GENERATED_ROWS = 20_000  # n + n / 6 = 326 of the 18,500 in the pool at n = 280: draws nearly independent


def generated_pool(rows: int, held: int, seed: int = 0, encoders: tuple | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(labels, pool rows, held-out rows, vectors) drawn from the known population of
    `simulation.embedding_samples` (its ENCODERS where `encoders` is None) in place of embedded images; the
    noisy vectors for the held-out rows."""
    from crsbench.simulation.embedding_samples import ENCODERS as GENERATED, draw_labels, draw_rows, perturb_rows

    rng = np.random.default_rng(seed)
    labels = draw_labels(rows, rng)
    pool, held_out = pool_split(labels, held)
    vectors = {}
    for encoder in GENERATED if encoders is None else encoders:
        x = draw_rows(encoder, labels, rng)
        vectors[encoder.name] = {"all": x, "noisy": perturb_rows(encoder, x[held_out], rng)}
    return labels, pool, held_out, vectors


def _fit(x, y, xv, yv, c_grid=C_GRID, n_classes=2):
    from crsbench.probe.linear import ProbeConfig, fit_probe

    return fit_probe("single_label", x, y, xv, yv, n_classes, ProbeConfig(c_grid=c_grid), device="cpu")


def one_draw(vectors: dict, labels: np.ndarray, pool: np.ndarray, held_out: np.ndarray, n: int, draw: int,
             test_cases: int, estimators: tuple[str, ...] = ESTIMATORS) -> dict:
    """One run at training size n (module docstring): its records per estimator, and its held-out axes."""
    rng = np.random.default_rng([n, draw])
    rows = rng.choice(pool, n + n // 6, replace=False)
    train, val = rows[:n], rows[n:]
    test = np.sort(rng.choice(len(held_out), test_cases, replace=False))
    halves = [np.sort(rng.choice(n, n // 2, replace=False)) for _ in range(REFITS)]
    return fit_run(vectors, labels, train, val, held_out, test, estimators, halves)


def fit_run(vectors: dict, labels: np.ndarray, train: np.ndarray, val: np.ndarray, held_out: np.ndarray,
            test: np.ndarray, estimators: tuple[str, ...], halves: list[np.ndarray], task: str = TASK,
            task_type: str = "single_label") -> dict:
    """One benchmark run: the probes fitted on `train` (C tuned on `val`), at 100 % and 10 % labels, with the
    K fits of each estimator, scored on the held-out rows `test` (indices into `held_out`, whose noisy vectors
    are `vectors[e]["noisy"]`) as records, and on the whole held-out set as axes."""
    import torch

    from crsbench.plan.subsets import fraction_subset, refit_resample

    torch.set_num_threads(1)  # small solves: one thread, and no spinning against the other worker
    y, yv = labels[train], labels[val]
    n_classes = int(labels.max()) + 1
    run, extra, heldout_vectors, seconds = [], {e: [] for e in estimators}, [], dict.fromkeys(estimators, 0.0)
    for name, v in vectors.items():
        x, xv = v["all"][train], v["all"][val]
        clean, noisy = v["all"][held_out], v["noisy"]
        full = _fit(x, y, xv, yv, n_classes=n_classes)
        fits = [(seed, 1.0, full) for seed in SEEDS]
        for seed in SEEDS:
            subset = fraction_subset(task_type, y, task, seed, FRACTIONS[0])
            fits.append((seed, FRACTIONS[0], _fit(x[subset], y[subset], xv, yv, n_classes=n_classes)))
        for seed, fraction, probe in fits:
            for kind, condition, severity, images in (("clean", "clean", 0, clean), ("perturbation", "gaussian_noise", SEVERITY, noisy)):
                if kind == "perturbation" and fraction < 1.0:
                    continue
                p = probe.predict_proba(images)
                run.append((name, seed, fraction, kind, condition, severity, p[test]))
                heldout_vectors.append((name, seed, fraction, kind, condition, severity, p))
        for estimator in estimators:
            started = time.perf_counter()
            for k in range(1, REFITS + 1):
                if estimator == "half-samples":
                    subset = halves[k - 1]
                else:
                    subset = refit_resample(task, k, len(train))
                grid = (full.summary_c,) if estimator == "bootstrap, C fixed" else C_GRID
                probe = _fit(x[subset], y[subset], xv, yv, grid, n_classes)
                for kind, condition, severity, images in (("clean", "clean", 0, clean[test]),
                                                          ("perturbation", "gaussian_noise", SEVERITY, noisy[test])):
                    extra[estimator].append((name, SEEDS[0], 1.0, kind, condition, severity, probe.predict_proba(images), k))
            seconds[estimator] += time.perf_counter() - started
    counts = np.bincount(y, minlength=n_classes)
    records = {e: records_from_predictions(task, labels[held_out][test], run + extra[e], counts, task_type=task_type)
               for e in estimators}
    held = records_from_predictions(task, labels[held_out], heldout_vectors, counts, task_type=task_type)[0]
    held_axes = compute_axes(held, delta=CONFIG.delta)
    return {"records": records, "held_axes": held_axes.task_values(0)[0].mean(axis=1), "seconds": seconds,
            "names": list(held_axes.encoders), "axes": held_axes.task_values(0)[1]}


def estimator_spread(estimator: str, records: pd.DataFrame, axis_scores) -> RefitSpread:
    """The training-sample spread each candidate estimates from its K fits."""
    records = Records.of(records)
    if estimator != "half-samples":
        return training_spread(records, axis_scores)
    by_task, notes, _ = refit_axes(records, axis_scores)
    cube, names = axis_scores.task_values(0)
    return spread_about(by_task, {TASK: cube.mean(axis=1)}, {TASK: names}, notes)


def crs_sd(spread: RefitSpread, ref: int, axes) -> np.ndarray:
    """(E, A + 1): the sd of each encoder's axis differences to the reference, and of its CRS, the term implies."""
    (d,) = spread.deviations.values()
    variance_rows = len(d) - 1
    diff = d - d[:, [ref]]
    crs = crs_batch(d, ref, CONFIG, list(axes)).crs - crs_batch(np.zeros_like(d[:1]), ref, CONFIG, list(axes)).crs
    return np.sqrt(np.concatenate([(diff**2).sum(axis=0), (crs**2).sum(axis=0)[:, None]], axis=1) / variance_rows)


def interval(records: pd.DataFrame, stored, axis_scores, spread: RefitSpread | None, seed: int, names) -> dict:
    config = CONFIG.model_copy(update={"seed": seed})
    boot = case_bootstrap(records, stored, axis_scores, names[0], config, spread=spread)
    result = boot.overall if spread is None or spread.present else boot.fitted_probes["overall"]
    table = result.intervals.loc[names]
    return {"crs": table["crs"].to_numpy(), "low": table["ci_low"].to_numpy(), "high": table["ci_high"].to_numpy(),
            "tier": result.tier.loc[names, "in_leading_tier"].to_numpy().astype(bool), "boot": boot}


def score_draw(out: dict, draw: int) -> dict:
    """Per estimator the draw carries (and the planted two) the run's interval, tier and implied sd."""
    names = out["names"]
    ref = 0  # the reference is the first encoder
    scored = {}
    for estimator, (records, stored) in out["records"].items():
        axis_scores = compute_axes(records, delta=CONFIG.delta)
        assert list(axis_scores.encoders) == names and axis_scores.task_values(0)[1] == out["axes"]
        spread = estimator_spread(estimator, records, axis_scores)
        scored[estimator] = interval(records, stored, axis_scores, spread, draw, names)
        scored[estimator]["sd"] = crs_sd(spread, ref, axis_scores.task_values(0)[1])
        if estimator == ESTIMATORS[0]:
            none = scored[estimator]["boot"].fitted_probes["overall"]
            scored[PLANTED[0]] = {"crs": none.intervals.loc[names, "crs"].to_numpy(),
                                  "low": none.intervals.loc[names, "ci_low"].to_numpy(),
                                  "high": none.intervals.loc[names, "ci_high"].to_numpy(),
                                  "tier": none.tier.loc[names, "in_leading_tier"].to_numpy().astype(bool)}
            scored[PLANTED[1]] = interval(records, stored, axis_scores, spread.scaled(2.0), draw, names)
    for value in scored.values():
        value.pop("boot", None)
    return scored


def score_oracle(saved: Path, oracle: np.ndarray, draw: int) -> dict:
    """The oracle's interval for a saved draw: the product's records with the true covariance over all draws
    (rows whose sample covariance it is) in place of the refits' estimate, the same t for the same K."""
    out = pd.read_pickle(saved)["draw"]
    records, stored = out["records"][ESTIMATORS[0]]
    axis_scores = compute_axes(records, delta=CONFIG.delta)
    truth = RefitSpread({TASK: oracle}, {TASK: REFITS}, (), {TASK: REFITS - 1})
    result = interval(records, stored, axis_scores, truth, draw, out["names"])
    result.pop("boot")
    return result


def draw_and_score(vectors: dict, labels: np.ndarray, pool: np.ndarray, held_out: np.ndarray, n: int, draw: int,
                   test_cases: int, estimators: tuple[str, ...], saved: Path) -> None:
    """One draw, scored by every estimator but the oracle (which needs every draw), saved when finished: a
    rerun finds it there and goes on with the next."""
    out = one_draw(vectors, labels, pool, held_out, n, draw, test_cases, estimators)
    partial = saved.with_suffix(".partial")
    pd.to_pickle({"draw": out, "scored": score_draw(out, draw)}, partial)
    partial.replace(saved)  # a draw interrupted while written is never read as finished


def _pool_map(function, args, workers: int) -> list:
    if workers <= 1:
        return [function(*a) for a in args]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(function, *zip(*args)))


def ratio_with_se(estimates: np.ndarray, truth: np.ndarray, rng: np.random.Generator, resamples: int = 400):
    """RMS(estimated sd) / sd(truth) over draws, elementwise, and its s.e. by a bootstrap over draws."""
    def ratio(rows):
        return np.sqrt((estimates[rows] ** 2).mean(axis=0)) / truth[rows].std(axis=0, ddof=1)

    point = ratio(np.arange(len(truth)))
    again = np.array([ratio(rng.integers(0, len(truth), len(truth))) for _ in range(resamples)])
    return point, again.std(axis=0, ddof=1)


def truth_table(draws: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(D, E, A + 1): each draw's held-out axis differences to the reference and CRS; and (E,) the target,
    the CRS expected over training samples (its mean over the draws)."""
    axes = draws[0]["axes"]
    held = np.stack([d["held_axes"] for d in draws])  # (D, E, A)
    crs = crs_batch(held, 0, CONFIG, list(axes)).crs  # (D, E); the reference is the first encoder
    return np.concatenate([held - held[:, [0]], crs[..., None]], axis=2), crs.mean(axis=0)


def checks(draws: list[dict], scored: list[dict]) -> dict[str, dict[str, float]]:
    """Per estimator scored: coverage of the target by draws and its s.e. counted by draws, the mean width
    over the oracle's, the mean tier size (the encoders other than the reference)."""
    _, target = truth_table(draws)
    oracle_width = np.mean([(s["oracle"]["high"] - s["oracle"]["low"])[1:].mean() for s in scored])
    out = {}
    for estimator in [e for e in (*ESTIMATORS, *PLANTED, "oracle") if e in scored[0]]:
        low = np.stack([s[estimator]["low"] for s in scored])
        high = np.stack([s[estimator]["high"] for s in scored])
        covered = ((low <= target) & (target <= high))[:, 1:].mean(axis=1)
        out[estimator] = {"coverage": covered.mean(), "coverage s.e.": covered.std(ddof=1) / np.sqrt(len(covered)),
                          "width / oracle": (high - low)[:, 1:].mean() / oracle_width,
                          "tier": np.mean([s[estimator]["tier"].sum() for s in scored])}
    return out


def two_sided(checked: dict[str, float]) -> dict[str, bool]:
    """The acceptance on one estimator's `checks`: coverage at least the floor less 3 s.e. counted by draws
    (fails a too-narrow term), the mean width within the band of the oracle's (fails a too-wide one)."""
    return {"coverage": checked["coverage"] >= COVERAGE_FLOOR - 3 * checked["coverage s.e."],
            "width": WIDTH_BAND[0] <= checked["width / oracle"] <= WIDTH_BAND[1]}


def size_table(n: int, draws: list[dict], scored: list[dict], seconds: float, test_cases: int, held_out: int) -> str:
    names, axes = draws[0]["names"], draws[0]["axes"]
    others = list(range(1, len(names)))
    truth, _ = truth_table(draws)
    rng = np.random.default_rng(n)
    lines = [f"\npool training size {n} (+{n // 6} validation), {len(draws)} draws, test sets of {test_cases} "
             f"from {held_out} held out ({seconds:.0f} s); encoders {', '.join(names)}, reference {names[0]}",
             f"true sd over training samples, CRS: " + ", ".join(f"{names[e]} {truth[:, e, -1].std(ddof=1):.2f}" for e in others)]
    columns = [*axes, "crs"]
    lines.append(f"{'estimator':34s} {'sd ratio CRS (s.e.)':>22s} {'sd ratio by axis':>40s} {'coverage (s.e.)':>16s} "
                 f"{'width/oracle':>12s} {'tier':>5s} {'fit s/draw':>10s}")
    for estimator, checked in checks(draws, scored).items():
        ratio_text, axis_text, cost = "", "", ""
        if estimator in draws[0]["seconds"]:
            estimates = np.stack([s[estimator]["sd"] for s in scored])
            ratio, se = ratio_with_se(estimates[:, others], truth[:, others], rng)
            ratio_text = " ".join(f"{ratio[i, -1]:.2f}({se[i, -1]:.2f})" for i in range(len(others)))
            axis_text = " ".join(f"{columns[a][:4]} " + "/".join(f"{ratio[i, a]:.2f}" for i in range(len(others)))
                                 for a in range(len(axes)))
            cost = f"{np.mean([d['seconds'][estimator] for d in draws]):.1f}"
        lines.append(f"{estimator:34s} {ratio_text:>22s} {axis_text:>40s} {checked['coverage']:9.3f} "
                     f"({checked['coverage s.e.']:.3f}) {checked['width / oracle']:12.2f} {checked['tier']:5.2f} {cost:>10s}")
    return "\n".join(lines)


def truth_sd_with_se(draws: list[dict], rng: np.random.Generator, resamples: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """(E,) each encoder's true CRS-difference sd over training samples, and its s.e. by a bootstrap over draws."""
    crs = truth_table(draws)[0][:, :, -1]
    again = np.array([crs[rng.integers(0, len(crs), len(crs))].std(axis=0, ddof=1) for _ in range(resamples)])
    return crs.std(axis=0, ddof=1), again.std(axis=0, ddof=1)


def scaling_table(by_size: dict[int, list[dict]]) -> str:
    """The rule sd proportional to n ** -b checked across the sizes run: per encoder, the true CRS sd at each
    size (s.e. by draws) and b from the smallest and largest sizes, with its s.e. (the two sds' relative
    errors, independent draws, through the log); b = 0.5 is the 1 / sqrt(n) rule."""
    sizes = sorted(by_size)
    names = by_size[sizes[0]][0]["names"]
    measured = {n: truth_sd_with_se(by_size[n], np.random.default_rng(n)) for n in sizes}
    small, large = sizes[0], sizes[-1]
    lines = [f"\nscaling of the true CRS sd with the training size (sd ~ n^-b; b = 0.5 is 1/sqrt(n)), "
             f"draws {', '.join(f'{len(by_size[n])} at n = {n}' for n in sizes)}"]
    for e in range(1, len(names)):
        sds = ", ".join(f"n = {n} {measured[n][0][e]:.2f} ({measured[n][1][e]:.2f})" for n in sizes)
        (sd_small, se_small), (sd_large, se_large) = ((measured[n][0][e], measured[n][1][e]) for n in (small, large))
        span = np.log(large / small)
        b = np.log(sd_small / sd_large) / span
        b_se = np.hypot(se_small / sd_small, se_large / sd_large) / span
        lines.append(f"{names[e]}: {sds}; ratio {sd_small / sd_large:.2f} against {np.sqrt(large / small):.2f}, "
                     f"b = {b:.2f} ({b_se:.2f})")
    return "\n".join(lines)


def run_size(n: int, draws: int, vectors: dict, labels: np.ndarray, pool: np.ndarray, held_out: np.ndarray,
             test_cases: int, estimators: tuple[str, ...], workers: int, store: Path) -> tuple[list[dict], list[dict]]:
    """Draws 0 .. draws - 1 at training size n, and their scores: those saved under `store` are read back, the
    rest drawn and saved one by one; the oracle is scored last, from the covariance over every draw."""
    folder = store / f"n{n}-pool{len(labels)}-held{len(held_out)}-test{test_cases}-{'+'.join(map(ESTIMATOR_KEYS.get, estimators))}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"draw{d:04d}.pkl" for d in range(draws)]
    todo = [(vectors, labels, pool, held_out, n, d, test_cases, estimators, paths[d]) for d in range(draws)
            if not paths[d].exists()]
    print(f"n = {n}: {draws - len(todo)} of {draws} draws saved in {folder}, {len(todo)} to draw", flush=True)
    _pool_map(draw_and_score, todo, workers)
    saved = [pd.read_pickle(path) for path in paths]
    runs = [s["draw"] for s in saved]
    held = np.stack([r["held_axes"] for r in runs])
    oracle = held - held.mean(axis=0)  # rows over draws: their sample covariance is the truth's
    oracles = _pool_map(score_oracle, [(path, oracle, d) for d, path in enumerate(paths)], workers)
    return runs, [{**s["scored"], "oracle": o} for s, o in zip(saved, oracles)]


def real_pool(data_folder: Path, held: int, smoke: bool, cache: Path | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(labels, pool rows, held-out rows, vectors) of PneumoniaMNIST's images; `smoke`: a 500-image pool with
    the two baselines (the same code path, its figures meaningless)."""
    data = np.load(data_folder / "medmnist" / "pneumoniamnist.npz")
    images = np.concatenate([data[f"{s}_images"] for s in ("train", "val", "test")])
    labels = np.concatenate([data[f"{s}_labels"][:, 0] for s in ("train", "val", "test")]).astype(int)
    encoders = ENCODERS
    if smoke:
        keep = np.sort(np.random.default_rng(0).choice(len(labels), 500, replace=False))
        images, labels = images[keep], labels[keep]
        encoders = {k: ENCODERS[k] for k in ("raw-pixels", "colour-texture")}
    pool, held_out = pool_split(labels, held)
    cached = cache / f"pool-{len(labels)}-{len(held_out)}.npz" if cache else None
    return labels, pool, held_out, embedded(images, held_out, encoders, TASK, cached)


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2 draws at one size, the two baselines, a 500-image pool")
    parser.add_argument("--draws", type=int, nargs="+", default=[200], help="draws per size: one for all, or one a size")
    parser.add_argument("--sizes", type=int, nargs="+", default=[280, 140])
    parser.add_argument("--estimators", nargs="+", choices=list(ESTIMATOR_KEYS.values()), default=list(ESTIMATOR_KEYS.values()),
                        help="which candidates to carry (the planted two and the oracle come with the product's)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=None, help="a folder the embeddings are kept in between runs")
    parser.add_argument("--generated", action="store_true",
                        help="rows drawn from a known population (simulation/embedding_samples.py) in place of images")
    parser.add_argument("--store", type=Path, default=None,
                        help="a folder each finished draw is saved in: a rerun reads them back and goes on")
    args = parser.parse_args()
    estimators = tuple(e for e, key in ESTIMATOR_KEYS.items() if key in args.estimators)
    if ESTIMATORS[0] not in estimators:
        parser.error("the product's estimator (retuned) carries the planted two and the oracle: keep it")
    draws, sizes, held, test_cases = args.draws, args.sizes, HELD_OUT, TEST_CASES
    if len(draws) not in (1, len(sizes)):
        parser.error(f"--draws: one number, or one for each of the {len(sizes)} sizes")
    if args.smoke:
        draws, sizes, held, test_cases = [2], [60], 200, 100
    started = time.perf_counter()
    if args.generated:
        labels, pool, held_out, vectors = generated_pool(500 if args.smoke else GENERATED_ROWS, held)
    else:
        labels, pool, held_out, vectors = real_pool(args.data, held, args.smoke, args.cache)
    print(f"vectors of {len(labels)} {'generated rows' if args.generated else 'images'} and {len(held_out)} noisy "
          f"copies for {len(vectors)} encoders in {time.perf_counter() - started:.0f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="pool-draws-") as scratch:
        store = (args.store or Path(scratch)) / ("generated" if args.generated else "")
        by_size = {}
        for n, count in zip(sizes, draws * len(sizes) if len(draws) == 1 else draws):
            started = time.perf_counter()
            runs, scored = run_size(n, count, vectors, labels, pool, held_out, test_cases, estimators, args.workers, store)
            print(size_table(n, runs, scored, time.perf_counter() - started, test_cases, len(held_out)), flush=True)
            by_size[n] = runs
        if len(by_size) > 1:
            print(scaling_table(by_size), flush=True)


if __name__ == "__main__":
    main()
