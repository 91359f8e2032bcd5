"""A generated cohort with a planted answer, and encoders built to rank on it.

Each image is grey noise with a bright square at a position set by its class. `sharp` reads the
square's position from region means normalised per image (immune to exposure and contrast changes,
and averaging out pixel noise); `blurred_*` read the same region means raw, plus noise of their own,
drawn per image from the image's bytes (so an encoder is still a fixed function of the image).
"""

from __future__ import annotations

import hashlib

import numpy as np

from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.registry import encoder_spec

SIZE = 32
GRID = 4
POSITIONS = ((4, 4), (4, 20), (20, 12))  # top-left corner of the square, by class


def cohort(n_per_class: int = 100, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for label, (row, col) in enumerate(POSITIONS):
        for _ in range(n_per_class):
            image = rng.integers(70, 150, size=(SIZE, SIZE, 3)).astype(np.float64)
            r, c = row + rng.integers(-2, 3), col + rng.integers(-2, 3)
            image[r:r + 6, c:c + 6] += rng.uniform(6, 12)
            images.append(np.clip(image, 0, 255).astype(np.uint8))
            labels.append(label)
    order = rng.permutation(len(labels))
    return np.stack(images)[order], np.array(labels)[order]


def _regions(images: np.ndarray) -> np.ndarray:
    grey = images.mean(axis=-1)
    n, h, w = grey.shape
    return grey.reshape(n, GRID, h // GRID, GRID, w // GRID).mean(axis=(2, 4)).reshape(n, -1)


def _spec(name: str, width: int = GRID * GRID):
    return encoder_spec("raw-pixels").replace(name=name, source="user", identifier=name, resize=SIZE, output="pooled",
                                              embed_dim=width, adapter={})


def sharp():
    def encode(images):
        regions = _regions(images)
        return (regions - regions.mean(axis=1, keepdims=True)) / (regions.std(axis=1, keepdims=True) + 1e-6)

    return CallableEncoder(_spec("sharp"), encode)


def _noisy(name: str, sigma: float, extra: int):
    """Raw region means plus noise, and `extra` dimensions of pure noise (which a probe overfits)."""
    def encode(images):
        regions = _regions(images) / 255.0
        noise = np.stack([
            np.random.default_rng(int.from_bytes(hashlib.sha256(np.round(image).astype(np.uint8).tobytes())
                                                 .digest()[:8], "little")).standard_normal(regions.shape[1] + extra)
            for image in images
        ])
        return np.concatenate([regions + sigma * noise[:, :regions.shape[1]], noise[:, regions.shape[1]:]], axis=1)

    return CallableEncoder(_spec(name, GRID * GRID + extra), encode)


def blurred_a():
    return _noisy("blurred-a", 0.02, 150)


def blurred_b():
    return _noisy("blurred-b", 0.03, 200)
