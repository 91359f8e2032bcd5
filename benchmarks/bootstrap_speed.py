"""Paired-seed bootstrap speed: the vectorised chain against a plain per-draw loop, same run.

A synthetic cohort of 15 encoders x 3 tasks x 5 seeds (6 label fractions, 5 perturbations x 5
severities, one shift dataset) goes through compute_axes once; then
  - vectorised: paired_seed_bootstrap with 10,000 draws (the whole chain per draw, per task and
    across tasks: seed-means, task-means, skill profile, CRS, ranks, intervals, tier);
  - baseline: the same chain written as a straightforward loop over draws (pandas seed-means per
    draw, then crs_scores), timed on a few hundred draws and extrapolated per draw.
The two are checked to agree on the baseline's draws.
Run: python benchmarks/bootstrap_speed.py [--draws 10000] [--baseline-draws 200] [--smoke]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from crsbench.scoring.axes import compute_axes
from crsbench.crs.definition import CRSConfig, crs_scores
from crsbench.scoring.bootstrap_summary import competition_ranks
from crsbench.scoring.statistics import crs_from_counts, paired_seed_bootstrap, seed_resample_counts

N_ENCODERS, TASKS, SEEDS = 15, ("derm", "ophtho", "cxr"), (0, 1, 2, 3, 4)
FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
PERTURBATIONS = ("gaussian_noise", "motion_blur", "jpeg", "contrast_down", "pixelate")
HEADER = "cohort:"
SMOKE = dict(draws=200, baseline_draws=5, repeats=1)


def synthetic_records(rng_seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(rng_seed)
    rows = []
    for e in range(N_ENCODERS):
        quality, hunger, fragility = rng.uniform(0.75, 0.92), rng.uniform(0.01, 0.05), rng.uniform(0.005, 0.03)
        ece = rng.uniform(0.02, 0.12)
        for task in TASKS:
            clean = quality + rng.normal(0, 0.02)
            for seed in SEEDS:
                base = dict(encoder=f"encoder_{e:02d}", task=task, seed=seed, brier=0.2, nll=0.5)

                def add(fraction, kind, condition, severity, auroc, ece_value):
                    rows.append(
                        dict(base, fraction=fraction, condition_kind=kind, condition=condition,
                             severity=severity, auroc=auroc, ece=ece_value)
                    )

                for fraction in FRACTIONS:
                    noise = 0.0 if fraction == 1.0 else rng.normal(0, 0.008)
                    add(fraction, "clean", "clean", 0, clean - hunger * -np.log10(fraction) + noise, ece + rng.normal(0, 0.004))
                for perturbation in PERTURBATIONS:
                    for severity in range(1, 6):
                        add(1.0, "perturbation", perturbation, severity, clean - fragility * severity, ece * 1.5)
                if task == "cxr":
                    add(1.0, "shift", "shift:mimic", 0, clean - rng.uniform(0.03, 0.1), ece * 2)
    return pd.DataFrame(rows)


def loop_bootstrap(axes, counts: np.ndarray, reference: str) -> np.ndarray:
    """The straightforward implementation: one draw at a time, pandas and the DataFrame CRS API."""
    per_seed = axes.per_seed.set_index("seed")
    used = list(axes.axes)
    out = []
    for row in counts:
        drawn = np.repeat(np.array(axes.seeds), row)
        sample = per_seed.loc[drawn].reset_index()
        sample["draw_slot"] = np.repeat(np.arange(len(drawn)), len(sample) // len(drawn))
        by_task = sample.groupby(["encoder", "task"])[used].mean()
        table = by_task.groupby("encoder").mean()
        scores = crs_scores(table, reference)["crs"]
        competition_ranks(scores.to_numpy())
        out.append(scores.reindex(list(axes.encoders)).to_numpy())
    return np.array(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--baseline-draws", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="best of N, since the CPU is shared")
    parser.add_argument("--smoke", action="store_true", help=f"seconds, the target not judged: {SMOKE}")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)

    records = synthetic_records()
    start = time.perf_counter()
    axes = compute_axes(records)
    axes_time = time.perf_counter() - start
    reference = axes.encoders[0]
    print(f"{HEADER} {len(axes.encoders)} encoders x {len(axes.tasks)} tasks x {len(axes.seeds)} seeds, "
          f"{len(records)} records, axes {list(axes.axes)} (compute_axes {axes_time:.2f} s, once)")

    vectorised = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        paired_seed_bootstrap(axes, reference, CRSConfig(n_boot=args.draws, seed=0))
        vectorised.append(time.perf_counter() - start)
    fast = min(vectorised)

    counts = seed_resample_counts(np.random.default_rng(1), len(axes.seeds), args.baseline_draws)
    start = time.perf_counter()
    slow_scores = loop_bootstrap(axes, counts, reference)
    slow = time.perf_counter() - start
    fast_scores, _ = crs_from_counts(axes, counts, axes.encoders.index(reference), CRSConfig())
    agree = np.max(np.abs(fast_scores - slow_scores))

    per_draw_fast, per_draw_slow = fast / args.draws, slow / args.baseline_draws
    print(f"vectorised: {args.draws} draws in {fast:.3f} s (best of {args.repeats}: "
          f"{', '.join(f'{t:.3f}' for t in vectorised)}), {per_draw_fast * 1e6:.1f} us/draw")
    print(f"loop baseline: {args.baseline_draws} draws in {slow:.3f} s, {per_draw_slow * 1e3:.2f} ms/draw, "
          f"{per_draw_slow * args.draws:.1f} s extrapolated to {args.draws} draws")
    print(f"speed-up: {per_draw_slow / per_draw_fast:.0f}x; max |CRS difference| on shared draws: {agree:.1e}")
    if not args.smoke:  # a few hundred draws measure start-up more than the per-draw cost
        print(f"target (10,000 draws < 5 s): {'met' if fast * 10_000 / args.draws < 5 else 'MISSED'}")


if __name__ == "__main__":
    main()
