"""Property tests of the Clinical Reliability Score (docs/crs.md, "Properties and how they are tested").

Axis values are drawn on a grid of multiples of 1/8 (and shifts and scales are powers of two where
exactness matters), so ties are common, which exercises the dominance logic, and floating-point
rounding cannot fake or hide a violation. Non-strict properties allow 1e-12 of rounding.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from crsbench.crs import (
    ChainSettings,
    CRSConfig,
    COMPONENTS,
    balance_array,
    crs_array,
    crs_scores,
    relative_profile,
    scaled_profile,
)

AXIS_NAMES = ("discrimination", "calibration", "label_efficiency", "robustness")
TOL = 1e-12
PROPERTY = settings(deadline=None, max_examples=60)

grid_value = st.integers(-40, 40).map(lambda k: k / 8)


@st.composite
def cohorts(draw, min_encoders: int = 2, max_encoders: int = 7):
    """(axis table, reference, noise_se or None) with dyadic values."""
    n = draw(st.integers(min_encoders, max_encoders))
    k = draw(st.integers(1, 4))
    values = draw(st.lists(st.lists(grid_value, min_size=k, max_size=k), min_size=n, max_size=n))
    table = pd.DataFrame(values, index=[f"enc{i}" for i in range(n)], columns=list(AXIS_NAMES[:k]))
    reference = draw(st.sampled_from(list(table.index)))
    noise = draw(
        st.one_of(
            st.none(),
            st.lists(st.integers(0, 8).map(lambda j: j / 16), min_size=k, max_size=k).map(
                lambda v: pd.Series(v, index=table.columns)
            ),
        )
    )
    return table, reference, noise


positive_weight = st.integers(1, 8).map(float)


@st.composite
def settings_for(draw, axes):
    """Component weights keeping Pareto strictness (dominance or balance > 0), positive axis weights, tau."""
    dominance = draw(st.integers(0, 8))
    balance = draw(st.integers(0 if dominance else 1, 8))
    components = {"dominance": float(dominance), "balance": float(balance), "worst_axis": float(draw(st.integers(0, 8)))}
    axis_weights = {a: draw(positive_weight) for a in axes}
    tau = draw(st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]))
    return dict(component_weights=components, axis_weights=axis_weights, tau=tau)


def score(table, reference, noise=None, **kwargs) -> pd.DataFrame:
    return crs_scores(table, reference, CRSConfig(**kwargs), noise_se=noise)


# --------------------------------------------------------------------------- Pareto-consistency


def dominates(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(a >= b) and np.any(a > b))


@PROPERTY
@given(data=st.data(), cohort=cohorts())
def test_pareto_dominating_encoder_scores_strictly_higher(data, cohort):
    table, reference, noise = cohort
    # plant a dominated copy of one encoder so every example has at least one dominating pair
    source = data.draw(st.sampled_from(list(table.index)))
    drop = np.array(data.draw(st.lists(st.integers(0, 4), min_size=table.shape[1], max_size=table.shape[1]))) / 8
    assume(drop.any())
    table = pd.concat([table, pd.DataFrame([table.loc[source].to_numpy() - drop], index=["planted"], columns=table.columns)])
    kwargs = data.draw(settings_for(list(table.columns)))
    scores = score(table, reference, noise, **kwargs)["crs"]
    values = table.to_numpy()
    pairs = 0
    for i, e in enumerate(table.index):
        for j, f in enumerate(table.index):
            if dominates(values[i], values[j]):
                pairs += 1
                assert scores[e] > scores[f], (e, f, scores[e], scores[f])
    assert pairs >= 1


def test_pareto_strictness_comes_from_dominance_when_balance_and_worst_tie():
    # x beats y on axis a only; both have the same worst axis (b), so with balance switched off
    # only dominance can separate them, and it must.
    table = pd.DataFrame({"a": [0.0, 1.0, 0.5], "b": [0.0, -1.0, -1.0]}, index=["ref", "x", "y"])
    scores = score(table, "ref", component_weights={"balance": 0, "worst_axis": 1})
    assert scores.loc["x", "worst_axis"] == scores.loc["y", "worst_axis"]
    assert scores.loc["x", "crs"] > scores.loc["y", "crs"]


# --------------------------------------------------------------------------- invariance


@PROPERTY
@given(cohort=cohorts(), axis=st.integers(0, 3), power=st.integers(-3, 3), shift=grid_value)
def test_shifting_and_scaling_an_axis_for_everyone_changes_nothing_exactly(cohort, axis, power, shift):
    table, reference, noise = cohort
    assume(axis < table.shape[1])
    scale = 2.0**power
    moved = table.copy()
    name = table.columns[axis]
    moved[name] = table[name] * scale + shift
    moved_noise = None
    if noise is not None:
        moved_noise = noise.copy()
        moved_noise[name] = noise[name] * scale  # a standard error scales with the axis, ignores shifts
    pd.testing.assert_frame_equal(score(table, reference, noise), score(moved, reference, moved_noise), rtol=0, atol=TOL)


@PROPERTY
@given(
    cohort=cohorts(),
    axis=st.integers(0, 3),
    scale=st.floats(0.05, 20.0),
    shift=st.floats(-100.0, 100.0),
)
def test_shifting_and_scaling_by_any_real_changes_scores_by_rounding_only(cohort, axis, scale, shift):
    table, reference, noise = cohort
    assume(axis < table.shape[1])
    name = table.columns[axis]
    moved = table.copy()
    moved[name] = table[name] * scale + shift
    moved_noise = None if noise is None else noise.mul(pd.Series({name: scale}).reindex(noise.index, fill_value=1.0))
    before, after = score(table, reference, noise), score(moved, reference, moved_noise)
    pd.testing.assert_series_equal(before["dominance"], after["dominance"])  # orderings survive exactly
    pd.testing.assert_frame_equal(before, after, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- the reference


@PROPERTY
@given(cohort=cohorts(min_encoders=1))
def test_reference_profile_is_exactly_zero(cohort):
    table, reference, noise = cohort
    relative = relative_profile(table, reference)
    scaled, _ = scaled_profile(table, reference, noise_se=noise)
    scores = score(table, reference, noise)
    assert (relative.loc[reference] == 0).all()
    assert (scaled.loc[reference] == 0).all()
    assert scores.loc[reference, "balance"] == 0
    assert scores.loc[reference, "worst_axis"] == 0


# --------------------------------------------------------------------------- one-axis monotonicity


@PROPERTY
@given(
    data=st.data(),
    cohort=cohorts(),
    raise_by=st.integers(1, 40).map(lambda k: k / 8),
)
def test_raising_one_axis_of_one_encoder_never_lowers_its_crs(data, cohort, raise_by):
    table, reference, noise = cohort
    encoder = data.draw(st.sampled_from(list(table.index)))
    axis = data.draw(st.sampled_from(list(table.columns)))
    kwargs = data.draw(settings_for(list(table.columns)))
    raised = table.copy()
    raised.loc[encoder, axis] += raise_by  # the encoder's seeds all move alike: its SE is unchanged
    before = score(table, reference, noise, **kwargs).loc[encoder]
    after = score(raised, reference, noise, **kwargs).loc[encoder]
    for column in ("dominance", "balance", "worst_axis", "crs"):
        assert after[column] >= before[column] - TOL, (column, before[column], after[column])
    u_before, _ = scaled_profile(table, reference, noise_se=noise)
    u_after, _ = scaled_profile(raised, reference, noise_se=noise)
    assert u_after.loc[encoder, axis] >= u_before.loc[encoder, axis] - TOL


@PROPERTY
@given(cohort=cohorts(), raise_by=st.floats(1e-9, 5.0), where=st.data())
def test_monotonicity_holds_for_real_valued_raises(cohort, raise_by, where):
    table, reference, noise = cohort
    encoder = where.draw(st.sampled_from(list(table.index)))
    axis = where.draw(st.sampled_from(list(table.columns)))
    raised = table.copy()
    raised.loc[encoder, axis] += raise_by
    assert score(raised, reference, noise).loc[encoder, "crs"] >= score(table, reference, noise).loc[encoder, "crs"] - TOL


def cohort_std_scaled(values: np.ndarray, ref: int) -> np.ndarray:
    """The rejected normalisation: divide by the cohort's standard deviation of the axis."""
    return (values - values[ref]) / values.std()


def test_worked_example_where_a_cohort_std_spread_breaks_monotonicity_and_ours_does_not():
    # e above the mean, the reference far below it: raising e inflates the cohort std faster
    # than e's distance to the reference grows (docs/crs.md, "Why this normalisation").
    values = np.array([1.0, -0.7, -0.3])  # e, ref, g
    raised = values + np.array([0.1, 0.0, 0.0])
    assert cohort_std_scaled(raised, 1)[0] < cohort_std_scaled(values, 1)[0]
    table = pd.DataFrame({"a": values}, index=["e", "ref", "g"])
    bumped = pd.DataFrame({"a": raised}, index=["e", "ref", "g"])
    u_before, _ = scaled_profile(table, "ref")
    u_after, _ = scaled_profile(bumped, "ref")
    assert u_after.loc["e", "a"] >= u_before.loc["e", "a"]


# --------------------------------------------------------------------------- symmetry and degenerate cohorts


@PROPERTY
@given(cohort=cohorts(), order=st.randoms(use_true_random=False))
def test_permuting_the_encoders_changes_nothing(cohort, order):
    table, reference, noise = cohort
    shuffled_index = list(table.index)
    order.shuffle(shuffled_index)
    shuffled = table.loc[shuffled_index]
    pd.testing.assert_frame_equal(
        score(table, reference, noise), score(shuffled, reference, noise).loc[table.index], rtol=0, atol=TOL
    )


@PROPERTY
@given(
    n=st.integers(1, 8),
    row=st.lists(grid_value, min_size=1, max_size=4),
    ref=st.integers(0, 7),
    with_noise=st.booleans(),
)
def test_a_cohort_of_identical_encoders_all_score_the_same(n, row, ref, with_noise):
    table = pd.DataFrame([row] * n, index=[f"enc{i}" for i in range(n)], columns=list(AXIS_NAMES[: len(row)]))
    noise = pd.Series(0.1, index=table.columns) if with_noise else None
    scores = score(table, table.index[ref % n], noise)
    assert scores["crs"].nunique() == 1
    assert (scores["crs"] == 0).all()


def test_a_single_encoder_cohort_scores_zero():
    scores = score(pd.DataFrame({"a": [0.7], "b": [0.9]}, index=["only"]), "only")
    assert scores.loc["only"].tolist() == [0.0, 0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- the soft minimum


@PROPERTY
@given(u=st.lists(st.floats(-20, 20), min_size=1, max_size=6), tau=st.floats(0.05, 10.0))
def test_balance_lies_between_minimum_and_mean(u, tau):
    u = np.array(u)[None, None, :]
    weights = np.full(u.shape[-1], 1.0 / u.shape[-1])
    value = balance_array(u, weights, tau)[0, 0]
    assert u.min() - 1e-9 <= value <= u.mean() + 1e-9


@PROPERTY
@given(mean=st.floats(-5, 5), gap=st.floats(0.01, 5), tau=st.floats(0.1, 5))
def test_balance_rewards_an_even_profile_with_the_same_mean(mean, gap, tau):
    even = np.array([[[mean, mean]]])
    uneven = np.array([[[mean - gap, mean + gap]]])
    weights = np.array([0.5, 0.5])
    assert balance_array(even, weights, tau)[0, 0] > balance_array(uneven, weights, tau)[0, 0]


# --------------------------------------------------------------------------- batch == single


@PROPERTY
@given(cohort=cohorts(), copies=st.integers(1, 4))
def test_batched_chain_equals_the_single_table_chain(cohort, copies):
    """The bootstrap runs crs_array on a batch; every batch row must be the single-table score."""
    table, reference, noise = cohort
    single = score(table, reference, noise)["crs"].to_numpy()
    batch = np.repeat(table.to_numpy()[None], copies, axis=0)
    k = table.shape[1]
    out = crs_array(
        batch,
        list(table.index).index(reference),
        ChainSettings(axis_weights=np.full(k, 1.0 / k), component_weights=np.full(3, 1.0 / 3)),
        noise_se=None if noise is None else noise.to_numpy(),
    ).crs
    np.testing.assert_array_equal(out, np.repeat(single[None], copies, axis=0))


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_axis_values_are_rejected_naming_encoder_and_axis(bad):
    table = pd.DataFrame({"calibration": [0.9, bad, 0.8], "discrimination": [0.8, 0.7, 0.9]}, index=["r", "vit", "clip"])
    with pytest.raises(ValueError, match=r"calibration.*'vit'|'vit'.*calibration"):
        crs_scores(table, "r")


@PROPERTY
@given(cohort=cohorts(), bad=st.sampled_from([np.nan, np.inf, -np.inf]), where=st.data())
def test_any_non_finite_value_is_rejected(cohort, bad, where):
    table, reference, _ = cohort
    encoder = where.draw(st.sampled_from(list(table.index)))
    axis = where.draw(st.sampled_from(list(table.columns)))
    table = table.copy()
    table.loc[encoder, axis] = bad
    with pytest.raises(ValueError) as info:
        crs_scores(table, reference)
    assert repr(encoder) in str(info.value) and repr(axis) in str(info.value)


def test_unknown_reference_is_rejected():
    table = pd.DataFrame({"a": [0.1, 0.2]}, index=["x", "y"])
    with pytest.raises(ValueError, match="reference encoder 'resnet50' is not in the cohort"):
        crs_scores(table, "resnet50")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"component_weights": {"dominance": -1}}, "finite and >= 0"),
        ({"component_weights": {"speed": 1}}, "unknown component"),
        ({"component_weights": {"dominance": 0, "balance": 0}}, "Pareto"),
        ({"component_weights": {c: 0 for c in COMPONENTS}}, "all zero"),
        ({"axis_weights": {"a": float("nan")}}, "finite"),
        ({"axis_weights": {"zzz": 1}}, "unknown axis"),
        ({"axis_weights": {"a": 0, "b": 0}}, "all zero"),
        ({"tau": 0.0}, "tau"),
        ({"noise_floor": -1.0}, "noise_floor"),
    ],
)
def test_bad_settings_are_rejected(kwargs, message):
    table = pd.DataFrame({"a": [0.1, 0.2], "b": [0.3, 0.1]}, index=["x", "y"])
    with pytest.raises(ValueError, match=message):
        crs_scores(table, "x", CRSConfig(**kwargs))


def test_zero_axis_weight_drops_the_axis_everywhere():
    table = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [0.0, -5.0, 3.0]}, index=["r", "x", "y"])
    dropped = crs_scores(table, "r", CRSConfig(axis_weights={"b": 0}))
    alone = crs_scores(table[["a"]], "r")
    pd.testing.assert_frame_equal(dropped, alone)


def test_weights_left_out_keep_weight_one():
    table = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [0.0, -5.0, 3.0]}, index=["r", "x", "y"])
    pd.testing.assert_frame_equal(
        crs_scores(table, "r", CRSConfig(axis_weights={"a": 2.0})),
        crs_scores(table, "r", CRSConfig(axis_weights={"a": 2.0, "b": 1.0})),
    )
