"""A simulated cohort with refits and patient attributes, its refit records given the per-subgroup metrics a
run's evaluation makes, for the subgroup tests (tests/subgroups/)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from crsbench.scoring.subgroups import MIN_CASES, subgroup_metrics
from crsbench.simulation.cohort import Design, EncoderTruth

ENCODERS = (EncoderTruth("a", 1.2, refit_sd=0.3), EncoderTruth("b", 1.6, 0.8, refit_sd=0.3))
DESIGN = Design(ENCODERS, n_cases=400, seeds=(0, 1), tasks=("t1", "t2"), task_classes=(2, 3),
                perturbations=("noise",), severities=(3,))


def with_attributes(stored, seed: int = 0, sites=("north", "south")):
    """Sex (F/M), a site and a rare site (fewer than MIN_CASES cases) on every test set."""
    rng = np.random.default_rng(seed)
    for test_set in list(stored.test_sets["test_set"]):
        cases = stored.case_set(test_set)
        n = len(cases.case_id)
        site = rng.choice(list(sites), size=n)
        site[: MIN_CASES - 5] = "rare"
        stored.subgroups[test_set] = pd.DataFrame({"case_id": cases.case_id, "sex": rng.choice(["F", "M"], size=n),
                                                   "site": site})
    return stored


def refit_metrics(records: pd.DataFrame, stored, attributes=None, from_own: bool = False) -> pd.DataFrame:
    """Each clean refit record with the subgroup metrics its evaluation makes (from its stored predictions, which a
    run does not keep); `attributes` limits them to some attributes; from_own: every refit given the run's own
    probe's values (no spread over refits)."""
    records = records.copy()
    records["subgroup_metrics"] = None
    index = stored.index.set_index("record_key")
    own = records[(records["refit"] == 0) & (records["fraction"] == 1.0) & (records["condition_kind"] == "clean")]
    own = own.drop_duplicates(["encoder", "task"]).set_index(["encoder", "task"])["record_key"]
    for i, row in records[(records["refit"] > 0) & (records["condition_kind"] == "clean")].iterrows():
        where = index.loc[own.loc[(row["encoder"], row["task"])] if from_own else row["record_key"]]
        cases = stored.case_set(where["test_set"])
        kept = {a: v for a, v in stored.attributes(where["test_set"]).items() if attributes is None or a in attributes}
        prior = np.asarray(json.loads(row["positives_train"]), dtype=float) / row["n_train"]
        records.at[i, "subgroup_metrics"] = json.dumps(subgroup_metrics(
            row["task_type"], cases.labels, stored.probabilities(where["probs"]), kept, prior))
    return records
