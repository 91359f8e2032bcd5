"""Run records built by hand in the schema of docs/records.md, for the read side's tests."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from crsbench.results.records import RECORD_SCHEMA_VERSION

FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
PERTURBATIONS = ("gaussian_noise", "defocus_blur")


def record(encoder, task, seed, fraction, kind="clean", condition="clean", severity=0, auroc=0.8, ece=0.05, **extra):
    return {
        "record_key": f"{encoder}|{task}|{seed}|{fraction}|{condition}|{severity}",
        "encoder": encoder,
        "task": task,
        "task_type": "single_label",
        "seed": seed,
        "fraction": fraction,
        "condition_kind": kind,
        "condition": condition,
        "severity": severity,
        "auroc": auroc,
        "balanced_accuracy": auroc - 0.1,
        "kappa_quadratic": None,
        "ece": ece,
        "ece_adaptive": ece,
        "ece_classwise": ece,
        "brier": extra.pop("brier", 0.2),
        "nll": extra.pop("nll", 0.5),
        "n_eval": 200,
        # training prevalence 0.3, test prevalence 0.3: the prior predictor's Brier is 0.21
        "n_train": 1000,
        "positives_train": json.dumps([700, 300]),
        "positives_eval": json.dumps([140, 60]),
        "schema_version": RECORD_SCHEMA_VERSION,
        **extra,
    }


def make_records(
    encoders=("resnet50", "vit_b16", "dinov2", "biomedclip"),
    tasks=("derm", "cxr"),
    seeds=(0, 1, 2),
    fractions=FRACTIONS,
    perturbations=PERTURBATIONS,
    severities=(1, 2, 3, 4, 5),
    shift_tasks=("cxr",),
    rng_seed=0,
) -> pd.DataFrame:
    """A cohort whose encoders differ in quality, calibration, label hunger and fragility.

    At fraction 1.0 the probe sees the whole training set whatever the seed, so clean, perturbed
    and shift metrics do not vary with the seed; label-fraction metrics do.
    """
    rng = np.random.default_rng(rng_seed)
    rows = []
    for i, encoder in enumerate(encoders):
        quality = 0.78 + 0.03 * ((i * 7) % len(encoders))
        hunger = 0.02 + 0.01 * i
        fragility = 0.01 + 0.006 * ((i * 3) % len(encoders))
        ece = 0.03 + 0.01 * ((i * 5) % len(encoders))
        for t, task in enumerate(tasks):
            clean = quality - 0.02 * t
            for seed in seeds:
                for fraction in fractions:
                    noise = 0.0 if fraction == 1.0 else rng.normal(0, 0.006)
                    auroc = clean - hunger * -np.log10(fraction) + noise
                    rows.append(record(encoder, task, seed, fraction, auroc=auroc, ece=ece + 0.01 * (1 - fraction),
                                       brier=0.2 - 0.2 * (clean - 0.75) + ece))
                for p, perturbation in enumerate(perturbations):
                    for severity in severities:
                        auroc = clean - fragility * severity * (1 + 0.3 * p)
                        rows.append(record(encoder, task, seed, 1.0, "perturbation", perturbation, severity, auroc, ece * 2))
                if task in shift_tasks:
                    rows.append(record(encoder, task, seed, 1.0, "shift", "shift:mimic", 0, clean - 0.08 + 0.01 * i, ece * 3))
    return pd.DataFrame(rows)


def one_task_records(curve, perturbed=(), shift=None, ece=0.05, encoders=("a", "b"), seeds=(0,)):
    """Every encoder and seed gets the same hand-written numbers: `curve` maps fraction -> AUROC."""
    rows = []
    for encoder in encoders:
        for seed in seeds:
            for fraction, auroc in curve.items():
                rows.append(record(encoder, "t", seed, fraction, auroc=auroc, ece=ece))
            for condition, severity, auroc in perturbed:
                rows.append(record(encoder, "t", seed, 1.0, "perturbation", condition, severity, auroc))
            if shift is not None:
                rows.append(record(encoder, "t", seed, 1.0, "shift", "shift:other", 0, shift))
    return pd.DataFrame(rows)
