from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crsbench.datasets.splits import grouped_stratified_split, stratum_keys

FAST = settings(max_examples=40, deadline=None)


@st.composite
def grouped_labels(draw, min_groups=1, max_groups=60):
    """Groups with 1-4 examples each; every example of a group shares the group's class."""
    n_groups = draw(st.integers(min_groups, max_groups))
    n_classes = draw(st.integers(1, 5))
    group_class = draw(st.lists(st.integers(0, n_classes - 1), min_size=n_groups, max_size=n_groups))
    group_size = draw(st.lists(st.integers(1, 4), min_size=n_groups, max_size=n_groups))
    labels = np.repeat(group_class, group_size)
    groups = np.repeat([f"patient{g}" for g in range(n_groups)], group_size)
    return labels, groups


seeds = st.integers(0, 2**31 - 1)


@FAST
@given(grouped_labels(), seeds)
def test_no_group_is_in_two_splits(data, seed):
    labels, groups = data
    splits = grouped_stratified_split(labels, groups, seed=seed)
    split_of = {}
    for group, split in zip(groups, splits):
        assert split_of.setdefault(group, split) == split


@FAST
@given(grouped_labels(), seeds)
def test_same_inputs_give_the_same_split(data, seed):
    labels, groups = data
    first = grouped_stratified_split(labels, groups, seed=seed)
    again = grouped_stratified_split(labels.copy(), groups.copy(), seed=seed)
    assert np.array_equal(first, again)
    assert set(first) <= {"train", "val", "test"}


@FAST
@given(grouped_labels(), seeds)
def test_row_order_does_not_matter(data, seed):
    labels, groups = data
    order = np.random.default_rng(seed).permutation(len(labels))
    splits = grouped_stratified_split(labels, groups, seed=seed)
    shuffled = grouped_stratified_split(labels[order], groups[order], seed=seed)
    assert np.array_equal(splits[order], shuffled)


@FAST
@given(st.integers(30, 400), st.integers(1, 6), seeds)
def test_distinct_groups_hit_the_fractions(n, n_classes, seed):
    labels = np.random.default_rng(seed).integers(0, n_classes, n)
    splits = grouped_stratified_split(labels, np.arange(n), seed=seed)
    counts = Counter(splits)
    for name, fraction in zip(("train", "val", "test"), (0.7, 0.1, 0.2)):
        # Each class stratum rounds on its own, so allow about one example per class.
        assert abs(counts[name] - fraction * n) <= n_classes + 1


@FAST
@given(grouped_labels(min_groups=3), seeds)
def test_every_class_with_three_groups_is_in_every_split(data, seed):
    labels, groups = data
    splits = grouped_stratified_split(labels, groups, seed=seed)
    groups_per_class = Counter(label for label, _ in set(zip(labels.tolist(), groups.tolist())))
    for label, n_groups in groups_per_class.items():
        if n_groups >= 3:
            assert set(splits[labels == label]) == {"train", "val", "test"}


@FAST
@given(st.lists(st.integers(20, 120), min_size=2, max_size=4), seeds)
def test_each_class_is_split_in_the_target_proportions(class_sizes, seed):
    labels = np.repeat(np.arange(len(class_sizes)), class_sizes)
    splits = grouped_stratified_split(labels, np.arange(len(labels)), seed=seed)
    for label, size in enumerate(class_sizes):
        in_class = splits[labels == label]
        for name, fraction in zip(("train", "val", "test"), (0.7, 0.1, 0.2)):
            assert abs(np.sum(in_class == name) - fraction * size) <= 1.5


def test_seed_changes_the_split_but_not_the_counts():
    labels = np.repeat([0, 1], 50)
    a = grouped_stratified_split(labels, np.arange(100), seed=1)
    b = grouped_stratified_split(labels, np.arange(100), seed=2)
    assert not np.array_equal(a, b)
    assert Counter(a) == Counter(b) == {"train": 70, "val": 10, "test": 20}


def test_zero_fraction_split_stays_empty():
    labels = np.repeat([0, 1, 2], 10)
    splits = grouped_stratified_split(labels, np.arange(30), fractions=(0.8, 0.2, 0.0))
    assert Counter(splits) == {"train": 24, "val": 6}


def test_big_groups_are_kept_whole():
    labels = np.array([0] * 10 + [1] * 10 + [0, 1] * 10)
    groups = np.array(["a"] * 10 + ["b"] * 10 + [f"single{i}" for i in range(20)])
    splits = grouped_stratified_split(labels, groups, seed=3)
    assert len(set(splits[:10])) == 1 and len(set(splits[10:20])) == 1


def test_multi_label_stratifies_on_the_rarest_positive_label():
    labels = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 0, 0], [np.nan, 1, 0]], dtype=np.float32)
    # Positive counts: label0 3, label1 3, label2 1; between equally rare labels the first column wins.
    assert list(stratum_keys(labels)) == ["label0", "label0", "label2", "none", "label1"]


def test_multi_label_rare_finding_reaches_every_split():
    rng = np.random.default_rng(0)
    labels = (rng.random((300, 4)) < [0.5, 0.3, 0.2, 0.0]).astype(np.float32)
    labels[:12, 3] = 1  # a rare finding on 12 images
    splits = grouped_stratified_split(labels, np.arange(300), seed=0)
    assert set(splits[:12]) == {"train", "val", "test"}


def test_column_vector_labels_are_accepted():
    labels = np.array([[0], [1]] * 10, dtype=np.uint8)
    assert len(grouped_stratified_split(labels, np.arange(20))) == 20


@pytest.mark.parametrize(
    "labels, groups, fractions",
    [([0, 1], [0], (0.7, 0.1, 0.2)), ([0, 1], [0, 1], (0.5, 0.5)), ([0, 1], [0, 1], (0.5, -0.1, 0.6))],
)
def test_bad_arguments_are_rejected(labels, groups, fractions):
    with pytest.raises(ValueError):
        grouped_stratified_split(labels, groups, fractions)


def test_empty_input_gives_empty_output():
    assert grouped_stratified_split([], []).shape == (0,)
