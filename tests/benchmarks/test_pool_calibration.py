"""The pool design of benchmarks/pool_calibration.py, reduced for the suite: the training-sample term of the
product's intervals checked on real PneumoniaMNIST draws, without the simulator, in both directions.

Reduced: a stratified 2,400 of the 5,856 images (800 held out, a training pool of 1,600), the two classical
encoders (raw-pixels against colour-texture, the reference), n = 140 training and 23 validation images a
draw (0.10 of the pool), test sets of 320, 16 draws, the product's estimator only (bootstrap refits, C
re-tuned) with the planted two and the oracle. The benchmark's tables run 40 draws and more at n = 140 and
280 with three encoders on the whole pool.

At 16 draws and one encoder pair, coverage is a rate over 16 draws (s.e. about 0.06 where it is 0.94), and
the oracle's width is known to about 18 % (its sd from 16 draws). Measured here: the product covers 16 of 16
at 0.85 of the oracle's width (inside 0.8-1.25, by less than the oracle's own error: a change of the fits'
results can move it out, which is what the check is for); the planted wide estimator (its term doubled) is
at 1.58, outside the band, and the planted narrow one (no term) at 0.35, below it. The narrow one's coverage
(0.81, s.e. 0.10) is printed, not asserted: at 16 draws its floor is 0.62; its failure of the coverage check
is shown at 40 draws and more in the benchmark (docs/bootstrap.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _benchmark_modules import benchmark_module
from _shared_data import shared_file

pytestmark = pytest.mark.slow

IMAGES, HELD_OUT, N, TEST_CASES, DRAWS = 2400, 800, 140, 320, 16


@pytest.fixture(scope="module")
def pool_design():
    return benchmark_module("pool_calibration")


@pytest.fixture(scope="module")
def measured(pool_design, tmp_path_factory):
    data = np.load(shared_file("medmnist", "pneumoniamnist.npz"))
    images = np.concatenate([data[f"{s}_images"] for s in ("train", "val", "test")])
    labels = np.concatenate([data[f"{s}_labels"][:, 0] for s in ("train", "val", "test")]).astype(int)
    keep, _ = pool_design.pool_split(labels, len(labels) - IMAGES, seed=1)  # a stratified 2,400
    images, labels = images[keep], labels[keep]
    pool, held_out = pool_design.pool_split(labels, HELD_OUT)
    encoders = {k: pool_design.ENCODERS[k] for k in ("raw-pixels", "colour-texture")}
    vectors = pool_design.embed_all(images, held_out, encoders)
    store = tmp_path_factory.mktemp("draws")
    runs, scored = pool_design.run_size(N, DRAWS, vectors, labels, pool, held_out, TEST_CASES,
                                        pool_design.ESTIMATORS[:1], 1, store)
    return {"module": pool_design, "runs": runs, "scored": scored, "store": store,
            "draw": (vectors, labels, pool, held_out, N)}


def test_the_products_refit_term_covers_at_the_oracles_width_and_the_planted_estimators_fail(measured):
    pool_design = measured["module"]
    checked = pool_design.checks(measured["runs"], measured["scored"])
    print("\n" + "\n".join(f"{e}: " + ", ".join(f"{k} {v:.3f}" for k, v in c.items()) for e, c in checked.items()))
    product, narrow, wide = (checked[e] for e in (pool_design.ESTIMATORS[0], *pool_design.PLANTED))
    assert pool_design.two_sided(product) == {"coverage": True, "width": True}
    assert not pool_design.two_sided(wide)["width"] and wide["width / oracle"] > pool_design.WIDTH_BAND[1]
    assert not pool_design.two_sided(narrow)["width"] and narrow["width / oracle"] < pool_design.WIDTH_BAND[0]


def test_a_saved_draw_read_back_is_the_draw_made_afresh(measured, tmp_path):
    # a rerun reads saved draws back instead of drawing them: they must be what drawing them again gives
    pool_design = measured["module"]
    again = tmp_path / "draw0003.pkl"
    pool_design.draw_and_score(*measured["draw"], 3, TEST_CASES, pool_design.ESTIMATORS[:1], again)
    saved = next(measured["store"].glob("*/draw0003.pkl"))
    fresh, kept = (pd.read_pickle(path) for path in (again, saved))
    estimator = pool_design.ESTIMATORS[0]
    assert fresh["draw"]["records"][estimator][0].equals(kept["draw"]["records"][estimator][0])
    assert np.array_equal(fresh["draw"]["held_axes"], kept["draw"]["held_axes"])
    for which in (estimator, *pool_design.PLANTED):
        assert np.array_equal(fresh["scored"][which]["high"], kept["scored"][which]["high"], equal_nan=True)
    assert not list(tmp_path.glob("*.partial"))  # written under a temporary name, then renamed
