import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crsbench.plan.subsets import fraction_subset

FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(20, 400), k=st.integers(2, 6), seed=st.integers(0, 10_000))
def test_single_label_subsets_are_nested_stratified_and_cover_every_class(n, k, seed):
    labels = np.random.default_rng(seed).integers(0, k, n)
    labels[:k] = np.arange(k)  # every class present
    previous = set()
    for f in FRACTIONS:
        chosen = fraction_subset("single_label", labels, "task", seed, f)
        assert previous <= set(chosen.tolist())
        assert set(labels[chosen].tolist()) == set(range(k))
        for cls in range(k):
            have, total = np.sum(labels[chosen] == cls), np.sum(labels == cls)
            assert have == max(1, int(np.ceil(f * total - 1e-9)))
        previous = set(chosen.tolist())
    assert len(previous) == n


@settings(max_examples=40, deadline=None)
@given(n=st.integers(30, 300), k=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_multi_label_subsets_are_nested_and_hold_a_positive_and_negative_per_label(n, k, seed):
    rng = np.random.default_rng(seed)
    labels = (rng.random((n, k)) < 0.2).astype(np.float32)
    labels[0], labels[1] = 1.0, 0.0
    previous = set()
    for f in FRACTIONS:
        chosen = fraction_subset("multi_label", labels, "task", seed, f)
        assert previous <= set(chosen.tolist())
        assert np.all(labels[chosen].max(axis=0) == 1) and np.all(labels[chosen].min(axis=0) == 0)
        previous = set(chosen.tolist())


def test_subset_depends_on_task_seed_and_fraction_only():
    labels = np.random.default_rng(0).integers(0, 3, 500)
    a = fraction_subset("single_label", labels, "derm", 1, 0.1)
    assert np.array_equal(a, fraction_subset("single_label", labels.copy(), "derm", 1, 0.1))
    assert not np.array_equal(a, fraction_subset("single_label", labels, "derm", 2, 0.1))
    assert not np.array_equal(a, fraction_subset("single_label", labels, "fundus", 1, 0.1))
