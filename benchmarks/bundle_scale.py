"""Bundles at the published scale: peak memory and time of `verify`, `compare` and `leaderboard` of two
bundles against `score` of the same records from a results folder.

The results folder is score_scale's store of the published shape (15 encoders and 2 floor baselines;
derm 5,000 x 8 classes, ophtho 730 x 5 grades, cxr 20,000 x 5 labels with a 5,000-case shift set;
5 seeds x 6 fractions; every perturbation at 5 severities), written with the project's own writers.
It is split into two bundles as two groups would publish them: the reference with the odd encoders,
the reference with the even ones (the reference's records are in both and read once). Each command
runs as a child process of the CLI; its wall and CPU time come from wait4, its peak RSS from the child's own
VmHWM (score_scale.timed_cli).

What the figures mean: `verify` holds no probability vector (one Parquet row group at a time, about
16 MB); `compare` and `leaderboard` keep up to 32 MB of vectors in memory and the rest memory-mapped,
as `score` maps a results folder's; the difference to `score` is what reading bundles costs.

Run: python benchmarks/bundle_scale.py [--scale 1.0] [--draws 200] [--out DIR [--reuse]] [--keep]
     python benchmarks/bundle_scale.py --smoke      (a few percent of the shape, seconds: what the test runs)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from score_scale import TASKS, build_store, capped, encoder_truths, timed_cli  # noqa: E402  (a sibling script)

# a few percent of the cases, one perturbation per task: seconds, every command
SMOKE = {"scale": 0.01, "encoders": 5, "draws": 20, "perturbations": 1}
HEADER = "  command"


def split_bundles(store: Path, work: Path, n_encoders: int) -> tuple[Path, Path, dict]:
    """Two bundles of the store: the reference with the odd encoders, and with the even ones."""
    from crsbench.bundles import from_results, write_bundle

    whole = from_results(store)
    names = [name for name, *_ in encoder_truths(n_encoders)]
    reference, rest = names[0], names[1:]
    paths, counts = [], {}
    for label, chosen in (("a", [reference, *rest[0::2]]), ("b", [reference, *rest[1::2]])):
        part = whole.__class__(**{**whole.__dict__})
        part.records = whole.records[whole.records["encoder"].isin(chosen)].reset_index(drop=True)
        part.index = whole.index[whole.index["record_key"].isin(set(part.records["record_key"]))].reset_index(drop=True)
        path, _ = write_bundle(part, work / f"{label}.crsb")
        paths.append(path)
        counts[label] = {"records": len(part.records), "vectors": int(part.index["probs"].nunique()),
                         "bytes": path.stat().st_size}
    return paths[0], paths[1], counts


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="share of the published test-set sizes")
    parser.add_argument("--encoders", type=int, default=17, help="encoders including the two baselines")
    parser.add_argument("--draws", type=int, default=200, help="bootstrap draws of score, compare and leaderboard")
    parser.add_argument("--perturbations", type=int, default=None, help="at most this many perturbations per task")
    parser.add_argument("--engine", default="batched", help="the case bootstrap engine every command uses")
    parser.add_argument("--smoke", action="store_true", help=f"the smoke size: {SMOKE}")
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--reuse", action="store_true", help="measure the store and bundles already in --out")
    parser.add_argument("--only", default="", help="measure these commands alone (comma-separated: verify, score, "
                        "compare, leaderboard)")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    work = args.out or Path(tempfile.mkdtemp(prefix="bundle-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    rows = []
    try:
        if args.build_only:
            started = time.perf_counter()
            built = build_store(work / "store", args.scale, args.encoders, n_boot=args.draws,
                                tasks=capped(TASKS, args.perturbations))
            _, _, counts = split_bundles(work / "store", work, args.encoders)
            print(f"scale {args.scale} of the published shape, {args.encoders} encoders: {built['records']} records; "
                  "bundles " + "; ".join(f"{k}: {v['records']} records, {v['vectors']} vectors, "
                                         f"{v['bytes'] / 1e6:.1f} MB" for k, v in counts.items())
                  + f"; built in {time.perf_counter() - started:.0f} s", flush=True)
            return rows
        if not args.reuse:
            # built in a child, so that the parent running the measured commands stays small
            build = [sys.executable, __file__, "--build-only", "--out", str(work), "--scale", str(args.scale),
                     "--encoders", str(args.encoders), "--draws", str(args.draws)]
            build += ["--perturbations", str(args.perturbations)] if args.perturbations is not None else []
            subprocess.run(build, env=env, check=True)
        a, b = work / "a.crsb", work / "b.crsb"
        print(f"measured: scale {args.scale} of the published shape, {args.encoders} encoders, {args.draws} draws "
              f"({args.engine} engine); a.crsb {a.stat().st_size / 1e6:.1f} MB, b.crsb {b.stat().st_size / 1e6:.1f} MB",
              flush=True)
        n_boot = ["--n-boot", str(args.draws)]
        commands = (("verify a.crsb", ["verify", str(a)]),
                    ("score (results folder)", ["score", str(work / "store"), *n_boot]),
                    ("compare a b", ["compare", str(a), str(b), *n_boot]),
                    ("leaderboard a b", ["leaderboard", str(a), str(b), "-o", str(work / "site"), *n_boot]))
        print(f"{HEADER:<26}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}", flush=True)
        chosen = [c for c in args.only.split(",") if c]
        for label, cli in commands:
            if chosen and label.split()[0] not in chosen:
                continue
            seconds, cpu, rss, _ = timed_cli(cli, env, args.engine)
            rows.append({"command": label, "wall_s": seconds, "cpu_s": cpu, "rss_mb": rss})
            print(f"  {label:<24}{seconds:9.1f}{cpu:9.1f}{rss:13.0f}", flush=True)
        score = next((r["rss_mb"] for r in rows if r["command"].startswith("score")), float("nan"))
        for row in rows:
            if row["command"].startswith(("compare", "leaderboard")):
                print(f"  {row['command']}: {row['rss_mb'] - score:+.0f} MB against score of the results folder")
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    return rows


if __name__ == "__main__":
    main()
