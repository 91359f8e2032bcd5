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


# every key a suite's crs: block could hold before the definition and the statistics settings were apart
OLD_KEYS = {
    "anchors": {"calibration": 0.1}, "scales": {"discrimination": 0.4}, "delta": 0.06, "margin": 0.03,
    "axis_weights": {"robustness": 2.0}, "n_boot": 123, "seed": 7, "level": 0.9, "interval": "expanded",
    "n_weight_draws": 11, "weight_concentration": 2.0, "resample": "seeds", "target": "fitted-probes",
    "bootstrap_engine": "reference", "definition": "components", "component_weights": {"worst": 2.0},
    "tolerance": 0.03, "balance_tau": 0.2,
}


def test_an_old_crs_block_validates_unchanged_and_splits_into_its_two_halves():
    from crsbench.crs.definition import CRSDefinition
    from crsbench.crs.statistics_settings import StatisticsSettings

    config = parse_suite({**BASE, "crs": OLD_KEYS}).crs_config()
    assert config.model_dump(exclude_unset=True) == OLD_KEYS
    definition, statistics = config.score_definition, config.statistics
    assert set(CRSDefinition.model_fields).isdisjoint(StatisticsSettings.model_fields)
    # the one key added since, the optional subgroup axis, is part of what the score is
    assert set(CRSDefinition.model_fields) | set(StatisticsSettings.model_fields) == set(OLD_KEYS) | {"subgroup_axis"}
    assert "subgroup_axis" in CRSDefinition.model_fields and definition.subgroup_axis is None
    assert definition.model_dump() == {k: v for k, v in config.model_dump().items() if k in CRSDefinition.model_fields}
    assert (statistics.n_boot, statistics.interval, statistics.bootstrap_engine) == (123, "expanded", "reference")
    axes = ["discrimination", "calibration", "robustness"]
    assert definition.chain(axes).axis_weights.tolist() == config.chain(axes).axis_weights.tolist()
    with pytest.raises(ValueError):
        CRSDefinition(n_boot=10)  # what the score is holds nothing of how it is estimated
