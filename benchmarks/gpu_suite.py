"""Every GPU measurement in one run and one table, for whoever has a GPU for a quarter of an hour.

Steps, each a sibling script run as a child process, its figures picked from what it prints:
  1. probes: probe_speed.py --device cuda --no-sklearn: the engine's grid at n_train 20,000, the published
     probe phase extrapolated from it, the engine's share of the GPU's float32 GEMM rate;
  2. extraction: extraction_speed.py per model (ResNet-50, ViT-B/16) and precision (fp32, bf16), 2,048
     images of 224 px in batches of 256, ours against the plain loop (normalisation on the device);
  3. scoring: the store of the published shape, built here (only a small working tree travels to such a
     machine) at the largest scale whose build fits --build-budget seconds and half the free disk (two small
     builds measure the fixed and the per-case cost; the scale is printed), then score_scale.py's `score`
     with 10,000 draws by the linearised engine and by the exact batched one (both on the GPU).
The table (markdown: step, exit status, wall seconds, figures) is printed and written to --out; a step that
fails or runs past its time limit is a row saying so, and the others still run. The limits (build budget
45 s, probes 80 s, each extraction 40 s, scoring 100 s) bound the run at under 7 minutes with the
calibration builds; the steps are expected to take well under theirs (not yet measured on a GPU).
`--smoke`: the same steps on the CPU at each script's smoke size and a tiny store, in seconds (one extraction
step: that script's smoke size is one small float32 model whatever is asked): what the test of the
benchmarks runs, so that this driver cannot rot where no GPU is.
Run: python benchmarks/gpu_suite.py [--out gpu_table.md] [--build-budget 45] [--smoke]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

HEADER = "| step | exit | wall s | figures |"
MODELS = ("resnet50", "vit_base_patch16_224")
PRECISIONS = ("fp32", "bf16")
PUBLISHED_ENCODERS = 17  # 15 encoders and the two floor baselines
CALIBRATION_SCALES = (0.01, 0.05)


@dataclass(frozen=True)
class Step:
    label: str
    script: str
    args: tuple[str, ...]
    picks: tuple[str, ...]  # the printed lines that start with one of these are the step's figures
    limit_s: int


def steps(smoke: bool, store: Path | None, draws: int, encoders: int) -> list[Step]:
    device = ("--device", "cpu" if smoke else "cuda")
    size = ("--smoke",) if smoke else ()
    out = [Step("probes", "probe_speed.py", (*device, "--no-sklearn", *size),
                ("device ", "float32 GEMM", "engine throughput", "extrapolated published probe phase"), 80)]
    # the extraction smoke size runs one small model in float32 whatever is asked: one step covers it
    for model in MODELS[:1] if smoke else MODELS:
        for precision in PRECISIONS[:1] if smoke else PRECISIONS:
            out.append(Step(f"extraction {model} {precision}", "extraction_speed.py",
                            (*device, "--arch", model, "--precision", precision, "--images", "2048",
                             "--batch-size", "256", "--threads", str(os.cpu_count() or 1), *size),
                            ("extraction speed:", "plain loop", "ours", "ratio"), 40))
    if store is not None:
        out.append(Step(f"score, {draws:,} draws", "score_scale.py",
                        ("--store", str(store), "--draws", str(draws), "--encoders", str(encoders),
                         "--engines", "linearised,batched", "--score-only", "--no-slopes", "--no-kernel"),
                        ("store:", "  score "), 100))
    return out


def run_step(step: Step, env: dict) -> tuple[int | str, float, list[str]]:
    """(exit status or 'timed out', wall seconds, the picked lines) of one step."""
    started = time.perf_counter()
    # a process group of its own, so that a step past its limit is ended with the CLI children it started
    child = subprocess.Popen([sys.executable, str(HERE / step.script), *step.args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=step.limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return f"timed out at {step.limit_s} s", time.perf_counter() - started, []
    lines = [line.strip() for line in stdout.splitlines() if line.startswith(step.picks)]
    if child.returncode != 0:
        lines.append(stderr.strip().splitlines()[-1] if stderr.strip() else "no error message")
    return child.returncode, time.perf_counter() - started, lines


def largest_scale(seconds: dict[float, float], budget_s: float, bytes_at: dict[float, int], free_bytes: int,
                  floor: float) -> float:
    """The largest share of the published test sets whose store builds within `budget_s` and fills at most
    half the free disk: time and bytes taken as linear in the scale from the two measured builds (a fixed
    part, the records, and a per-case part, the vectors); at least `floor`, at most 1, two decimals."""
    by_time = _inverse(_linear(seconds), budget_s)
    by_disk = _inverse(_linear(bytes_at), free_bytes / 2)
    return max(floor, min(1.0, math.floor(min(by_time, by_disk) * 100 + 1e-9) / 100))


def _linear(points: dict[float, float]) -> tuple[float, float]:
    """(fixed, per unit of scale) through two measured points. Where the larger measured no more (noise),
    all of it is taken as per unit of scale: the estimate that leads to the smaller scale."""
    (x1, y1), (x2, y2) = sorted(points.items())
    if y2 > y1:
        slope = (y2 - y1) / (x2 - x1)
        return y1 - slope * x1, slope
    return 0.0, y2 / x2


def _inverse(line: tuple[float, float], limit: float) -> float:
    fixed, slope = line
    return (limit - fixed) / slope


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def build_scoring_store(work: Path, smoke: bool, budget_s: float, encoders: int, draws: int) -> tuple[Path, str]:
    """The store at the largest scale that fits, and a line saying what was chosen and why."""
    from score_scale import TASKS, build_store, capped

    tasks = capped(TASKS, 1) if smoke else TASKS
    calibration = (0.001, 0.002) if smoke else CALIBRATION_SCALES
    seconds, sizes = {}, {}
    for scale in calibration:
        folder = work / f"calibration-{scale:g}"
        started = time.perf_counter()
        build_store(folder, scale, encoders, n_boot=draws, tasks=tasks)
        seconds[scale], sizes[scale] = time.perf_counter() - started, folder_bytes(folder)
    free = shutil.disk_usage(work).free + sum(sizes.values())
    scale = largest_scale(seconds, budget_s, sizes, free, floor=calibration[0])
    store = work / "store"
    for measured in calibration:  # a calibration build at the chosen scale is the store: not built twice
        folder = work / f"calibration-{measured:g}"
        if measured == scale and not store.exists():
            folder.rename(store)
        else:
            shutil.rmtree(folder)
    started = time.perf_counter()
    if not store.exists():
        build_store(store, scale, encoders, n_boot=draws, tasks=tasks)
    built = seconds[scale] if scale in seconds else time.perf_counter() - started
    return store, (f"scoring store: scale {scale:g} of the published shape, {encoders} encoders, built here in "
                   f"{built:.0f} s (budget {budget_s:.0f} s; calibration builds "
                   + ", ".join(f"{s:g}: {t:.1f} s" for s, t in seconds.items()) + f"; {free / 1e9:.0f} GB free)")


def machine_line(smoke: bool) -> str:
    import torch

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True).stdout.strip()
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device (CPU smoke run)"
    return (f"{device}; {os.cpu_count()} CPUs; torch {torch.__version__}; commit {commit or 'unknown'}; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC" + ("; smoke sizes" if smoke else ""))


def table(rows: list[tuple[str, int | str, float, list[str]]]) -> str:
    lines = [HEADER, "|---|---|---|---|"]
    for label, status, seconds, figures in rows:
        lines.append(f"| {label} | {status} | {seconds:.0f} | {'<br>'.join(figures) or 'no figures printed'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("gpu_table.md"), help="where the table is written")
    parser.add_argument("--build-budget", type=float, default=45.0, help="seconds the scoring store's build may take")
    parser.add_argument("--draws", type=int, default=10_000, help="exact bootstrap draws of `score`")
    parser.add_argument("--no-scoring", action="store_true", help="probes and extraction only")
    parser.add_argument("--smoke", action="store_true", help="the CPU at smoke sizes, a tiny store (seconds)")
    args = parser.parse_args(argv)
    import torch

    if not args.smoke and not torch.cuda.is_available():
        print("gpu_suite: no CUDA device visible to torch; --smoke runs the same steps on the CPU", file=sys.stderr)
        return 2
    draws, encoders = (10, 3) if args.smoke else (args.draws, PUBLISHED_ENCODERS)
    budget = 1.0 if args.smoke else args.build_budget  # smoke: below any build's fixed cost, so the smallest scale
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent / "src"), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-suite-") as scratch:
        work = Path(scratch)
        store, chosen = (None, "scoring left out") if args.no_scoring else \
            build_scoring_store(work, args.smoke, budget, encoders, draws)
        print(chosen, flush=True)
        rows = []
        for step in steps(args.smoke, store, draws, encoders):
            status, seconds, figures = run_step(step, env)
            rows.append((step.label, status, seconds, figures))
            print(f"{step.label}: exit {status} in {seconds:.0f} s", flush=True)
    text = f"{machine_line(args.smoke)}\n{chosen}\n\n{table(rows)}\n\ntotal {time.perf_counter() - started:.0f} s\n"
    args.out.write_text(text)
    print(f"\n{text}\nwritten to {args.out}")
    return 0 if all(status == 0 for _, status, _, _ in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
