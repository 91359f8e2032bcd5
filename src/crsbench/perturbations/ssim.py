"""A small vectorised SSIM (Wang et al. 2004): Gaussian window (11 px, sigma 1.5), K1 0.01, K2 0.03.

float32 throughout (a float64 conv2d is ~20x slower on CPU; the error is far below C2).
Used to check and report that severity degrades monotonically; computed per channel on [0, 1]
intensities over the 'valid' window positions (as scikit-image does with gaussian_weights=True)
and averaged over channels and positions: one value per image.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _as_float(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float32) / 255 if x.dtype == torch.uint8 else x.to(torch.float32)


def ssim(a: torch.Tensor, b: torch.Tensor, window: int = 11, sigma: float = 1.5) -> torch.Tensor:
    """Per-image SSIM [n] of two batches [n, C, H, W] (uint8, or float in [0, 1])."""
    if a.shape != b.shape or a.ndim != 4:
        raise ValueError(f"ssim needs two batches [n, C, H, W] of one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    x, y = _as_float(a), _as_float(b)
    n, c, H, W = x.shape
    window = min(window, H, W)
    window -= 1 - window % 2  # odd, so the window has a centre
    if window < 3:
        raise ValueError(f"ssim needs images of at least 3x3 px, got {H}x{W}")
    k = torch.arange(window, dtype=torch.float32) - window // 2
    g = torch.exp(-0.5 * (k / sigma) ** 2)
    g = g / g.sum()
    w = (g[:, None] * g[None, :]).expand(c, 1, window, window).contiguous()
    # Unbiased local covariances, as scikit-image's default (use_sample_covariance=True).
    cov_norm = window * window / (window * window - 1)

    def filt(z: torch.Tensor) -> torch.Tensor:
        return F.conv2d(z, w, groups=c)

    mx, my = filt(x), filt(y)
    vx = cov_norm * (filt(x * x) - mx * mx)
    vy = cov_norm * (filt(y * y) - my * my)
    vxy = cov_norm * (filt(x * y) - mx * my)
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
    return s.flatten(1).mean(dim=1)
