"""Measured costs on the cohort itself: per-image embedding time of each encoder, one probe fit, and
the perturbations' own time. A few images are enough: the cost of a batch is close to linear in its size."""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from crsbench.conditions import CLEAN, Condition
from crsbench.datasets.base import SplitData, images_batch
from crsbench.embed import Embedder
from crsbench.selection.budget import EncoderCost

SAMPLE_IMAGES = 8
WARM_UP_IMAGES = 2  # the first forward pass pays one-off costs (allocation, kernel choice)
PROBE_SAMPLE = 512  # training rows of the timed probe fit; the cost is scaled to the whole split
PROBE_SEVERITY = 3


class _Subset:
    """Some images of a source, as an image source of their own."""

    def __init__(self, images, indices: Sequence[int]):
        self.images, self.indices = images, [int(i) for i in indices]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.images[self.indices[i]]

    def batch(self, indices: Sequence[int]) -> np.ndarray:
        return images_batch(self.images, [self.indices[int(i)] for i in indices])


def sample_indices(n: int, k: int) -> np.ndarray:
    """k indices spread over 0..n-1 (images of one class are often listed together)."""
    return np.unique(np.linspace(0, n - 1, min(k, n)).astype(int))


def measure_encoder(choice, train: SplitData, task_type: str, n_classes: int, probe_config,
                    n_images: int = SAMPLE_IMAGES) -> tuple[EncoderCost, int]:
    """(cost, embedding width) of one suite encoder on this cohort's training images."""
    from crsbench.probe import fit_probe

    started = time.perf_counter()
    encoder = choice.build()
    embedder = Embedder(batch_size=max(n_images, WARM_UP_IMAGES))
    warm = sample_indices(len(train), WARM_UP_IMAGES)
    embedder.extract(encoder, _Subset(train.images, warm), train.ids[warm], CLEAN, "warm-up")
    setup = time.perf_counter() - started

    chosen = sample_indices(len(train), n_images)
    started = time.perf_counter()
    vectors = embedder.extract(encoder, _Subset(train.images, chosen), train.ids[chosen], CLEAN, "timing")
    per_image = (time.perf_counter() - started) / len(chosen)

    width = vectors.shape[1]
    rows = min(len(train), PROBE_SAMPLE)
    rng = np.random.default_rng(0)
    # random features of the encoder's width stand in for its embeddings: the solver's cost depends on the
    # shape of the problem, and the real embeddings are not computed yet
    labels = train.labels[sample_indices(len(train), rows)]
    x = rng.standard_normal((len(labels), width)).astype(np.float32)
    x_val = rng.standard_normal((max(2, len(labels) // 4), width)).astype(np.float32)
    started = time.perf_counter()
    fit_probe(task_type, x, labels, x_val, labels[: len(x_val)], n_classes, probe_config)
    fit = (time.perf_counter() - started) * len(train) / len(labels)
    return EncoderCost(per_image, fit, setup), int(width)


def measure_perturbations(train: SplitData, names: Sequence[str], n_images: int = SAMPLE_IMAGES) -> float:
    """Mean seconds one perturbation takes on one stored image (at a middle severity)."""
    if not names:
        return 0.0
    chosen = sample_indices(len(train), n_images)
    batch = images_batch(train.images, chosen)
    ids = train.ids[chosen]
    started = time.perf_counter()
    for name in names:
        Condition.perturbation(name, PROBE_SEVERITY).apply(batch, ids)
    return (time.perf_counter() - started) / (len(names) * len(chosen))
