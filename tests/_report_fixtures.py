"""A results folder written through the real store from synthetic records: encoders that differ in
quality, calibration, label hunger and fragility, with run and dataset rows, so a report has every
figure and provenance field to show. Names may be hostile strings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from crsbench.results.records import RECORD_FIELDS
from crsbench.results.store import ResultsStore

FRACTIONS = (0.05, 0.25, 1.0)
PERTURBATIONS = ("gaussian_noise", "jpeg")
SEVERITIES = (1, 3, 5)
SUITE_HASH = "feedc0ffee"


def _record(encoder, task, seed, fraction, kind, condition, severity, auroc, ece, run_id):
    return {
        **dict.fromkeys(RECORD_FIELDS),
        "record_key": f"{encoder}|{task}|{seed}|{fraction}|{condition}|{severity}",
        "run_id": run_id, "suite_hash": SUITE_HASH, "encoder": encoder,
        "encoder_revision": "rev-1" if encoder.endswith("a") else None, "encoder_fingerprint": f"fp-{encoder}",
        "task": task, "dataset": f"data-{task}", "dataset_fingerprint": f"dfp-{task}", "task_type": "single_label",
        "seed": seed, "fraction": fraction, "condition_kind": kind, "condition": condition, "severity": severity,
        "auroc": float(np.clip(auroc, 0.01, 0.99)), "balanced_accuracy": float(auroc) - 0.1, "ece": float(ece),
        "brier": 0.2 + ece, "nll": 0.5 + ece, "n_eval": 200, "positives_train": [100, 100],
        "positives_eval": [100, 100], "crsbench_version": "0.1.0", "created_at": f"2025-01-0{seed + 1}T00:00:00+00:00",
    }


def write_results(folder: Path, encoders: dict[str, tuple[float, float, float, float]], tasks=("derm", "cxr"),
                  seeds=(0, 1, 2), suite_name="synthetic", baselines=(), finished=True, axes=("all",)) -> Path:
    """encoders: name -> (clean AUROC, ECE, label hunger, fragility). Returns the folder."""
    rng = np.random.default_rng(0)
    run_id = "run-1"
    folder.mkdir(parents=True, exist_ok=True)
    suite_yaml = json.dumps({"name": suite_name, "reference": next(iter(encoders)),
                             "encoders": [{"name": e, "baseline": e in baselines} for e in encoders]})
    with ResultsStore(folder / "results.sqlite") as store:
        store.start_run({"run_id": run_id, "started_at": "2025-01-01T00:00:00+00:00", "suite_hash": SUITE_HASH,
                         "suite_name": suite_name, "suite_yaml": suite_yaml, "crsbench_version": "0.1.0",
                         "host": "test"})
        for task in tasks:
            store.add_run_dataset(run_id, task, "task", f"data-{task}", f"dfp-{task}", {"unreadable image": 3})
        n = 0
        for encoder, (auroc, ece, hunger, fragility) in encoders.items():
            for t, task in enumerate(tasks):
                base = auroc - 0.02 * t
                for seed in seeds:
                    for fraction in FRACTIONS:
                        value = base - hunger * np.log10(1 / fraction) + (rng.normal(0, 0.01) if fraction < 1 else 0)
                        store.add(_record(encoder, task, seed, fraction, "clean", "clean", 0, value, ece, run_id))
                        n += 1
                    if "all" in axes or "robustness" in axes:
                        for family in PERTURBATIONS:
                            for severity in SEVERITIES:
                                value = base - fragility * severity / 5
                                store.add(_record(encoder, task, seed, 1.0, "perturbation", family, severity, value,
                                                  ece, run_id))
                                n += 1
                        if t == 0:
                            store.add(_record(encoder, task, seed, 1.0, "shift", f"shift:{task}-b", 0,
                                              base - fragility / 2, ece, run_id))
                            n += 1
        if finished:
            store.finish_run(run_id, "2025-01-02T00:00:00+00:00", n)
    return folder


COHORT = {
    "steady-a": (0.86, 0.03, 0.02, 0.04),
    "sharp-b": (0.88, 0.12, 0.06, 0.20),
    "middling-c": (0.80, 0.05, 0.03, 0.08),
    "pixels": (0.62, 0.10, 0.02, 0.05),
}


# names a hostile user could give encoders and tasks
HOSTILE = {
    "<script>alert(1)</script>": (0.86, 0.03, 0.02, 0.04),
    '"><img src=x onerror=alert(2)>': (0.88, 0.12, 0.06, 0.20),
    "mid$dle_c {x}": (0.80, 0.05, 0.03, 0.08),
    "esc\x1b[31mred\x07\u202egnp.exe": (0.84, 0.06, 0.04, 0.10),  # terminal codes, a bell, a bidi override
}
HOSTILE_TASKS = ("<b>derm</b>", "cxr'\"")
