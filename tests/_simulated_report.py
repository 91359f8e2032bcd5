"""A scored cohort with stored per-case predictions, for the report's figures that need them
(reliability diagrams, per-class AUROC, the case-level intervals): crsbench.simulation.cohort's known
population, three classes, long encoder names that share a prefix, a floor baseline."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from crsbench.crs.definition import CRSConfig
from crsbench.scoring.score import score_records
from crsbench.simulation.cohort import Design, EncoderTruth, simulate

LONG = "vision-transformer-base-patch16-224-in21k"
DESIGN = Design((EncoderTruth(f"{LONG}-ft-derm", 1.9, fragility=0.1), EncoderTruth(f"{LONG}-original", 1.5),
                 EncoderTruth("raw-pixels", 0.9, slope=0.7)), n_cases=240, n_classes=3,
                class_priors=(0.5, 0.35, 0.15), seeds=(0, 1, 2), perturbations=("noise", "blur"),
                tasks=("derm", "fundus"))
COSTS = {f"{LONG}-ft-derm": 0.021, f"{LONG}-original": 0.019, "raw-pixels": 0.0004}


def per_class(records, stored):
    """Each record's one-vs-rest AUROC per class, from its stored predictions (scikit-learn)."""
    out = []
    index = stored.index.set_index("record_key")
    for key in records["record_key"]:
        labels = stored.case_set(index.loc[key, "test_set"]).labels.astype(int)
        probs = stored.probabilities(key)
        out.append(json.dumps([float(roc_auc_score(labels == k, probs[:, k])) for k in range(probs.shape[1])]))
    return out


def simulated_cohort():
    """The cohort's records (with their per-class AUROCs and dataset fields) and stored predictions, unscored:
    the same for every n_boot, so a test session simulates it once (tests/report/conftest.py)."""
    records, stored = simulate(DESIGN, np.random.default_rng(3))
    add_attributes(stored, np.random.default_rng(4))
    records["auroc_per_class"] = per_class(records, stored)
    records["dataset"], records["dataset_fingerprint"] = "sim-" + records["task"], "dfp-" + records["task"]
    return records, stored


def add_attributes(stored, rng: np.random.Generator) -> None:
    """Sex and a two-valued site per case on every test set, drawn apart from the cohort: the report's subgroup
    view has something to draw."""
    for test_set in sorted(stored.test_sets["test_set"]):
        cases = stored.case_set(test_set)
        n = len(cases.case_id)
        stored.subgroups[test_set] = pd.DataFrame({"case_id": cases.case_id, "sex": rng.choice(["F", "M"], n),
                                                   "site": rng.choice(["north", "south"], n, p=[0.6, 0.4])})


def scored_cohort(cohort, n_boot: int = 200):
    """(report, records, stored) of `cohort` (simulated_cohort's pair) scored with n_boot draws; the records
    are a copy, so a caller's changes stay its own."""
    records, stored = cohort
    records = records.copy()
    report = score_records(records, DESIGN.encoders[1].name, CRSConfig(n_boot=n_boot, n_weight_draws=200),
                           baselines=("raw-pixels",), predictions=stored)
    return report, records, stored
