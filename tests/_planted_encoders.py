"""A generated cohort with a planted answer, and encoders built so that one is better on every axis.

Each image is grey noise with a bright square at a position set by its class. Every encoder reads
the same 4 x 4 grid of region means, so they differ only in how cleanly they see it:

- `sharp` normalises the region means per image: brightness and contrast changes cancel, blur and
  noise average out over a region, so its view of the square barely moves under any perturbation
  (robustness), and a few labelled images already place it (label efficiency); the classes are far
  apart in it, so the probe is confident and right (discrimination, calibration).
- `blurred_*` read the raw region means through heavy-tailed noise of their own, plus dimensions of
  pure noise that a probe fitted on few labels overfits. The noise grows with how far the image's
  simple statistics (mean level, contrast, pixel-to-pixel roughness) are from a clean image's, so any
  perturbation degrades them; its heavy tails give confident mistakes (calibration).

Noise is drawn per image from the image's bytes, so every encoder is a fixed function of the image.
"""

from __future__ import annotations

import hashlib

import numpy as np

from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.registry import encoder_spec

SIZE = 32
GRID = 4
POSITIONS = ((4, 4), (4, 20), (20, 12))  # top-left corner of the square, by class
BACKGROUND = (70, 150)  # uniform grey levels of the noise
SQUARE = 6
SQUARE_GAIN = (30, 40)  # how much brighter the square is
# Statistics of a clean image of this cohort in grey (mean level, standard deviation, mean absolute difference
# of horizontal neighbours), measured on cohort(300): the reference a perturbed image departs from.
CLEAN_MEAN, CLEAN_STD, CLEAN_ROUGHNESS = 110.7, 14.8, 15.4
TAIL_DF = 2.0  # Student-t degrees of freedom of the rivals' noise: heavy tails, confident mistakes


def cohort(n_per_class: int = 100, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images, labels = [], []
    for label, (row, col) in enumerate(POSITIONS):
        for _ in range(n_per_class):
            image = rng.integers(*BACKGROUND, size=(SIZE, SIZE, 3)).astype(np.float64)
            r, c = row + rng.integers(-2, 3), col + rng.integers(-2, 3)
            image[r:r + SQUARE, c:c + SQUARE] += rng.uniform(*SQUARE_GAIN)
            images.append(np.clip(image, 0, 255).astype(np.uint8))
            labels.append(label)
    order = rng.permutation(len(labels))
    return np.stack(images)[order], np.array(labels)[order]


def _grey(images: np.ndarray) -> np.ndarray:
    return np.asarray(images, dtype=np.float64).mean(axis=-1)


def _regions(grey: np.ndarray) -> np.ndarray:
    n, h, w = grey.shape
    return grey.reshape(n, GRID, h // GRID, GRID, w // GRID).mean(axis=(2, 4)).reshape(n, -1)


def departure(images: np.ndarray) -> np.ndarray:
    """How far each image's level, contrast and roughness are from a clean image's (0 when clean)."""
    grey = _grey(images)
    level = np.abs(grey.mean(axis=(1, 2)) - CLEAN_MEAN) / CLEAN_MEAN
    contrast = np.abs(grey.std(axis=(1, 2)) - CLEAN_STD) / CLEAN_STD
    roughness = np.abs(np.abs(np.diff(grey, axis=2)).mean(axis=(1, 2)) - CLEAN_ROUGHNESS) / CLEAN_ROUGHNESS
    return level + contrast + roughness


def _spec(name: str, width: int = GRID * GRID):
    return encoder_spec("raw-pixels").replace(name=name, source="user", identifier=name, resize=SIZE, output="pooled",
                                              embed_dim=width, adapter={})


def sharp():
    def encode(images):
        regions = _regions(_grey(images))
        return (regions - regions.mean(axis=1, keepdims=True)) / (regions.std(axis=1, keepdims=True) + 1e-6)

    return CallableEncoder(_spec("sharp"), encode)


def _image_noise(image: np.ndarray, width: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(np.ascontiguousarray(image, dtype=np.uint8).tobytes()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_t(TAIL_DF, size=width)


def _noisy(name: str, sigma: float, growth: float, extra: int):
    """Raw region means through heavy-tailed noise of scale sigma * (1 + growth * departure), and
    `extra` dimensions of pure noise."""
    def encode(images):
        images = np.clip(np.round(np.asarray(images, dtype=np.float64)), 0, 255).astype(np.uint8)
        regions = _regions(_grey(images))
        noise = np.stack([_image_noise(image, regions.shape[1] + extra) for image in images])
        scale = sigma * (1.0 + growth * departure(images))[:, None]
        return np.concatenate([regions + scale * noise[:, :regions.shape[1]], noise[:, regions.shape[1]:]], axis=1)

    return CallableEncoder(_spec(name, GRID * GRID + extra), encode)


def blurred_a():
    return _noisy("blurred-a", 3.0, 8.0, 60)


def blurred_b():
    return _noisy("blurred-b", 4.0, 10.0, 90)
