"""A score's settings are one typed value: attributes for code, the JSON summary's keys for files."""

import json

import pytest

from _synthetic_records import make_records
from crsbench.crs.definition import CRSConfig
from crsbench.scoring.score import score_records
from crsbench.scoring.settings import ScoreContext, ScoreSettings


@pytest.fixture(scope="module")
def report():
    return score_records(make_records(encoders=("a", "b", "c"), tasks=("derm",), seeds=(0, 1)), reference="a",
                         config=CRSConfig(n_boot=50, level=0.9))


def test_settings_are_typed_and_agree_with_the_summary(report):
    settings = report.settings
    assert isinstance(settings, ScoreSettings)
    assert (settings.reference, settings.level, settings.seeds, settings.tasks) == ("a", 0.9, (0, 1), ("derm",))
    assert sum(settings.axis_weights.values()) == pytest.approx(1.0)
    assert set(settings.anchors) == set(settings.scales) == set(report.axes_used)
    summary = json.loads(json.dumps(report.summary()))
    assert summary["settings"] == dict(settings) and "grid" not in summary["settings"]
    assert settings["seeds"] == [0, 1] and settings.get("no such key") is None
    with pytest.raises(KeyError):
        settings["no such key"]


def test_a_results_view_is_attached_not_mixed_in(report):
    records = make_records(encoders=("a", "b", "c"), tasks=("derm",), seeds=(0, 1))
    viewed = score_records(records, reference="a", config=CRSConfig(n_boot=50, level=0.9),
                           context=ScoreContext(grid={"partial_view": True, "kept": 3})).settings
    assert viewed.partial_view and not report.settings.partial_view
    assert dict(viewed)["grid"] == {"partial_view": True, "kept": 3} and viewed.level == report.settings.level
