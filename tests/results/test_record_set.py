"""Run records as one value: validated once, then passed from stage to stage unchecked."""

import pandas as pd
import pytest

from _synthetic_records import make_records
from crsbench.crs.definition import CRSConfig
from crsbench.results import records as schema
from crsbench.results.record_set import Records
from crsbench.scoring.score import score_records


@pytest.fixture
def frame():
    return make_records(encoders=("a", "b", "c"), tasks=("derm", "cxr"), seeds=(0, 1))


def test_scoring_validates_the_records_once(frame, monkeypatch):
    calls = []
    original = schema.normalise_keys
    monkeypatch.setattr(schema, "normalise_keys", lambda records: calls.append(len(records)) or original(records))
    report = score_records(frame, reference="a", config=CRSConfig(n_boot=50))
    assert calls == [len(frame)] and len(report.point.scores) == 3
    calls.clear()
    score_records(Records.of(frame), reference="a", config=CRSConfig(n_boot=50))
    assert calls == [len(frame)]  # in Records.of, not again inside


def test_a_records_value_scores_as_its_frame_does(frame):
    config = CRSConfig(n_boot=50)
    by_value = score_records(Records.of(frame), reference="a", config=config)
    by_frame = score_records(frame, reference="a", config=config)
    pd.testing.assert_frame_equal(by_value.point.scores, by_frame.point.scores)


def test_the_value_carries_the_seed_aggregation_and_subsets(frame):
    records = Records.of(frame)
    pd.testing.assert_frame_equal(records.seed_means(), schema.aggregate_seeds(frame))
    assert records.encoders == ("a", "b", "c") and records.tasks == ("cxr", "derm")
    derm = records.where(records.frame["task"] == "derm")
    assert derm.tasks == ("derm",) and Records.of(derm) is derm
    assert set(records.headline()["condition_kind"]) == {"clean"} and set(records.headline()["fraction"]) == {1.0}


def test_invalid_or_empty_records_are_refused_by_the_schema(frame):
    with pytest.raises(schema.RecordsError, match="lack required column"):
        Records.of(frame.drop(columns=["seed"]))
    with pytest.raises(schema.RecordsError, match="share an evaluation key"):
        Records.of(pd.concat([frame, frame.iloc[:1]]))
    empty = Records.view(frame.iloc[:0])
    assert len(empty) == 0 and empty.grid is not None
    with pytest.raises(schema.RecordsError, match="empty"):
        Records.of(empty)
