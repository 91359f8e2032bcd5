"""Measured costs on the cohort itself: per-image embedding time of each encoder, clean and through a
perturbation, and its probe fit. A few images are enough: the cost of a batch is close to linear in its size."""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from crsbench.plan.conditions import CLEAN, Condition
from crsbench.datasets.base import SplitData, images_batch
from crsbench.embed.cache import Embedder
from crsbench.selection.budget import EncoderCost

SAMPLE_IMAGES = 8
WARM_UP_IMAGES = 2  # the first forward pass pays one-off costs (allocation, kernel choice)
REPEATS = 3  # timings repeated, the median kept: one slow pass on a busy machine does not set the plan
PROBE_ROWS = 1_000  # most training rows of the timed probe fit; a larger split is scaled from it
SMALL_FIT_SHARE = 0.1  # the second timed fit, on this share of the rows: what a fit costs regardless of size
CLASS_SEPARATION = 1.0  # class means this many standard deviations apart in the stand-in features
# Real embeddings take longer to converge than the stand-in features: on RetinaMNIST's (1,080 rows) a fit
# took 3.2x the stand-in's for 1,280-d vectors and 1.7x for 544-d ones, whatever the stand-in's spectrum.
REAL_FIT_FACTOR = 2.5
PROBE_SEVERITY = 3
PERTURBATIONS_TIMED = 3  # through the whole embedding path: one of each kind (noise, blur, compression) first


def median_seconds(run, repeats: int = REPEATS) -> float:
    """Median wall time of `repeats` calls of run()."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def stand_in_features(labels: np.ndarray, width: int, seed: int = 0) -> np.ndarray:
    """Features of an encoder's width with some class signal: the solver's work depends on the shape of
    the problem and on how separable it is (pure noise converges differently from real embeddings), and the
    real embeddings are not computed yet."""
    rng = np.random.default_rng(seed)
    key = labels if labels.ndim == 1 else np.nan_to_num(labels).argmax(axis=1)  # multi-label: one label per row
    classes = np.unique(key)
    means = rng.standard_normal((len(classes), width)) * CLASS_SEPARATION / np.sqrt(width)
    return (rng.standard_normal((len(key), width)) + means[np.searchsorted(classes, key)]).astype(np.float32)


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


def measure_encoder(encoder, train: SplitData, task_type: str, n_classes: int, probe_config,
                    perturbations: Sequence[str] = (), n_images: int = SAMPLE_IMAGES,
                    build_seconds: float = 0.0) -> tuple[EncoderCost, int]:
    """(cost, embedding width) of one built encoder on this cohort's training images: the median of a
    few timings after a warm-up pass, the same path with a perturbation applied (the first
    PERTURBATIONS_TIMED of `perturbations`, one timing each, averaged; none timed when it is empty), and
    two probe fits of realistic shape (the full rows up to PROBE_ROWS, and a tenth of them) for what a fit
    costs at any fraction. The setup is `build_seconds` (building the encoder) plus the warm-up pass."""
    started = time.perf_counter()
    embedder = Embedder(batch_size=max(n_images, WARM_UP_IMAGES))
    warm = sample_indices(len(train), WARM_UP_IMAGES)
    embedder.extract(encoder, _Subset(train.images, warm), train.ids[warm], CLEAN, "warm-up")
    setup = build_seconds + time.perf_counter() - started

    chosen = sample_indices(len(train), n_images)
    sample = _Subset(train.images, chosen)
    vectors = []
    per_image = median_seconds(
        lambda: vectors.append(embedder.extract(encoder, sample, train.ids[chosen], CLEAN, "timing"))) / len(chosen)
    width = int(vectors[0].shape[1])
    perturbed = None
    if perturbations:
        times = []
        for name in perturbations[:PERTURBATIONS_TIMED]:
            condition = Condition.perturbation(name, PROBE_SEVERITY)
            # warm-up: a perturbation's first call builds its kernels and tables
            embedder.extract(encoder, _Subset(train.images, warm), train.ids[warm], condition, "warm-up")
            times.append(median_seconds(
                lambda: embedder.extract(encoder, sample, train.ids[chosen], condition, "timing"), 1))
        perturbed = float(np.mean(times)) / len(chosen)
    fit_full, fit_fixed = measure_probe_fit(train.labels, width, task_type, n_classes, probe_config)
    return EncoderCost(per_image, fit_full, setup, fit_fixed, perturbed), width


def measure_probe_fit(labels: np.ndarray, width: int, task_type: str, n_classes: int,
                      probe_config) -> tuple[float, float]:
    """(seconds of one fit on all of `labels`' rows, seconds a fit costs regardless of its rows)."""
    from crsbench.probe.linear import fit_probe

    rows = sample_indices(len(labels), PROBE_ROWS)
    y = labels[rows]
    x = stand_in_features(y, width)
    val = sample_indices(len(rows), max(2 * n_classes, len(rows) // 4))
    x_val, y_val = stand_in_features(y[val], width, seed=1), y[val]
    small = _stratified_share(y, SMALL_FIT_SHARE)

    def fit(subset):
        return lambda: fit_probe(task_type, x[subset], y[subset], x_val, y_val, n_classes, probe_config)

    fit(small)()  # warm-up: the first fit pays the solver's one-off setup
    t_small = median_seconds(fit(small), 2)
    t_large = median_seconds(fit(np.arange(len(y))), 1)  # the costly one, once: measuring is part of the budget
    # a straight line through the two timed fits, extended to the whole split
    per_row = max(t_large - t_small, 0.0) / max(len(y) - len(small), 1)
    fixed = max(t_small - per_row * len(small), 0.0)
    return REAL_FIT_FACTOR * (fixed + per_row * len(labels)), REAL_FIT_FACTOR * fixed


def _stratified_share(labels: np.ndarray, share: float) -> np.ndarray:
    """Rows keeping `share` of each class (at least 2), like a label fraction's subset."""
    if labels.ndim > 1:  # multi-label: every row, evenly thinned
        return sample_indices(len(labels), max(4, int(share * len(labels))))
    keep = [rows[sample_indices(len(rows), max(2, int(np.ceil(share * len(rows)))))]
            for rows in (np.flatnonzero(labels == c) for c in np.unique(labels))]
    return np.sort(np.concatenate(keep))
