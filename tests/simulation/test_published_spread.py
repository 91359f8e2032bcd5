"""The published-like cohort's training-sample spread derived from the pool design's measurement
(simulation/published_spread.py): the 1 / sqrt(n) rule, the protocol's training sizes, the CRS's linear
weights, and the refit spread found giving the target spread it was asked for."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.crs.definition import crs_batch
from crsbench.scoring.axes import AXES
from crsbench.simulation.cohort import Design, EncoderTruth
from crsbench.simulation.published_spread import (crs_spread, crs_weights, extrapolated_sd, matching_refit_sd,
                                                  task_target, training_sizes)
from crsbench.simulation.training_samples import CONFIG, published_like


def test_the_spread_goes_as_one_over_root_n_and_the_training_sizes_follow_the_protocols_split():
    assert extrapolated_sd(4.0, 280, 1120) == pytest.approx(2.0)
    assert extrapolated_sd(4.0, 280, 1120, exponent=0.25) == pytest.approx(4.0 / np.sqrt(2))
    assert training_sizes(published_like(1.0)) == (17_500, 2_555, 70_000)
    # the cross-task CRS averages three independent tasks: the per-task target is the RMS of their spreads
    spreads = [extrapolated_sd(4.0, 280, n) for n in (17_500, 2_555, 70_000)]
    assert task_target(published_like(1.0), 4.0, 280) == pytest.approx(np.sqrt(np.mean(np.square(spreads))))


def test_the_crs_weights_give_the_crs_of_any_axis_values():
    values = np.random.default_rng(0).uniform(0.3, 0.9, (4, len(AXES)))
    crs = crs_batch(values, 0, CONFIG, list(AXES)).crs
    assert np.allclose(crs, (values - values[0]) @ crs_weights(CONFIG))


@pytest.mark.slow  # four population covariances of two encoders
def test_the_refit_spread_found_gives_the_target_spread():
    design = Design((EncoderTruth("a", 1.5), EncoderTruth("b", 1.3, slope=1.2)), n_cases=300)
    low, high = (crs_spread(design, "a", r, CONFIG) for r in (0.02, 0.04))
    assert 0 < low < high and high / low == pytest.approx(2.0, rel=0.05)  # nearly linear in the refit sd
    refit_sd = matching_refit_sd(design, "a", 1.5, CONFIG, steps=2)
    assert crs_spread(design, "a", refit_sd, CONFIG) == pytest.approx(1.5, rel=0.01)
