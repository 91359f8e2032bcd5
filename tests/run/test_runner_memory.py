"""The runner holds at most one evaluation matrix at a time, however many conditions a task has."""

import gc
import weakref

from crsbench import api
from crsbench.plan.fit_units import plan
from crsbench.plan.suite import parse_suite
from crsbench.run.task_data import TaskData

SIZES = {"n_train": 40, "n_val": 16, "n_test": 24, "image_size": 32}


def _suite(tmp_path, **changes):
    return parse_suite({
        "name": "many-conditions", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": ["raw-pixels"],
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES},
                   "shift": {"kind": "demo", "specialty": "derm", "site": "B", **SIZES}}],
        "seeds": [0, 1], "fractions": [1.0], "probe": {"c_grid": [0.1]},
        "perturbations": {"select": ["gaussian_noise", "gamma_up"], "severities": [1, 2, 3, 4, 5]},
        **changes,
    })


def test_one_evaluation_matrix_at_a_time(tmp_path, monkeypatch):
    suite = _suite(tmp_path)
    conditions = plan(suite)[-1].conditions
    assert len(conditions) == 1 + 2 * 5 + 1  # clean, 10 perturbed, shift
    alive, training_alive, held_at_load, loads = [], [], [], []
    original_eval_set, original_training = TaskData.eval_set, TaskData.training

    def training(self):
        data = original_training(self)
        training_alive.extend(weakref.ref(m) for m in (data.x_train, data.x_val))
        return data

    def eval_set(self, condition):
        gc.collect()  # only what is still referenced survives, so a count of 0 is a real release
        held_at_load.append(sum(ref() is not None for ref in alive) + sum(ref() is not None for ref in training_alive))
        result = original_eval_set(self, condition)
        alive.append(weakref.ref(result.x))
        loads.append((self.encoder, condition))
        return result

    monkeypatch.setattr(TaskData, "training", training)
    monkeypatch.setattr(TaskData, "eval_set", eval_set)
    summary = api.run(suite)

    assert summary.written == summary.planned_records == 2 * len(conditions)
    assert len(loads) == len(set(loads)) == len(conditions)  # each evaluation set is read once
    assert max(held_at_load) == 0  # nothing else is held when the next matrix is read: one at a time

    loads.clear()
    assert api.run(suite).written == 0 and loads == []  # a rerun reads no evaluation set


def test_seeds_sharing_the_full_label_fit_are_scored_once_and_get_the_same_numbers(tmp_path, monkeypatch):
    """At 100% labels every seed's unit holds the same probe: it is scored once per condition, and every
    seed's record carries those numbers and predictions (and its own fit fields)."""
    import numpy as np

    from crsbench.run import runner as runner_module

    suite = _suite(tmp_path, seeds=[0, 1, 2], fractions=[0.5, 1.0])
    conditions = len(plan(suite)[-1].conditions)
    scored = []
    original = runner_module.evaluate

    def counting(fitted, condition, eval_set):
        scored.append((fitted.unit.seed, fitted.unit.fraction, condition.name, condition.severity))
        return original(fitted, condition, eval_set)

    monkeypatch.setattr(runner_module, "evaluate", counting)
    summary = api.run(suite)
    assert summary.written == 3 * conditions + 3  # every seed's records at 100%, and each seed's clean at 50%
    full = [s for s in scored if s[1] == 1.0]
    assert len(full) == len(set(full)) == conditions  # one scoring per condition, not one per seed
    assert len([s for s in scored if s[1] == 0.5]) == 3  # distinct fits below 100% are each scored

    records = api.records(summary.output)
    at_full = records[records.fraction == 1.0].sort_values(["condition", "severity", "seed"])
    metrics = ["auroc", "ece", "nll", "brier", "probe_c", "n_train", "embedding_hash_train"]
    for _, group in at_full.groupby(["condition", "severity"]):
        assert sorted(group.seed) == [0, 1, 2]
        assert (group[metrics].nunique() == 1).all()
    stored = api.predictions(summary.output)
    keys = at_full[at_full.condition_kind == "clean"].record_key.tolist()
    first = stored.probabilities(keys[0])
    assert all(np.array_equal(stored.probabilities(key), first) for key in keys[1:])
