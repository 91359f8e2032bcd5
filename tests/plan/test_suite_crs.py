"""The suite's `crs:` block (pre-registered constants) and `baseline:` flag, and what scoring does with them."""

import pytest

from crsbench.crs.definition import CRSConfig
from crsbench.errors import SuiteError
from crsbench.plan.suite import parse_suite

BASE = {
    "name": "s",
    "encoders": [{"name": "raw-pixels", "baseline": True}, "colour-texture"],
    "tasks": [{"name": "t", "dataset": {"kind": "demo", "specialty": "derm"}}],
}


def test_crs_block_builds_the_config_and_baselines_are_listed():
    suite = parse_suite({**BASE, "crs": {"anchors": {"calibration": 0.85}, "scales": {"discrimination": 0.03}}})
    config = suite.crs_config(n_boot=50)
    assert config.anchor_vector(["calibration", "discrimination"]).tolist() == [0.85, 0.5]
    assert config.scale_vector(["discrimination"]).tolist() == [0.03]
    assert config.n_boot == 50
    assert suite.baselines == ["raw-pixels"]
    assert parse_suite(BASE).crs_config() == CRSConfig()


def test_score_settings_do_not_change_the_suite_hash():
    plain = parse_suite({**BASE, "encoders": ["raw-pixels", "colour-texture"]})
    marked = parse_suite({**BASE, "crs": {"scales": {"robustness": 0.1}}})
    assert plain.suite_hash() == marked.suite_hash()


@pytest.mark.parametrize("crs, field", [({"scales": {"robustness": 0}}, "crs.scales"), ({"speed": 1}, "crs.speed")])
def test_a_bad_crs_block_names_the_field(crs, field):
    with pytest.raises(SuiteError, match=field):
        parse_suite({**BASE, "crs": crs})


def test_built_in_suites_mark_the_floor_baselines():
    from crsbench.api import open_suite

    for name in ("demo", "demo-quick", "crs-bench"):
        assert set(open_suite(name).baselines) == {"raw-pixels", "colour-texture"}, name
