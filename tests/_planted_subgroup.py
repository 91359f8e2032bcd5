"""A simulated cohort with one planted subgroup gap, shared by the subgroup tests of the advice and the
leaderboard: encoders a and b of equal strength on 1,200 cases, sex F/M alternating, and b's probabilities
on F replaced by noise (its AUROC there falls to about 0.5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.crs.definition import CRSConfig
from crsbench.scoring.score import score_records
from crsbench.simulation.cohort import Design, EncoderTruth, simulate


def planted_sex_gap(n_boot: int = 300):
    """(records, stored predictions, the ScoreReport with a as the reference)."""
    design = Design((EncoderTruth("a", 2.4), EncoderTruth("b", 2.4)), n_cases=1200, seeds=(0,),
                    perturbations=("noise",), severities=(3,), difficulty_sd=0.3)
    records, stored = simulate(design, np.random.default_rng(4))
    (test_set,) = stored.test_sets["test_set"]
    cases = stored.case_set(test_set)
    sex = np.where(np.arange(len(cases.case_id)) % 2, "F", "M")
    stored.subgroups[test_set] = pd.DataFrame({"case_id": cases.case_id, "sex": sex})
    key = records.query("encoder == 'b' and condition_kind == 'clean' and fraction == 1.0")["record_key"].iloc[0]
    digest = stored.index.set_index("record_key").loc[key, "probs"]
    probs = np.array(stored.probabilities(digest))
    noise = np.random.default_rng(1).random((len(probs), 1))
    probs[sex == "F"] = np.hstack([1 - noise, noise])[sex == "F"].astype(np.float32)
    stored._memory[digest] = probs
    report = score_records(records, "a", CRSConfig(n_boot=n_boot, n_weight_draws=0), predictions=stored)
    return records, stored, report
