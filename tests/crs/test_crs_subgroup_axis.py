"""The CRS's properties with the optional subgroup axis on (crs.definition.SUBGROUP_AXIS, a fifth axis): the
same reference invariance, cohort invariance and chance floor as with the published four; the key validated like
the others; off by default."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crsbench.crs.definition import DEFAULT_ANCHORS, DEFAULT_SCALES, SUBGROUP_AXIS, CRSConfig, crs_batch

AXES5 = ("discrimination", "calibration", "label_efficiency", "robustness", SUBGROUP_AXIS)
PROPERTY = settings(deadline=None, max_examples=80)
auroc_like = st.integers(32, 64).map(lambda k: k / 64)
skill_like = st.integers(-16, 64).map(lambda k: k / 64)
profile = st.tuples(auroc_like, skill_like, auroc_like, auroc_like, auroc_like).map(list)
ON = CRSConfig(subgroup_axis=["sex"], n_boot=0, n_weight_draws=0)


@st.composite
def cohorts(draw, min_encoders=2, max_encoders=8):
    n = draw(st.integers(min_encoders, max_encoders))
    return np.array(draw(st.lists(profile, min_size=n, max_size=n)), dtype=float)


@st.composite
def configs(draw):
    return CRSConfig(subgroup_axis=["sex"], axis_weights={a: float(draw(st.integers(1, 6))) for a in AXES5},
                     n_boot=0, n_weight_draws=0)


def crs(values, ref, config=ON):
    return crs_batch(np.asarray(values, dtype=float), ref, config, AXES5).crs


def _order(scores):
    return sorted(range(len(scores)), key=lambda i: (-round(float(scores[i]), 9), i))


@PROPERTY
@given(cohorts(min_encoders=3), configs())
def test_with_the_subgroup_axis_the_order_is_the_same_under_every_reference_and_the_reference_scores_0(values, config):
    orders = {tuple(_order(crs(values, ref, config))) for ref in range(len(values))}
    assert len(orders) == 1
    for ref in range(len(values)):
        assert crs(values, ref, config)[ref] == 0.0


def test_with_the_subgroup_axis_adding_removing_or_cloning_encoders_never_changes_a_score_by_simulation():
    """Simulation: 1,000 random 12-encoder cohorts with five axes, each edited three ways: a score changed in 0
    of 3,000 edits (95 % upper bound 3/3000 = 0.1 %, rule of three)."""
    rng = np.random.default_rng(61)
    low, high = [0.6, 0.0, 0.55, 0.55, 0.5], [0.95, 0.6, 0.95, 0.95, 0.95]
    changed = 0
    for _ in range(1000):
        values = rng.uniform(low, high, (12, 5))
        base = crs(values, 0)
        changed += not np.array_equal(crs(np.vstack([values, rng.uniform(low, high)]), 0)[:12], base)
        changed += not np.array_equal(crs(np.delete(values, 5, axis=0), 0), np.delete(base, 5))
        changed += not np.array_equal(crs(np.vstack([values, values[[2, 2, 2]]]), 0)[:12], base)
    assert changed == 0


@PROPERTY
@given(st.lists(st.tuples(*(st.integers(1, 32) for _ in AXES5)), min_size=1, max_size=6), st.data())
def test_with_the_subgroup_axis_an_uninformative_encoder_is_not_rewarded(steps, data):
    """The prior predictor sits at chance on the worst-subgroup axis too (AUROC 0.5 in every subgroup): below
    every encoder above chance on every axis, whichever encoder is the reference."""
    anchors, scales = ON.anchor_vector(AXES5), ON.scale_vector(AXES5)
    above = anchors + np.array(steps, dtype=float) / 64 * scales
    values = np.vstack([above, [0.5, 0.0, 0.5, 0.5, 0.5]])
    scores = crs(values, data.draw(st.integers(0, len(values) - 1)))
    assert (scores[-1] < scores[:-1]).all()


def test_a_worse_worst_subgroup_lowers_the_crs_by_its_weight_times_its_skill():
    values = np.array([[0.85, 0.3, 0.8, 0.8, 0.80], [0.85, 0.3, 0.8, 0.8, 0.70]])
    scores = crs(values, 0)
    assert scores[1] == pytest.approx(-100 * (0.10 / 0.5) / 5)  # equal weights: a fifth of the skill's move


def test_the_axis_has_chance_as_anchor_and_the_auroc_span():
    assert DEFAULT_ANCHORS[SUBGROUP_AXIS] == 0.5 and DEFAULT_SCALES[SUBGROUP_AXIS] == 0.5


@pytest.mark.parametrize("attributes, message", [
    ([], "name 1 to 16 attributes"),
    (["sex", "sex"], r"\['sex'\] named twice"),
    ([" sex"], "is not a column name"),
    (["x" * 65], "is not a column name"),
])
def test_bad_subgroup_axis_settings_are_refused_naming_the_key(attributes, message):
    with pytest.raises(ValueError, match=message) as error:
        CRSConfig(subgroup_axis=attributes)
    assert "subgroup_axis" in str(error.value)


def test_the_axis_is_off_by_default_and_an_old_crs_block_validates_unchanged():
    assert CRSConfig().subgroup_axis is None
    old = {"n_boot": 200, "axis_weights": {"discrimination": 2.0}, "definition": "components"}
    assert CRSConfig(**old) == CRSConfig(**old, subgroup_axis=None)
    assert "subgroup_axis" not in CRSConfig(**old).model_dump(exclude_unset=True)
