"""The perturbation functions: small pure functions `(x, param, rngs) -> y`.

`x` is a float32 batch [b, 3, H, W] in [0, 1]; `param` is the severity's entry of the spec table;
`rngs` holds one `torch.Generator` per image (seeded by `perturb`). The result may leave [0, 1]:
the caller clamps and rounds. Every random draw is made per image from that image's generator and
every pixel operation is elementwise, per image (a grouped conv with one group per image and
channel, integer sums) or done image by image, so an image's result does not depend on which other
images share its batch (a reduction across a batch may change its summation order with batch size,
which could flip a rounding to uint8).

Spatial parameters are in pixels of a REFERENCE_SIZE image and multiplied by
`min(H, W) / REFERENCE_SIZE`: a blur of 4 px at 224 px is 0.5 px at 28 px and 9 px at 512 px, the same
fraction of the field of view. Kernels are built from the continuous shape (bilinearly splatted
onto the pixel grid) so sub-pixel parameters still give a small, smooth effect instead of rounding
to nothing.

Grey images (all three channels equal, e.g. X-rays) stay grey: their random fields are drawn for one
channel and shared by all three (noise in an X-ray is not coloured).

Python loops over the batch only draw per-image random numbers or build per-image kernels; JPEG
and hair go through PIL image by image (a codec / rasteriser is inherently per image).
"""

from __future__ import annotations

import io
import math
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw

REFERENCE_SIZE = 224

Rngs = Sequence[torch.Generator]


# ----------------------------------------------------------------------------------------- helpers


def spatial_scale(x: torch.Tensor) -> float:
    """Pixels per reference pixel for this batch (shorter side / REFERENCE_SIZE)."""
    return min(x.shape[-2], x.shape[-1]) / REFERENCE_SIZE


def grey_mask(x: torch.Tensor) -> torch.Tensor:
    """[b] bool: images whose three channels are identical."""
    return ((x[:, 0] == x[:, 1]) & (x[:, 1] == x[:, 2])).flatten(1).all(dim=1)


def _field(x: torch.Tensor, rngs: Rngs, draw: Callable[[tuple[int, ...], torch.Generator], torch.Tensor]) -> torch.Tensor:
    """A per-image random field [b, 3, H, W]: three channels for colour images, one shared channel
    for grey images (noise in an X-ray is not coloured). Greyness is a property of the image itself,
    so what an image draws does not depend on its batch."""
    H, W = x.shape[-2:]
    grey = grey_mask(x).tolist()
    return torch.stack([draw((1, H, W), g).expand(3, H, W) if gr else draw((3, H, W), g) for g, gr in zip(rngs, grey)])


def _per_image(rngs: Rngs, draw: Callable[[torch.Generator], torch.Tensor]) -> torch.Tensor:
    # Each image draws from its own generator (the loop is over images, never pixels).
    return torch.stack([draw(g) for g in rngs])


def _depthwise(x: torch.Tensor, kernels: torch.Tensor) -> torch.Tensor:
    """Convolve each image with its own kernel (kernels [b or 1, kh, kw], odd sizes), edges replicated.

    Every (image, channel) is its own group of one grouped conv, so an image's result is computed
    alone and does not depend on the rest of the batch (checked by the batch-invariance tests).
    """
    b, c, H, W = x.shape
    kh, kw = kernels.shape[-2:]
    k = kernels.to(torch.float32).expand(b, kh, kw).repeat_interleave(c, dim=0)[:, None]
    xp = F.pad(x, (kw // 2, kw // 2, kh // 2, kh // 2), mode="replicate")
    return F.conv2d(xp.reshape(1, b * c, H + kh - 1, W + kw - 1), k, groups=b * c).reshape(b, c, H, W)


def _splat(points: torch.Tensor, radius: int) -> torch.Tensor:
    """Equal-weight points [N, 2] (dy, dx) splatted bilinearly onto a (2r+1)^2 grid, summing to 1.

    Bilinear splatting = the continuous kernel convolved with a one-pixel tent, which makes the
    kernel a continuous function of its size (a 0.3 px disk is a slightly soft delta, not a delta).
    """
    size = 2 * radius + 1
    p = points.to(torch.float64) + radius
    p0 = torch.floor(p)
    f = p - p0
    p0 = p0.long()
    grid = torch.zeros(size * size, dtype=torch.float64)
    for oy in (0, 1):
        for ox in (0, 1):
            wy = f[:, 0] if oy else 1 - f[:, 0]
            wx = f[:, 1] if ox else 1 - f[:, 1]
            iy = (p0[:, 0] + oy).clamp(0, size - 1)
            ix = (p0[:, 1] + ox).clamp(0, size - 1)
            grid.index_add_(0, iy * size + ix, wy * wx)
    return (grid / grid.sum()).view(size, size)


def _unit_disk_points(n: int = 41) -> torch.Tensor:
    """A fixed, symmetric grid of points filling the unit disk (scaled by the blur radius)."""
    t = torch.linspace(-1, 1, n, dtype=torch.float64)
    yy, xx = torch.meshgrid(t, t, indexing="ij")
    inside = yy**2 + xx**2 <= 1
    return torch.stack([yy[inside], xx[inside]], dim=1)


_UNIT_DISK = _unit_disk_points()


# ------------------------------------------------------------------------------------------- noise


def gaussian_noise(x: torch.Tensor, sigma: float, rngs: Rngs) -> torch.Tensor:
    """Additive Gaussian noise, std `sigma` in units of the full intensity range."""
    return x + sigma * _field(x, rngs, lambda shape, g: torch.randn(shape, generator=g))


def speckle_noise(x: torch.Tensor, sigma: float, rngs: Rngs) -> torch.Tensor:
    """Multiplicative noise x * (1 + sigma * n): stronger in bright regions."""
    return x + x * (sigma * _field(x, rngs, lambda shape, g: torch.randn(shape, generator=g)))


def shot_noise(x: torch.Tensor, photons: float, rngs: Rngs) -> torch.Tensor:
    """Poisson (quantum) noise: `photons` expected counts at full intensity; fewer = noisier."""
    grey = grey_mask(x).tolist()
    counts = torch.stack([
        torch.poisson(xi[:1] if gr else xi, generator=g).expand(3, -1, -1)  # grey: one shared channel
        for xi, g, gr in zip(x.clamp(0, 1) * photons, rngs, grey)
    ])
    return counts / photons


def impulse_noise(x: torch.Tensor, amount: float, rngs: Rngs) -> torch.Tensor:
    """Salt-and-pepper noise: a fraction `amount` of values set to 0 or 1 (dead / hot pixels)."""
    u = _field(x, rngs, lambda shape, g: torch.rand(shape, generator=g))
    y = torch.where(u < amount / 2, torch.zeros_like(x), x)
    return torch.where(u > 1 - amount / 2, torch.ones_like(x), y)


# -------------------------------------------------------------------------------------------- blur


def gaussian_blur(x: torch.Tensor, sigma_ref: float, rngs: Rngs) -> torch.Tensor:
    """Separable Gaussian blur, std `sigma_ref` px at the reference size."""
    sigma = sigma_ref * spatial_scale(x)
    if sigma < 1e-3:
        return x
    r = max(1, math.ceil(3 * sigma))
    k = torch.arange(-r, r + 1, dtype=torch.float64)
    w = torch.exp(-0.5 * (k / sigma) ** 2)
    w = w / w.sum()
    return _depthwise(_depthwise(x, w.view(1, 1, -1)), w.view(1, -1, 1))  # separable: rows, then columns


def defocus_blur(x: torch.Tensor, radius_ref: float, rngs: Rngs) -> torch.Tensor:
    """Out-of-focus optics: uniform disk (pillbox) of radius `radius_ref` px at the reference size."""
    radius = radius_ref * spatial_scale(x)
    return _depthwise(x, _splat(_UNIT_DISK * radius, math.ceil(radius) + 1)[None])


def motion_blur(x: torch.Tensor, length_ref: float, rngs: Rngs) -> torch.Tensor:
    """Camera or patient motion: uniform line of `length_ref` px (reference size), random angle per image."""
    length = length_ref * spatial_scale(x)
    r = math.ceil(length / 2) + 1
    t = torch.linspace(-0.5, 0.5, max(17, math.ceil(4 * length) | 1), dtype=torch.float64) * length
    angles = _per_image(rngs, lambda g: torch.rand((), generator=g, dtype=torch.float64) * math.pi)
    kernels = torch.stack([_splat(torch.stack([t * torch.sin(a), t * torch.cos(a)], dim=1), r) for a in angles])
    return _depthwise(x, kernels)


# ----------------------------------------------------------------------------------------- digital


def jpeg(x: torch.Tensor, quality: int, rngs: Rngs) -> torch.Tensor:
    """JPEG round trip at `quality` (PIL, default 4:2:0 chroma subsampling; grey images as 'L')."""
    u8 = (x.clamp(0, 1) * 255).round().to(torch.uint8)
    grey = grey_mask(u8)
    out = []
    for img, is_grey in zip(u8, grey):  # per image: the codec is inherently one image at a time
        arr = img[0].numpy() if is_grey else img.permute(1, 2, 0).numpy()
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(arr)).save(buf, format="JPEG", quality=int(quality))
        dec = torch.from_numpy(np.array(Image.open(buf)))
        out.append(dec[None].expand(3, -1, -1) if is_grey else dec.permute(2, 0, 1))
    return torch.stack(out).to(torch.float32) / 255


def pixelate(x: torch.Tensor, block_ref: float, rngs: Rngs) -> torch.Tensor:
    """Low-resolution sampling: average over blocks of `block_ref` px (reference size), shown blocky.

    The scaled block fixes the effective resolution at about REFERENCE_SIZE / block_ref pixels
    whatever the input size, so it does nothing to images already below that resolution.
    """
    H, W = x.shape[-2:]
    block = block_ref * spatial_scale(x)
    h, w = max(1, min(H, round(H / block))), max(1, min(W, round(W / block)))
    if (h, w) == (H, W):
        return x
    small = F.adaptive_avg_pool2d(x, (h, w))
    return F.interpolate(small, size=(H, W), mode="nearest")


# --------------------------------------------------------------------------------------- intensity


def brightness(x: torch.Tensor, factor: float, rngs: Rngs) -> torch.Tensor:
    """Exposure change: multiply by `factor` (>1 brighter, saturating; <1 darker)."""
    return x * factor


def contrast(x: torch.Tensor, factor: float, rngs: Rngs) -> torch.Tensor:
    """Scale deviations from the image's mean luminance by `factor` (as PIL ImageEnhance.Contrast)."""
    # Mean from exact integer sums, so it does not depend on the batch's reduction order.
    q = (x.clamp(0, 1) * 255).round().to(torch.int64).sum(dim=(2, 3)).to(torch.float64)
    lum = (q[:, 0] * 0.299 + q[:, 1] * 0.587 + q[:, 2] * 0.114) / (255 * x.shape[-2] * x.shape[-1])
    m = lum.to(torch.float32).view(-1, 1, 1, 1)
    return m + factor * (x - m)


def gamma(x: torch.Tensor, g: float, rngs: Rngs) -> torch.Tensor:
    """Gamma curve x ** g: g > 1 darkens mid-tones (harder look), g < 1 lifts them (washed out)."""
    return x.clamp(0, 1) ** g


# --------------------------------------------------------------------------------------- occlusion


def _pixel_grid(H: int, W: int) -> tuple[torch.Tensor, torch.Tensor]:
    yy, xx = torch.meshgrid(torch.arange(H, dtype=torch.float32) + 0.5, torch.arange(W, dtype=torch.float32) + 0.5, indexing="ij")
    return yy, xx


def black_corners(x: torch.Tensor, radius_frac: float, rngs: Rngs) -> torch.Tensor:
    """Dermatoscope field stop: black outside a centred circle of `radius_frac` x the half-diagonal."""
    H, W = x.shape[-2:]
    yy, xx = _pixel_grid(H, W)
    d = torch.sqrt((yy - H / 2) ** 2 + (xx - W / 2) ** 2)
    feather = max(1.0, 2 * spatial_scale(x))  # a soft optical edge, ~2 px at the reference size
    mask = ((radius_frac * math.hypot(H, W) / 2 - d) / feather + 0.5).clamp(0, 1)
    return x * mask


def hair(x: torch.Tensor, param: tuple[int, float], rngs: Rngs) -> torch.Tensor:
    """Dark, gently curved hairs over the skin: (count, width px at the reference size).

    Drawn per image with PIL on a supersampled canvas and box-averaged back (anti-aliased, so a
    hair thinner than a pixel only partly covers it): a vectorised distance field over all pixels,
    segments and hairs was ~10x slower. Geometry is random per image, sizes relative to the image.
    """
    count, width_ref = param
    H, W = x.shape[-2:]
    side = min(H, W)
    base_w = width_ref * spatial_scale(x)
    # Thinnest hair (0.7 x base) at least ~6 canvas px wide, so integer line widths are accurate.
    ss = int(min(max(2, math.ceil(6 / (0.7 * base_w))), 16, max(1, 4096 // max(H, W))))
    s = np.linspace(0.0, 1.0, 25)
    alphas, paints = [], []
    for g, is_grey in zip(rngs, grey_mask(x).tolist()):
        geo = torch.rand((count, 7), generator=g, dtype=torch.float64).numpy()
        alpha = Image.new("L", (W * ss, H * ss), 0)
        paint = Image.new("RGB", (W * ss, H * ss), (0, 0, 0))
        draw_a, draw_p = ImageDraw.Draw(alpha), ImageDraw.Draw(paint)
        for fy, fx, fang, flen, fbend, fw, ftone in geo:
            y0, x0 = (1.2 * fy - 0.1) * H, (1.2 * fx - 0.1) * W  # may start just outside the image
            ang, length = 2 * math.pi * fang, (0.25 + 0.5 * flen) * side
            dy, dx = math.sin(ang), math.cos(ang)
            y2, x2 = y0 + length * dy, x0 + length * dx
            bend = (fbend - 0.5) * 0.6 * length  # quadratic Bezier with a perpendicular control point
            cy, cx = (y0 + y2) / 2 - bend * dx, (x0 + x2) / 2 + bend * dy
            py = (1 - s) ** 2 * y0 + 2 * (1 - s) * s * cy + s**2 * y2
            px = (1 - s) ** 2 * x0 + 2 * (1 - s) * s * cx + s**2 * x2
            points = [(float(a) * ss, float(b) * ss) for a, b in zip(px, py)]
            width = max(1, round(base_w * (0.7 + 0.6 * fw) * ss))
            tone = 0.04 + 0.12 * ftone  # near-black to dark brown
            rgb = (tone, tone, tone) if is_grey else (1.25 * tone, tone, 0.8 * tone)
            draw_a.line(points, fill=255, width=width, joint="curve")
            draw_p.line(points, fill=tuple(round(255 * c) for c in rgb), width=width, joint="curve")
        alphas.append(np.asarray(alpha.resize((W, H), Image.BOX)))
        paints.append(np.asarray(paint.resize((W, H), Image.BOX)))
    # Box-averaged canvases: coverage A and premultiplied colour P; over-composite onto the image.
    a = torch.from_numpy(np.stack(alphas)).to(torch.float32)[:, None] / 255
    p = torch.from_numpy(np.stack(paints)).permute(0, 3, 1, 2).to(torch.float32) / 255
    return x * (1 - a) + p
