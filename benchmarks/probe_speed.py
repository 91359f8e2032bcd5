"""Probe phase speed: the batched engine against a plain scikit-learn loop, same data, same run.

Synthetic embeddings of realistic shape (a power-law spectrum, correlated features) for three tasks:
an 8-class and a 5-class single-label task and a 5-label multi-label task with missing labels,
d 512-1,024, n_train up to 20,000. One encoder's probe phase is the grid 5 seeds x 6 label fractions
per task (the full-label fit shared by the seeds, as the pipeline memoises it), each fit evaluated on
the clean test set, and at full labels on 1 clean + 60 perturbed conditions (the shared fit scored once per
condition, as the runner does).
  - engine: fit_probe over that grid, evaluations included; throughput against float32 GEMM;
  - scikit-learn: StandardScaler + LogisticRegression per C at its defaults, C on validation log-loss,
    the chosen C refit for the final model (the loop as a user writes it; the ratio without the refit
    is printed too), on a subsample of the grid's fits; the engine is timed on the very same fits for
    the speed-up, each side the fastest of --repeats runs.
The published probe phase (15 encoders x 3 tasks x 5 seeds x 6 fractions) is extrapolated from the
engine's grid time. Embeddings are memory-mapped from disk, as the cache serves them.
Run: python benchmarks/probe_speed.py [--quick | --smoke] [--threads N] [--device cpu|cuda] [--repeats R] [--float32-only]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from crsbench.metrics import classification as metrics

from crsbench.probe import solver as probe_engine
from crsbench.probe.linear import DEFAULT_C_GRID, ProbeConfig, fit_probe
from crsbench.plan.subsets import fraction_subset

TASKS = (("dermatology-8", "single_label", 8, 768), ("ophthalmology-5", "single_label", 5, 512), ("cxr-5", "multi_label", 5, 1024))
SEEDS, FRACTIONS = (0, 1, 2, 3, 4), (0.01, 0.05, 0.10, 0.25, 0.50, 1.0)
PERTURBED_CONDITIONS, PUBLISHED_ENCODERS = 60, 15
HEADER = "device "
# (n_train, n_eval, seeds on the grid, scikit-learn's fractions, perturbed conditions evaluated)
SIZES = {"full": (20_000, 2_000, SEEDS, (0.05, 0.25, 1.0), PERTURBED_CONDITIONS),
         "quick": (5_000, 1_000, SEEDS[:1], (0.1, 1.0), PERTURBED_CONDITIONS),
         "smoke": (600, 200, SEEDS[:1], (1.0,), 2)}


def synthetic_task(kind: str, k: int, d: int, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings with a decaying spectrum and a weak class signal spread over many directions."""
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    spectrum = np.arange(1, d + 1) ** -0.7
    if kind == "multi_label":
        latent = rng.normal(size=(n, d))
        scores = latent[:, :k] * 0.8 + latent[:, k : 2 * k] * 0.4 + rng.normal(size=(n, k))
        y = (scores > 0.6).astype(np.float32)
        y[rng.random(y.shape) < 0.1] = np.nan  # uncertain labels, masked
    else:
        y = rng.integers(0, k, n)
        latent = rng.normal(size=(k, d))[y] * 0.35 + rng.normal(size=(n, d))
    x = np.maximum((latent * spectrum) @ rotation.T * 3 + 0.5, 0) + 0.05 * rng.normal(size=(n, d))  # post-activation
    return x.astype(np.float32), y


def memory_mapped(folder: Path, name: str, matrix: np.ndarray) -> np.ndarray:
    np.save(folder / f"{name}.npy", matrix)
    return np.load(folder / f"{name}.npy", mmap_mode="r")


def sklearn_probe(task_type, x, y, x_val, y_val, n_classes, config) -> float:
    """The loop a user would write, per label for multi-label tasks: fit each C, keep the one with the
    best validation log-loss, refit it for the final model. Returns the seconds spent refitting."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.preprocessing import StandardScaler

    def fitted(c, z, target):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return LogisticRegression(C=c, max_iter=config.max_iter, tol=config.tol).fit(z, target)

    scaler = StandardScaler().fit(x)
    z, z_val = scaler.transform(x), scaler.transform(x_val)
    columns = range(y.shape[1]) if task_type == "multi_label" else [None]
    refit_seconds = 0.0
    for j in columns:
        seen = np.ones(len(y), bool) if j is None else ~np.isnan(y[:, j])
        seen_val = np.ones(len(y_val), bool) if j is None else ~np.isnan(y_val[:, j])
        yj, yj_val = (y, y_val) if j is None else (y[seen, j], y_val[seen_val, j])
        best, best_c = np.inf, None
        for c in sorted(config.c_grid):
            model = fitted(c, z[seen], yj.astype(int))
            loss = log_loss(yj_val.astype(int), model.predict_proba(z_val[seen_val]), labels=model.classes_)
            if loss < best:
                best, best_c = loss, c
        started = time.perf_counter()
        fitted(best_c, z[seen], yj.astype(int))
        refit_seconds += time.perf_counter() - started
    return refit_seconds


def gemm_gflops(n: int, d: int, device) -> float:
    a = torch.randn(n, d, device=device)
    b = torch.randn(d, d, device=device)
    on_gpu = str(device).startswith("cuda")
    a @ b
    if on_gpu:  # the warm-up product finished before the clock starts
        torch.cuda.synchronize()
    started, repeats = time.perf_counter(), 3
    for _ in range(repeats):
        a @ b
    if on_gpu:
        torch.cuda.synchronize()
    return 2.0 * n * d * d * repeats / (time.perf_counter() - started) / 1e9


def best_of(repeats: int, function, *args) -> tuple[float, object]:
    """The fastest of `repeats` timed calls (as timeit reports) and that call's result: on a shared
    machine the slower ones measure the neighbours, and both solvers get the same treatment."""
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = function(*args)
        runs.append((time.perf_counter() - started, result))
    return min(runs, key=lambda run: run[0])


def units(task_type, y, name, seeds):
    """(seed, fraction, subset) per fit, the full-label fit once: every seed draws the whole split."""
    for fraction in FRACTIONS:
        for seed in seeds if fraction < 1.0 else seeds[:1]:
            yield seed, fraction, fraction_subset(task_type, y, name, seed, fraction)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller training sets, one seed on the grid")
    parser.add_argument("--smoke", action="store_true", help="seconds: n_train 600, one repeat, 2 perturbed conditions")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for both solvers")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of each same-fit comparison (the fastest counts)")
    parser.add_argument("--float32-only", action="store_true", help="no bfloat16 warm-up, as on hardware without native bfloat16")
    parser.add_argument("--no-sklearn", action="store_true", help="the engine's grid alone (scikit-learn's loop takes minutes at n 20,000)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats = 1
    # the hardware's capability, printed before --float32-only turns the warm-up off
    native = "native" if probe_engine.bfloat16_is_native(args.device) else "not native"
    if args.float32_only:
        probe_engine.bfloat16_is_native = lambda device: False
    torch.set_num_threads(args.threads)
    size = "smoke" if args.smoke else "quick" if args.quick else "full"
    n_train, n_eval, seeds, sklearn_fractions, perturbed = SIZES[size]
    config = ProbeConfig(DEFAULT_C_GRID)
    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp(prefix="probe_speed_"))
    warm_up = "off" if args.float32_only or not probe_engine.bfloat16_is_native(args.device) else "on"
    print(f"{HEADER}{args.device} (bfloat16 {native}), {args.threads} thread(s), n_train {n_train}, seeds on the grid {len(seeds)}, bfloat16 warm-up {warm_up}")

    with threadpool_limits(args.threads):
        peak_gflops = gemm_gflops(n_train, 1024, args.device)
        print(f"float32 GEMM ({n_train} x 1024 x 1024): {peak_gflops:.1f} GFLOP/s")
        grid_seconds, fit_total, grid_flops, engine_same, sklearn_same, sklearn_refits, fits = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0
        data = {}
        for name, task_type, k, d in TASKS:
            x, y = synthetic_task(task_type, k, d, n_train + 2 * n_eval, rng)
            x_mm = memory_mapped(folder, name, x)
            del x
            split = {"train": slice(0, n_train), "val": slice(n_train, n_train + n_eval), "test": slice(n_train + n_eval, None)}
            data[name] = (task_type, k, x_mm, y, split)
            x_val, y_val = np.asarray(x_mm[split["val"]]), y[split["val"]]
            x_test, y_test = np.asarray(x_mm[split["test"]]), y[split["test"]]
            y_train = y[split["train"]]
            task_fits, task_seconds = 0, 0.0
            for seed, fraction, subset in units(task_type, y_train, name, seeds):
                started = time.perf_counter()
                probe = fit_probe(task_type, x_mm[subset], y_train[subset], x_val, y_val, k, config, args.device)
                fit_seconds = time.perf_counter() - started
                grid_flops += probe.gemm_flops * (len(SEEDS) / len(seeds) if fraction < 1.0 else 1)
                started = time.perf_counter()
                for condition in range(1 + perturbed * (fraction == 1.0)):
                    shifted = x_test if condition == 0 else x_test * np.float32(1 - 0.002 * condition)
                    metrics.evaluate(task_type, y_test, probe.predict_proba(shifted))
                eval_seconds = time.perf_counter() - started
                # the grid's other seeds: their own fits below full labels; at full labels one fit shared
                # by the seeds, scored once per condition (the runner writes every seed's record from it)
                if fraction < 1.0:
                    task_seconds += (fit_seconds + eval_seconds) * len(SEEDS) / len(seeds)
                    fit_total += fit_seconds * len(SEEDS) / len(seeds)
                else:
                    # conditions left out at the smoke size are counted at the time of those evaluated
                    task_seconds += fit_seconds + eval_seconds * (1 + PERTURBED_CONDITIONS) / (1 + perturbed)
                    fit_total += fit_seconds
                task_fits += 1
                if not probe.converged:
                    print(f"  {name} seed {seed} fraction {fraction}: not converged (gradient {probe.grad_norm:.1e})")
            grid_seconds += task_seconds
            print(f"engine grid {name} (d={d}): {task_fits} fits, the 5-seed grid with evaluations in {task_seconds:.1f} s")
            fits += task_fits
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        for name, (task_type, k, x_mm, y, split) in data.items():
            x_val, y_val = np.asarray(x_mm[split["val"]]), y[split["val"]]
            y_train = y[split["train"]]
            for fraction in () if args.no_sklearn else sklearn_fractions:
                subset = fraction_subset(task_type, y_train, name, 0, fraction)
                x_fit = np.asarray(x_mm[subset])
                engine_seconds, _ = best_of(args.repeats, fit_probe, task_type, x_fit, y_train[subset], x_val, y_val, k, config, args.device)
                sklearn_seconds, refit_seconds = best_of(args.repeats, sklearn_probe, task_type, x_fit, y_train[subset], x_val, y_val, k, config)
                engine_same += engine_seconds
                sklearn_same += sklearn_seconds
                sklearn_refits += refit_seconds
                print(f"same fit {name} fraction {fraction} (n={len(subset)}): engine {engine_seconds:.2f} s, scikit-learn {sklearn_seconds:.2f} s")

    published = grid_seconds * PUBLISHED_ENCODERS
    # throughput over the fits alone: the evaluations do no work in the solver's matrix products
    achieved = grid_flops / fit_total / 1e9 if fit_total else float("nan")
    print(f"engine fits on the grid: {fit_total:.1f} s of {grid_seconds:.1f} s (the rest: evaluations)")
    print(f"engine throughput in its fits: {achieved:.2f} GFLOP/s in matrix products = {100 * achieved / peak_gflops:.1f}% of GEMM")
    print(f"peak memory of the probe phase (max RSS): {peak_mb:.0f} MB")
    scale = "" if size == "full" else f" (at n_train {n_train}; run without --{size} for 20,000)"
    print(f"extrapolated published probe phase ({PUBLISHED_ENCODERS} encoders x 3 tasks x 5 seeds x 6 fractions): {published / 60:.1f} min{scale}")
    # the engine keeps the chosen C's fit; the loop's refit is what a user's loop adds to get its model
    if not args.no_sklearn:
        print(f"speed-up vs the scikit-learn loop without its refit: {(sklearn_same - sklearn_refits) / engine_same:.1f}x")
        print(f"speed-up vs scikit-learn: {sklearn_same / engine_same:.1f}x")


if __name__ == "__main__":
    main()
