"""Drawing primitives for the demo datasets' images (`synthetic_images` draws each specialty with them):
smooth random fields, splatted and blurred points, random curves, tone and the camera stage.

Geometry is in normalised coordinates (x right, y down, both in [-1, 1]), so the image size changes
resolution, not content. Any change here changes the images: bump synthetic.GENERATOR_VERSION with it.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

CHUNK = 128  # images rendered at once (bounds memory at large sizes)


def pixel_grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    c = ((np.arange(size, dtype=np.float32) + 0.5) / size * 2 - 1).astype(np.float32)
    return c[None, None, :], c[None, :, None]  # x [1, 1, S], y [1, S, 1]


def per_image(v: np.ndarray) -> np.ndarray:
    """Per-image parameter [n] -> broadcastable [n, 1, 1]."""
    return np.asarray(v, dtype=np.float32)[:, None, None]


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class FourierField:
    """Random smooth fields as sums of `terms` plane waves per image; evaluated at any coordinates."""

    def __init__(self, rng: np.random.Generator, n: int, terms: int, freq: tuple[float, float]):
        angle = rng.uniform(0, 2 * np.pi, (n, terms))
        radius = rng.uniform(freq[0], freq[1], (n, terms))
        self.wx = (radius * np.cos(angle)).astype(np.float32)
        self.wy = (radius * np.sin(angle)).astype(np.float32)
        self.phase = rng.uniform(0, 2 * np.pi, (n, terms)).astype(np.float32)
        self.scale = np.float32(np.sqrt(2.0 / terms))

    def take(self, index: np.ndarray) -> "FourierField":
        other = object.__new__(FourierField)
        other.wx, other.wy, other.phase, other.scale = self.wx[index], self.wy[index], self.phase[index], self.scale
        return other

    def __call__(self, sl: slice, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = None
        for j in range(self.wx.shape[1]):
            term = np.cos(per_image(self.wx[sl, j]) * u + per_image(self.wy[sl, j]) * v + per_image(self.phase[sl, j]))
            out = term if out is None else out + term
        return out * self.scale


class BlurredPoints:
    """Weighted points (image index, x, y in normalised coordinates) splatted then blurred."""

    def __init__(self, img: np.ndarray, x: np.ndarray, y: np.ndarray, w: np.ndarray):
        order = np.argsort(img, kind="stable")
        self.img = np.asarray(img)[order].astype(np.int64)
        self.x = np.asarray(x, dtype=np.float64)[order]
        self.y = np.asarray(y, dtype=np.float64)[order]
        self.w = np.asarray(w, dtype=np.float64)[order]

    def render(self, lo: int, hi: int, size: int, sigma_px64: float) -> np.ndarray:
        """Density map [hi-lo, S, S]; `sigma_px64` is the blur in pixels of a 64 px image.

        Weights are masses measured in pixels of a 64 px image, so a blob's peak (and, with
        weights proportional to point spacing, a line's profile) is the same at any size.
        """
        m = hi - lo
        a, b = np.searchsorted(self.img, [lo, hi])
        out = np.zeros(m * size * size, dtype=np.float64)
        if b > a:
            img = self.img[a:b] - lo
            # normalised -> continuous pixel coordinates with pixel centres at integers
            fx = (self.x[a:b] + 1) / 2 * size - 0.5
            fy = (self.y[a:b] + 1) / 2 * size - 0.5
            w = self.w[a:b] * (size / 64.0) ** 2  # weights are masses in (64 px pixel)^2
            x0 = np.floor(fx).astype(np.int64)
            y0 = np.floor(fy).astype(np.int64)
            ax, ay = fx - x0, fy - y0
            corners = ((0, 0, (1 - ax) * (1 - ay)), (1, 0, ax * (1 - ay)), (0, 1, (1 - ax) * ay), (1, 1, ax * ay))
            for dx, dy, wt in corners:
                xi, yi = x0 + dx, y0 + dy
                ok = (xi >= 0) & (xi < size) & (yi >= 0) & (yi < size)
                out += np.bincount(((img * size + yi) * size + xi)[ok], weights=(w * wt)[ok], minlength=out.size)
        out = out.reshape(m, size, size).astype(np.float32)
        sigma = sigma_px64 * size / 64.0
        if sigma > 0:
            out = gaussian_filter(out, sigma=(0, sigma, sigma), truncate=3.0, mode="constant")
        return out


def random_curves(
    rng: np.random.Generator,
    x0: np.ndarray,
    y0: np.ndarray,
    angle0: np.ndarray,
    length: np.ndarray,
    curvature: np.ndarray,
    wiggle: np.ndarray,
    steps: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Smooth random curves [c, steps]: returns x, y, heading, and arc-length fraction t in [0, 1]."""
    c = len(x0)
    t = np.linspace(0, 1, steps)[None, :]
    freq = rng.uniform(4, 12, (c, 1))
    phase = rng.uniform(0, 2 * np.pi, (c, 1))
    heading = angle0[:, None] + curvature[:, None] * length[:, None] * t + wiggle[:, None] * np.sin(freq * t + phase)
    ds = (length / steps)[:, None]
    x = x0[:, None] + np.cumsum(ds * np.cos(heading), axis=1)
    y = y0[:, None] + np.cumsum(ds * np.sin(heading), axis=1)
    return x, y, heading, np.broadcast_to(t, x.shape)


def camera_finish(
    rgb: np.ndarray,
    rng: np.random.Generator,
    size: int,
    blur_px64: float = 0.0,
    sharpen: float = 0.0,
    noise: float | np.ndarray = 0.0,
) -> np.ndarray:
    """Camera stage on float images [n, S, S, C] in [0, 1]: blur or unsharp mask, noise, quantise."""
    spatial = (0, blur_px64 * size / 64.0, blur_px64 * size / 64.0, 0)
    if blur_px64 > 0:
        soft = gaussian_filter(rgb, sigma=spatial, truncate=3.0, mode="nearest")
        rgb = soft if sharpen <= 0 else rgb + sharpen * (rgb - soft)
    noise = np.asarray(noise, dtype=np.float32)
    if np.any(noise > 0):
        sd = noise.reshape(-1, 1, 1, 1) if noise.ndim else noise
        rgb = rgb + rng.standard_normal(rgb.shape, dtype=np.float32) * sd
    return np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)


def tone_curve(rgb: np.ndarray, contrast: float, pivot: float, gamma: float) -> np.ndarray:
    """Contrast around `pivot`, clip to [0, 1], then gamma (skipping identity steps)."""
    if contrast != 1.0:
        rgb = pivot + np.float32(contrast) * (rgb - np.float32(pivot))
    rgb = np.clip(rgb, 0, 1)
    return rgb if gamma == 1.0 else rgb ** np.float32(gamma)


def by_class(table, labels: np.ndarray, signal: float) -> np.ndarray:
    """Per-image value of a class-indexed table, shrunk toward the class-prior mean by `signal`."""
    table = np.asarray(table, dtype=np.float64)
    neutral = table.mean()
    return neutral + signal * (table[labels] - neutral)
