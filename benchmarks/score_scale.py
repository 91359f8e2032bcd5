"""Scoring at the published scale: `score`, `report` and `results --export` on a store of the published shape.

The store is written with the project's own writers (store.ResultsStore, predictions.PredictionFiles,
predictions.index_statements), as a run writes it: 15 encoders + 2 floor baselines; three tasks and a
shift set of the published suite's shape:
  derm    ISIC-like, 8 classes, ~5,000 test cases in lesion clusters of 1-2, 12 perturbations
  ophtho  APTOS-like, 5 ordinal grades, ~730 test cases (no groups), 9 perturbations
  cxr     CheXpert-like, 5 labels (5% masked), 20,000+ test cases in patient clusters of 3, 12 perturbations,
          with a MIMIC-like shift set (~5,000 cases)
5 seeds x 6 label fractions, every perturbation at 5 severities. The probabilities are synthetic with a
realistic signal: encoders differ in separation, label hunger and fragility; the case difficulty is
shared by every encoder; at 100% labels every seed fits on the same rows (one vector for all seeds).
`--scale` multiplies the test cases (0.05 runs in about a minute).

Timed as subprocesses of the CLI, each with its wall and CPU time and peak RSS (the child's own VmHWM; wait4 where /proc is absent), once per case
bootstrap engine (case_bootstrap.ENGINES: the exact batched one and the linearised one; the per-vector
reference path gives the batched values more slowly): `crsbench score --n-boot N`,
`crsbench report` (which reads the value `score` stored, the suite's `crs: {n_boot}` being the same draws), `crsbench report` again
without that value (so it rescores), `crsbench results --export`. Then the bootstrap's cost slopes in
test cases, encoders and draws (log-log fits over three points each), each beside a baseline measured in
the same run: a plain numpy loop over draws of the same statistic (the task's macro AUROC of every
prediction vector, metrics.auroc_macro on the resampled rows). The loop is timed on a few draws and
scaled per draw.

Run: python benchmarks/score_scale.py [--scale 0.05] [--draws 200] [--encoders 17] [--out DIR] [--keep] [--smoke]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from crsbench.metrics import calibration
from crsbench.metrics import classification as metrics
from crsbench.results.predictions import CaseSet, PredictionFiles, index_statements, load_predictions, storage_bytes
from crsbench.results.records import RECORD_FIELDS
from crsbench.results.store import ResultsStore

SEEDS = (0, 1, 2, 3, 4)
FRACTIONS = (0.01, 0.05, 0.10, 0.25, 0.50, 1.0)
SEVERITIES = (1, 2, 3, 4, 5)
SUITE_HASH = "scale-benchmark"
N_TRAIN = {"derm": 17_700, "ophtho": 2_560, "cxr": 156_000}
HEADER = "threads:"
# every step at its smallest: 50 cases per test set, 3 encoders, 10 draws, one engine on the CLI, slopes
# over 50-100 cases, the kernel on 2,000 cases
SMOKE = dict(scale=0.001, encoders=3, draws=10, slope_scale=0.002, loop_draws=1, engines="batched",
             kernel_cases=2_000, slope_encoders=(2, 3, 4), perturbations=1, no_rescoring=True)


@dataclass(frozen=True)
class TaskShape:
    name: str
    task_type: str
    k: int
    n_cases: int
    cluster: int  # mean cluster size (1: each case its own)
    perturbations: int
    shift_cases: int = 0


TASKS = (
    TaskShape("derm", "single_label", 8, 5_000, 2, 12),
    TaskShape("ophtho", "ordinal", 5, 730, 1, 9),
    TaskShape("cxr", "multi_label", 5, 20_000, 3, 12, shift_cases=5_000),
)


def encoder_truths(n_encoders: int) -> list[tuple[str, float, float, float, bool]]:
    """(name, separation, hunger, fragility, baseline): the last two are floor baselines."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(n_encoders - 2):
        out.append((f"encoder-{i:02d}", float(rng.uniform(0.8, 1.8)), float(rng.uniform(0.1, 0.4)),
                    float(rng.uniform(0.05, 0.4)), False))
    out += [("raw-pixels", 0.35, 0.05, 0.1, True), ("colour-texture", 0.5, 0.05, 0.1, True)]
    return out


def _clusters(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    if size <= 1:
        return np.arange(n)
    sizes = rng.integers(1, 2 * size, size=n)  # mean ~size
    return np.repeat(np.arange(n), sizes)[:n]


def _labels(shape: TaskShape, n: int, rng: np.random.Generator) -> np.ndarray:
    if shape.task_type == "multi_label":
        y = (rng.random((n, shape.k)) < 0.25).astype(float)
        y[rng.random((n, shape.k)) < 0.05] = np.nan
        return y
    priors = np.linspace(2.0, 0.5, shape.k)
    return rng.choice(shape.k, size=n, p=priors / priors.sum())


def _probs(shape: TaskShape, y: np.ndarray, signal: np.ndarray, separation: float, rng: np.random.Generator
           ) -> np.ndarray:
    noise = signal + 0.7 * rng.normal(size=signal.shape)
    if shape.task_type == "multi_label":
        logit = np.log(0.25 / 0.75) + separation * (np.nan_to_num(y) - 0.5) + noise
        return (1 / (1 + np.exp(-logit))).astype(np.float32)
    onehot = np.eye(shape.k)[y]
    logits = separation * 1.6 * onehot + noise
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def _metrics(shape: TaskShape, y, probs) -> dict:
    proba = probs.astype(np.float64)
    if shape.task_type != "multi_label":
        proba /= proba.sum(axis=1, keepdims=True)
    t = shape.task_type
    return {"auroc": metrics.auroc_macro(t, y, proba), "ece": calibration.ece(t, y, proba),
            "brier": metrics.brier(t, y, proba), "nll": metrics.nll(t, y, proba)}


def capped(tasks: tuple[TaskShape, ...], perturbations: int | None) -> tuple[TaskShape, ...]:
    """The task shapes with at most `perturbations` perturbations each (None: as they are)."""
    if perturbations is None:
        return tasks
    return tuple(dataclasses.replace(t, perturbations=min(t.perturbations, perturbations)) for t in tasks)


def build_store(folder: Path, scale: float, n_encoders: int, seed: int = 0, n_boot: int = 10_000, refits: int = 0,
                tasks: tuple[TaskShape, ...] = TASKS) -> dict:
    """Write the store; returns counts. Every record goes through ResultsStore.add with its index rows.
    The suite's `crs: {n_boot}` is what `report` rescores with. `refits`: per encoder and task, that many
    refit records of every 100 % condition (refit k, the first seed; their metrics only, as a run stores
    them), each from a separation moved by 5 % x N(0, 1)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    truths = encoder_truths(n_encoders)
    suite = {"name": "scale", "reference": truths[0][0],
             "encoders": [{"name": name, "baseline": base} for name, _, _, _, base in truths], "crs": {"n_boot": n_boot}}
    files = PredictionFiles(folder)
    n_records = 0
    with ResultsStore(folder / "results.sqlite") as store:
        store.start_run({"run_id": "run-1", "started_at": "2026-01-01T00:00:00+00:00", "suite_hash": SUITE_HASH,
                         "suite_name": "scale", "suite_yaml": json.dumps(suite), "crsbench_version": "0",
                         "host": "benchmark"})
        for shape in tasks:
            n = max(50, int(round(shape.n_cases * scale)))
            sets = [("test", n, f"shift:{shape.name}-b")] + ([("shift", max(50, int(round(shape.shift_cases * scale))), "")]
                                                             if shape.shift_cases else [])
            case_sets = {}
            for role, size, _ in sets:
                y = _labels(shape, size, rng)
                cluster = _clusters(size, shape.cluster if role == "test" else 2, rng)
                difficulty = rng.normal(0, 0.8, (size, shape.k))
                cases = CaseSet(np.array([f"{shape.name}-{role}-{i}" for i in range(size)]), cluster.astype(str), y,
                                shape.name, role)
                case_sets[role] = (cases, y, difficulty, files.write_case_set(cases))
            positives = (np.full(shape.k, 0.25) if shape.task_type == "multi_label"
                         else np.linspace(2.0, 0.5, shape.k) / np.linspace(2.0, 0.5, shape.k).sum())
            for name, separation, hunger, fragility, _ in truths:
                base = {role: rng.normal(size=(v[0].labels.shape[0], shape.k)) + v[2] for role, v in case_sets.items()}
                grid = [(f, "clean", "clean", 0) for f in FRACTIONS]
                grid += [(1.0, "perturbation", f"perturbation_{p:02d}", s) for p in range(shape.perturbations)
                         for s in SEVERITIES]
                if shape.shift_cases:
                    grid.append((1.0, "shift", f"shift:{shape.name}-b", 0))
                full_vectors: dict[tuple, np.ndarray] = {}
                for seed_value in SEEDS:
                    for fraction, kind, condition, severity in grid:
                        role = "shift" if kind == "shift" else "test"
                        cases, y, _, (test_set, test_set_row) = case_sets[role]
                        key = (fraction, kind, condition, severity)
                        if fraction == 1.0 and key in full_vectors:  # every seed fits the same rows at 100%
                            probs = full_vectors[key]
                        else:
                            sep = separation * (1 - hunger * np.log10(1 / fraction) / 2)
                            sep *= (1 - fragility * severity / 5) if kind == "perturbation" else 1.0
                            sep *= 0.8 if kind == "shift" else 1.0
                            vector_rng = np.random.default_rng(rng.integers(2**63))
                            probs = _probs(shape, y, base[role], sep, vector_rng)
                            if fraction == 1.0:
                                full_vectors[key] = probs
                        digest = files.write_probabilities(probs)
                        counts = [int(round(N_TRAIN[shape.name] * fraction * q)) for q in positives]
                        record = {
                            **dict.fromkeys(RECORD_FIELDS), **_metrics(shape, y, probs),
                            "record_key": f"{name}|{shape.name}|{seed_value}|{fraction}|{condition}|{severity}",
                            "run_id": "run-1", "suite_hash": SUITE_HASH, "encoder": name, "task": shape.name,
                            "dataset": shape.name, "task_type": shape.task_type, "seed": seed_value,
                            "fraction": fraction, "condition_kind": kind, "condition": condition, "severity": severity,
                            "n_train": int(round(N_TRAIN[shape.name] * fraction)), "n_eval": len(y),
                            "positives_train": counts, "schema_version": None,
                        }
                        record.pop("schema_version")
                        store.add(record, index_statements(record["record_key"], test_set, digest, test_set_row))
                        n_records += 1
                for k in range(1, refits + 1):
                    moved = 1 + 0.05 * rng.normal()
                    for fraction, kind, condition, severity in grid:
                        if fraction != 1.0:
                            continue
                        role = "shift" if kind == "shift" else "test"
                        y = case_sets[role][1]
                        sep = separation * moved * ((1 - fragility * severity / 5) if kind == "perturbation" else 1.0)
                        sep *= 0.8 if kind == "shift" else 1.0
                        probs = _probs(shape, y, base[role], sep, np.random.default_rng(rng.integers(2**63)))
                        store.add({**dict.fromkeys(RECORD_FIELDS), **_metrics(shape, y, probs),
                                   "record_key": f"{name}|{shape.name}|refit {k}|{condition}|{severity}",
                                   "run_id": "run-1", "suite_hash": SUITE_HASH, "encoder": name, "task": shape.name,
                                   "dataset": shape.name, "task_type": shape.task_type, "seed": SEEDS[0],
                                   "fraction": 1.0, "condition_kind": kind, "condition": condition,
                                   "severity": severity, "refit": k, "n_train": N_TRAIN[shape.name], "n_eval": len(y),
                                   "positives_train": [int(round(N_TRAIN[shape.name] * q)) for q in positives],
                                   "schema_version": 2})
                        n_records += 1
        store.finish_run("run-1", "2026-01-01T01:00:00+00:00", n_records)
    return {"records": n_records}


# --------------------------------------------------------------------------- timing


# the CLI with its case bootstrap run by the engine named first on the command line
# The child notes its own peak RSS (VmHWM of the address space exec gave it) on exit: wait4's ru_maxrss
# also counts the pages the child was forked with, so a large parent (a test worker) would inflate it.
LAUNCH = """
import atexit, functools, os, sys
def _note_peak(path=os.environ.get("CRSBENCH_PEAK_FILE")):
    if path and os.path.exists("/proc/self/status"):
        with open("/proc/self/status") as status, open(path, "w") as out:
            out.write(next((line.split()[1] for line in status if line.startswith("VmHWM:")), ""))
atexit.register(_note_peak)
import crsbench.scoring.score as s
s.case_bootstrap = functools.partial(s.case_bootstrap, engine=sys.argv.pop(1))
from crsbench.cli.main import app
sys.argv[0] = "crsbench"
app()
"""


def timed_cli(args: list[str], env: dict, engine: str) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, output tail) of one CLI call as a child process, its case
    bootstrap run by `engine`."""
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak"
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", LAUNCH, engine, *args],
                                   env={**env, "CRSBENCH_PEAK_FILE": str(peak_file)}, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
        output = process.stdout.read().decode(errors="replace")
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        noted = peak_file.read_text().strip() if peak_file.exists() else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"crsbench {' '.join(args)} failed:\n{output[-3000:]}")
    peak_mb = int(noted) / 1024 if noted.isdigit() else usage.ru_maxrss / 1024  # VmHWM in kB; else wait4's
    return seconds, usage.ru_utime + usage.ru_stime, peak_mb, output[-400:]


def _slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def _cohort(folder: Path, scale: float, n_encoders: int, tasks: tuple[TaskShape, ...] = TASKS):
    """The cxr task alone (the largest) as a store, its records, predictions and axes."""
    from crsbench.api import load_results
    from crsbench.scoring.axes import compute_axes

    build_store(folder, scale, n_encoders, seed=1, tasks=tuple(t for t in tasks if t.name == "cxr"))
    records = load_results(folder).frame
    stored = load_predictions(folder)
    return records, stored, compute_axes(records, predictions=stored)


def time_bootstrap(records, stored, axis_scores, draws: int, engine: str) -> float:
    """CPU seconds of bootstrap.case_bootstrap (CPU time: the machine may be shared)."""
    from crsbench.scoring.case_bootstrap import case_bootstrap
    from crsbench.crs.definition import CRSConfig

    started = time.process_time()
    case_bootstrap(records, stored, axis_scores, axis_scores.encoders[0], CRSConfig(n_boot=draws, n_weight_draws=0),
                   engine=engine)
    return time.process_time() - started


def time_loop(records, stored, draws: int, loop_draws: int) -> float:
    """Seconds for `draws` draws of the plain loop: per draw, every prediction vector of the task's records
    scored by metrics.auroc_macro on the resampled rows (timed on `loop_draws`, scaled)."""
    rng = np.random.default_rng(0)
    test_set = stored.index["test_set"].iloc[0]
    cases = stored.case_set(test_set)
    codes, n_clusters = cases.cluster_codes()
    used = stored.index[stored.index["test_set"] == test_set]["probs"].unique()
    vectors = [stored.probabilities(d).astype(np.float64) for d in used]
    task_type = records["task_type"].iloc[0]
    started = time.process_time()
    for _ in range(loop_draws):
        counts = rng.multinomial(n_clusters, np.full(n_clusters, 1 / n_clusters))
        rows = np.repeat(np.arange(len(codes)), counts[codes])
        labels = cases.labels[rows]
        for probs in vectors:
            metrics.auroc_macro(task_type, labels, probs[rows])
    return (time.process_time() - started) / loop_draws * draws


def slopes(work: Path, scale: float, draws: int, loop_draws: int, encoders: tuple[int, int, int] = (3, 5, 9),
           tasks: tuple[TaskShape, ...] = TASKS) -> list[dict]:
    """Bootstrap vs loop cost at three test-case counts, three cohort sizes and three draw counts."""
    rows = []
    base_scale, base_enc = scale, encoders[1]
    grids = {
        "cases": [(base_scale * m, base_enc, draws) for m in (0.5, 1, 2)],
        "encoders": [(base_scale, e, draws) for e in encoders],
        "draws": [(base_scale, base_enc, d) for d in (draws // 2, draws, draws * 2)],
    }
    cache = {}
    for axis, points in grids.items():
        for s, e, d in points:
            if (s, e) not in cache:
                folder = work / f"slope-{s:g}-{e}"
                cache[(s, e)] = _cohort(folder, s, e, tasks)
            records, stored, axis_scores = cache[(s, e)]
            n_cases = len(stored.case_set(stored.index["test_set"].iloc[0]).case_id)
            reference = time_bootstrap(records, stored, axis_scores, d, "reference")
            batched = time_bootstrap(records, stored, axis_scores, d, "batched")
            linearised = time_bootstrap(records, stored, axis_scores, d, "linearised")
            loop = time_loop(records, stored, d, loop_draws)
            rows.append({"axis": axis, "cases": n_cases, "encoders": e, "draws": d, "reference_s": reference,
                         "batched_s": batched, "linearised_s": linearised, "loop_s": loop})
    return rows


def published_columns(n_encoders: int = 17) -> int:
    """Column-cases of the published shape: per (encoder, task) the distinct vectors the axes read
    (one clean 100% vector for all seeds, 5 seeds x 5 fractions below 100%, every perturbation at 100%, the
    shift vector), times classes, times test cases."""
    total = 0
    for shape in TASKS:
        vectors = 1 + len(SEEDS) * (len(FRACTIONS) - 1) + shape.perturbations * len(SEVERITIES)
        total += n_encoders * vectors * shape.k * shape.n_cases
        if shape.shift_cases:
            total += n_encoders * shape.k * shape.shift_cases
    return total


def kernel_rates(n_cases: int = 20_000, n_columns: int = 8, draws: int = 200, repeats: int = 2) -> dict[str, float]:
    """Seconds (CPU and wall) per column x case x draw of the AUROC kernel: the reference (BinaryAUROC per
    column and chunk of draws), the batched engine's numpy kernel (threaded over the CPUs) and the
    linearised engine (one matrix product), on CheXpert-sized columns; the best of `repeats`."""
    from crsbench.scoring.bootstrap_batched import numpy_columns
    from crsbench.scoring.bootstrap_linear import linear_columns
    from crsbench.metrics.weighted import BinaryAUROC, case_major

    rng = np.random.default_rng(3)
    y = (rng.random(n_cases) < 0.25).astype(float)
    columns = [BinaryAUROC((rng.normal(size=n_cases) + y).astype(np.float32).astype(np.float64), y)
               for _ in range(n_columns)]
    counts = rng.multinomial(n_cases, np.full(n_cases, 1 / n_cases), size=draws).astype(np.float64)
    weights = case_major(counts)
    integer = counts.astype(np.int64)
    names = ("reference", "batched", "linearised")
    best = {f"{name} {clock}": np.inf for clock in ("CPU", "wall") for name in names}
    for _ in range(repeats):
        for name, run in (("reference", lambda: np.stack([c(weights) for c in columns])),
                          ("batched", lambda: numpy_columns(columns, np.asarray(weights))),
                          ("linearised", lambda: linear_columns(columns, integer, np.arange(n_cases)))):
            started, clock = time.process_time(), time.perf_counter()
            got = run()
            best[f"{name} CPU"] = min(best[f"{name} CPU"], time.process_time() - started)
            best[f"{name} wall"] = min(best[f"{name} wall"], time.perf_counter() - clock)
            if name == "reference":
                expected = got
            elif name == "batched":
                np.testing.assert_array_equal(got, expected)
    return {k: v / (n_columns * n_cases * draws) for k, v in best.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.05, help="share of the published test-set sizes")
    parser.add_argument("--encoders", type=int, default=17, help="encoders including the two baselines")
    parser.add_argument("--draws", type=int, default=200, help="bootstrap draws of `score` and the slopes")
    parser.add_argument("--slope-scale", type=float, default=0.05, help="cxr test-set share for the slope fits")
    parser.add_argument("--loop-draws", type=int, default=3)
    parser.add_argument("--refits", type=int, default=0, help="refit records per encoder and task (their metrics only)")
    parser.add_argument("--no-slopes", action="store_true")
    parser.add_argument("--no-cli", action="store_true")
    parser.add_argument("--no-kernel", action="store_true")
    parser.add_argument("--store", type=Path, default=None, help="an existing store of this benchmark (not rebuilt)")
    parser.add_argument("--engines", default="batched,linearised", help="case bootstrap engines the CLI runs with")
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--kernel-cases", type=int, default=20_000, help="cases of the AUROC kernel's columns")
    parser.add_argument("--slope-encoders", type=int, nargs=3, default=(3, 5, 9), help="cohort sizes of the slope in encoders")
    parser.add_argument("--perturbations", type=int, default=None, help="at most this many perturbations per task")
    parser.add_argument("--no-rescoring", action="store_true", help="leave out the report that rescores")
    parser.add_argument("--score-only", action="store_true", help="of the CLI commands, `score` alone")
    parser.add_argument("--smoke", action="store_true", help=f"seconds, every step: {SMOKE}")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    tasks = capped(TASKS, args.perturbations)
    work = args.out or Path(tempfile.mkdtemp(prefix="score-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1] / "src"),
                                                                  os.environ.get("PYTHONPATH")]))}
    print(f"{HEADER} torch/BLAS as set by the environment; CPUs visible {os.cpu_count()}")
    try:
        if not args.no_cli:
            store = args.store or work / "store"
            started = time.perf_counter()
            if args.store is None:
                build_store(store, args.scale, args.encoders, n_boot=args.draws, refits=args.refits, tasks=tasks)
            built = time.perf_counter() - started
            database = (store / "results.sqlite").stat().st_size
            sizes = storage_bytes(store)
            with ResultsStore(store / "results.sqlite", read_only=True) as opened:
                n = int(opened.query("SELECT COUNT(*) AS n FROM records")["n"].iloc[0])
            cases = {row.task + "/" + row.role: int(row.n_cases) for row in load_predictions(store).test_sets.itertuples()}
            print(f"store: {n} records, test sets {cases}, built in {built:.0f} s")
            print(f"  results.sqlite {database / 1e6:.1f} MB ({database / n * 1e3 / 1e6:.2f} MB per 1,000 records)")
            print(f"  predictions {sizes['probs_bytes'] / 1e6:.1f} MB in {sizes['probs_files']} files "
                  f"({sizes['probs_bytes'] / n * 1e3 / 1e6:.1f} MB per 1,000 records); test sets "
                  f"{sizes['cases_bytes'] / 1e6:.2f} MB in {sizes['cases_files']} files")
            print(f"  {'command':<19}{'engine':>11}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}")
            for engine in args.engines.split(","):
                for label, cli in (("score", ["score", str(store), "--n-boot", str(args.draws)]),
                                   ("report", ["report", str(store), "-o", str(work / "report")]),
                                   ("report, rescoring", ["report", str(store), "-o", str(work / "report")]),
                                   ("results --export", ["results", str(store), "--export", "--out", str(work / "export")])):
                    if label == "results --export" and engine != args.engines.split(",")[0]:
                        continue  # no bootstrap in it
                    if (label == "report, rescoring" and args.no_rescoring) or (args.score_only and label != "score"):
                        continue
                    if label == "report, rescoring":  # without the value `score` stored, as before it was kept
                        shutil.rmtree(store / "scored", ignore_errors=True)
                    seconds, cpu, rss, _ = timed_cli(cli, env, engine)
                    print(f"  {label:<19}{engine:>11}{seconds:9.1f}{cpu:9.1f}{rss:13.0f}", flush=True)
        if not args.no_kernel:
            rates = kernel_rates(args.kernel_cases)
            cells = published_columns(args.encoders)
            print(f"AUROC kernel, ns per column x case x draw ({args.kernel_cases:,} cases, 200 draws): "
                  + ", ".join(f"{k} {v * 1e9:.2f}" for k, v in rates.items()))
            for draws in (2_000, 10_000):
                print(f"  published shape ({args.encoders} encoders, {cells / 1e6:.0f} M column-cases), {draws} draws, "
                      "AUROC alone: " + ", ".join(f"{k} {v * cells * (draws + 1) / 60:.0f} min" for k, v in rates.items()))
        if not args.no_slopes:
            rows = slopes(work, args.slope_scale, args.draws, args.loop_draws, tuple(args.slope_encoders), tasks)
            print("slopes, CPU seconds (cxr task alone; case_bootstrap by the reference, batched and linearised "
                  "engines; loop = plain numpy loop over draws)")
            print(f"  {'axis':<9}{'cases':>7}{'encoders':>9}{'draws':>7}{'reference s':>13}{'batched s':>11}"
                  f"{'linearised s':>14}{'loop s':>10}{'loop/ref':>10}{'ref/batched':>12}{'batched/lin':>12}")
            for r in rows:
                print(f"  {r['axis']:<9}{r['cases']:>7}{r['encoders']:>9}{r['draws']:>7}{r['reference_s']:>13.2f}"
                      f"{r['batched_s']:>11.2f}{r['linearised_s']:>14.2f}{r['loop_s']:>10.1f}"
                      f"{r['loop_s'] / r['reference_s']:>10.1f}{r['reference_s'] / r['batched_s']:>12.2f}"
                      f"{r['batched_s'] / r['linearised_s']:>12.2f}")
            for axis in ("cases", "encoders", "draws"):
                part = [r for r in rows if r["axis"] == axis]
                xs = [r[axis] for r in part]
                fits = ", ".join(f"{name} {_slope(xs, [r[name + '_s'] for r in part]):.2f}"
                                 for name in ("reference", "batched", "linearised", "loop"))
                print(f"  slope in {axis} (log-log): {fits}")
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
