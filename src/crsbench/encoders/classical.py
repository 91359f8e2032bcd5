"""Classical, training-free baselines: they anchor the cohort from below.

A learned encoder that does not beat resized raw pixels or hand-made colour and texture descriptors
under the same probe adds nothing for that task; having them in every cohort makes that visible.
"""

from __future__ import annotations

import numpy as np

from crsbench.encoders.base import EncoderBase, check_options
from crsbench.encoders.spec import EncoderSpec

COLOUR_BINS = 16
GRID = 4
ORIENTATION_BINS = 9


class RawPixelsEncoder(EncoderBase):
    """The engine's float pixels, scaled to [0, 1] and flattened."""

    def __init__(self, spec: EncoderSpec):
        self.spec = spec

    def encode(self, images: np.ndarray) -> np.ndarray:
        return np.asarray(images, dtype=np.float32).reshape(len(images), -1) / 255.0


class ColourTextureEncoder(EncoderBase):
    def __init__(self, spec: EncoderSpec):
        self.spec = spec

    def encode(self, images: np.ndarray) -> np.ndarray:
        x = np.asarray(images, dtype=np.float32) / 255.0  # [n, S, S, 3], float pixels from the engine
        grey = x.mean(axis=-1)
        parts = [
            _colour_histograms(x),
            _grid_moments(x),
            _orientation_histograms(grey),
            _lbp_histogram(grey),
        ]
        return np.concatenate(parts, axis=1).astype(np.float32)


# adapter kind -> (encoder class, its vector length at a given input size)
KINDS = {
    "raw-pixels": (RawPixelsEncoder, lambda size, spec: size * size * 3),
    "colour-texture": (ColourTextureEncoder, lambda size, spec: spec.embed_dim),
}


def build(spec: EncoderSpec, **options):
    """Suite option `input_size`: the engine's square size (default: the spec's `resize`)."""
    check_options(spec, options, ("input_size",))
    encoder_class, dimension = KINDS[spec.adapter.kind]
    size = options.get("input_size") or spec.resize
    return encoder_class(spec.replace(resize=size, embed_dim=dimension(size, spec)))


def _colour_histograms(x: np.ndarray) -> np.ndarray:
    n = len(x)
    bins = np.minimum((x * COLOUR_BINS).astype(np.int64), COLOUR_BINS - 1)  # [n, S, S, 3]
    offsets = (np.arange(n)[:, None, None, None] * 3 + np.arange(3)) * COLOUR_BINS
    counts = np.bincount((bins + offsets).ravel(), minlength=n * 3 * COLOUR_BINS)
    return counts.reshape(n, 3 * COLOUR_BINS) / float(x.shape[1] * x.shape[2])


def _cells(a: np.ndarray) -> np.ndarray:
    """[n, S, S, ...] -> [n, GRID, GRID, cell_pixels, ...] (S divisible by GRID after cropping)."""
    n, s = a.shape[0], (a.shape[1] // GRID) * GRID
    a = a[:, :s, :s]
    c = s // GRID
    a = a.reshape(n, GRID, c, GRID, c, *a.shape[3:])
    a = np.moveaxis(a, 2, 3)  # [n, GRID, GRID, c, c, ...]
    return a.reshape(n, GRID, GRID, c * c, *a.shape[5:])


def _grid_moments(x: np.ndarray) -> np.ndarray:
    cells = _cells(x)  # [n, G, G, p, 3]
    return np.concatenate([cells.mean(axis=3), cells.std(axis=3)], axis=-1).reshape(len(x), -1)


def _orientation_histograms(grey: np.ndarray) -> np.ndarray:
    gy, gx = np.gradient(grey, axis=(1, 2))
    magnitude = np.hypot(gx, gy)
    # unsigned orientation in [0, pi): edges of opposite polarity look alike
    angle = np.mod(np.arctan2(gy, gx), np.pi)
    bins = np.minimum((angle / np.pi * ORIENTATION_BINS).astype(np.int64), ORIENTATION_BINS - 1)
    cell_bins, cell_mag = _cells(bins), _cells(magnitude)  # [n, G, G, p]
    onehot = np.eye(ORIENTATION_BINS, dtype=np.float32)[cell_bins]  # [n, G, G, p, B]
    hist = (onehot * cell_mag[..., None]).sum(axis=3)
    hist /= np.linalg.norm(hist, axis=-1, keepdims=True) + 1e-6
    return hist.reshape(len(grey), -1)


def _lbp_histogram(grey: np.ndarray) -> np.ndarray:
    centre = grey[:, 1:-1, 1:-1]
    shifts = [(-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1)]
    h, w = centre.shape[1:]
    code = np.zeros(centre.shape, dtype=np.int64)
    for bit, (dy, dx) in enumerate(shifts):
        neighbour = grey[:, 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
        code |= (neighbour >= centre).astype(np.int64) << bit
    n = len(grey)
    counts = np.bincount((code + np.arange(n)[:, None, None] * 256).ravel(), minlength=n * 256)
    return counts.reshape(n, 256) / float(h * w)
