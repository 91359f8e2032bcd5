"""The demo datasets' images: dermoscopy, fundus and chest-X-ray look-alikes drawn from their labels
(`synthetic` holds the specs, the dataset kind and the labels; the look of each specialty is described there).

All geometry is drawn in normalised coordinates [-1, 1], so `image_size` changes resolution,
not content. Rendering is vectorised over images (numpy, in chunks); point-like structures
(hairs, vessels, dots) are splatted and blurred. Any change here changes the images: bump
synthetic.GENERATOR_VERSION with it.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from scipy.ndimage import gaussian_filter

_CHUNK = 128  # images rendered at once (bounds memory at large sizes)


class Look(Protocol):
    """What a renderer reads of a synthetic.SyntheticSpec."""

    site: str
    image_size: int
    signal: float
    nuisance: float


# ----------------------------------------------------------------------------------------------
# drawing helpers (normalised coordinates: x right, y down, both in [-1, 1])


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    c = ((np.arange(size, dtype=np.float32) + 0.5) / size * 2 - 1).astype(np.float32)
    return c[None, None, :], c[None, :, None]  # x [1, 1, S], y [1, S, 1]


def _col(v: np.ndarray) -> np.ndarray:
    """Per-image parameter [n] -> broadcastable [n, 1, 1]."""
    return np.asarray(v, dtype=np.float32)[:, None, None]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class _Fourier:
    """Random smooth fields as sums of `terms` plane waves per image; evaluated at any coordinates."""

    def __init__(self, rng: np.random.Generator, n: int, terms: int, freq: tuple[float, float]):
        angle = rng.uniform(0, 2 * np.pi, (n, terms))
        radius = rng.uniform(freq[0], freq[1], (n, terms))
        self.wx = (radius * np.cos(angle)).astype(np.float32)
        self.wy = (radius * np.sin(angle)).astype(np.float32)
        self.phase = rng.uniform(0, 2 * np.pi, (n, terms)).astype(np.float32)
        self.scale = np.float32(np.sqrt(2.0 / terms))

    def take(self, index: np.ndarray) -> "_Fourier":
        other = object.__new__(_Fourier)
        other.wx, other.wy, other.phase, other.scale = self.wx[index], self.wy[index], self.phase[index], self.scale
        return other

    def __call__(self, sl: slice, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = None
        for j in range(self.wx.shape[1]):
            term = np.cos(_col(self.wx[sl, j]) * u + _col(self.wy[sl, j]) * v + _col(self.phase[sl, j]))
            out = term if out is None else out + term
        return out * self.scale


class _Points:
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


def _curves(
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


def _finish(
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


def _tone(rgb: np.ndarray, contrast: float, pivot: float, gamma: float) -> np.ndarray:
    """Contrast around `pivot`, clip to [0, 1], then gamma (skipping identity steps)."""
    if contrast != 1.0:
        rgb = pivot + np.float32(contrast) * (rgb - np.float32(pivot))
    rgb = np.clip(rgb, 0, 1)
    return rgb if gamma == 1.0 else rgb ** np.float32(gamma)


def _by_class(table, labels: np.ndarray, signal: float) -> np.ndarray:
    """Per-image value of a class-indexed table, shrunk toward the class-prior mean by `signal`."""
    table = np.asarray(table, dtype=np.float64)
    neutral = table.mean()
    return neutral + signal * (table[labels] - neutral)


# ----------------------------------------------------------------------------------------------
# dermoscopy

_DERM_PALETTE = np.array(  # pigment density 0 -> 1: tan, light brown, dark brown, near-black
    [[0.80, 0.62, 0.46], [0.62, 0.42, 0.27], [0.38, 0.22, 0.13], [0.16, 0.10, 0.08]], dtype=np.float32
)
_DERM_BLUE_GREY = np.array([0.42, 0.47, 0.58], dtype=np.float32)
_DERM_SITES = {
    # gains = white balance, contrast around mid-grey, gamma, blur, noise, P(dark scope circle)
    "A": dict(gains=(1.00, 1.00, 1.00), contrast=1.00, gamma=1.00, blur=0.0, noise=0.012, scope=0.25, vignette=0.15),
    "B": dict(gains=(0.95, 1.00, 1.08), contrast=1.10, gamma=0.95, blur=0.5, noise=0.02, scope=0.60, vignette=0.30),
}


def render_derm(
    rng: np.random.Generator, labels: np.ndarray, lesion_of: np.ndarray, spec: Look
) -> np.ndarray:
    n, size, sig, nui = len(labels), spec.image_size, spec.signal, spec.nuisance
    site = _DERM_SITES[spec.site]
    # --- lesion-level parameters (drawn per image, then shared through lesion_of) ---
    lognorm = lambda sd: np.exp(rng.normal(0, sd, n))  # noqa: E731
    irregular = _by_class([0.04, 0.08, 0.05], labels, sig) * lognorm(0.45)
    asym = _by_class([0.035, 0.07, 0.045], labels, sig) * lognorm(0.5)
    grad = _by_class([0.06, 0.18, 0.08], labels, sig) * rng.uniform(0, 2, n)
    variegation = _by_class([0.12, 0.24, 0.15], labels, sig) * lognorm(0.35)
    blue = _by_class([0.05, 0.28, 0.07], labels, sig) * rng.uniform(0, 2, n) * (rng.random(n) < 0.8)
    darkness = _by_class([0.50, 0.60, 0.40], labels, sig) + rng.uniform(-0.25, 0.25, n)
    ridges = _by_class([0.04, 0.05, 0.11], labels, sig) * rng.uniform(0.4, 1.6, n)
    soft_px = _by_class([0.9, 1.3, 0.7], labels, sig) * rng.uniform(0.6, 1.5, n)
    milia_rate = np.maximum(_by_class([0.4, 0.4, 2.0], labels, sig), 0.0)
    elong = rng.uniform(0, 0.28 * nui, n)
    opacity = rng.uniform(0.75, 1.0, n)
    harmonics = np.arange(3, 9)
    coef = rng.standard_normal((n, len(harmonics))) / np.sqrt(harmonics / 3.0) / np.sqrt(len(harmonics)) * 1.3
    coef *= irregular[:, None]
    phases = rng.uniform(0, 2 * np.pi, (n, len(harmonics) + 2))
    grad_dir = rng.uniform(0, 2 * np.pi, n)
    f_var = _Fourier(rng, n, 6, (2.0, 5.0))
    f_blue = _Fourier(rng, n, 5, (1.5, 4.0))
    f_ridge = _Fourier(rng, n, 8, (10.0, 18.0))
    n_milia = rng.poisson(milia_rate)
    milia_r = np.sqrt(rng.uniform(0, 0.75, n_milia.sum()))
    milia_a = rng.uniform(0, 2 * np.pi, n_milia.sum())
    milia_img = np.repeat(np.arange(n), n_milia)
    # share lesion-level parameters between the two images of a paired lesion
    L = lesion_of
    irregular, asym, grad, variegation, blue, darkness = (
        a[L] for a in (irregular, asym, grad, variegation, blue, darkness)
    )
    ridges, soft_px, elong, opacity, coef, phases, grad_dir = (
        a[L] for a in (ridges, soft_px, elong, opacity, coef, phases, grad_dir)
    )
    f_var, f_blue, f_ridge = f_var.take(L), f_blue.take(L), f_ridge.take(L)
    # milia of a lesion appear in both its images: re-index points to every image showing it
    src_for = {}
    for i in range(n):
        src_for.setdefault(L[i], []).append(i)
    mi_img, mi_r, mi_a = [], [], []
    for k, owner in enumerate(milia_img):
        for target in src_for.get(owner, []):
            mi_img.append(target)
            mi_r.append(milia_r[k])
            mi_a.append(milia_a[k])
    mi_img, mi_r, mi_a = np.array(mi_img, dtype=np.int64), np.array(mi_r), np.array(mi_a)

    # --- image-level parameters (differ between the two images of a lesion) ---
    r0 = rng.uniform(0.30, 0.44, n) * np.exp(rng.normal(0, 0.18 * nui, n))
    cx, cy = rng.normal(0, 0.10 * nui, n), rng.normal(0, 0.10 * nui, n)
    rot = rng.uniform(0, 2 * np.pi, n)
    tone = rng.uniform(0, 1, n) ** 1.4 * min(1.0, 0.8 * nui + 0.2)
    skin = (
        np.array([0.94, 0.77, 0.68])[None] * (1 - tone[:, None])
        + np.array([0.60, 0.41, 0.30])[None] * tone[:, None]
    ) * (1 + rng.normal(0, 0.03 * nui, (n, 3)))
    gain = rng.uniform(0.88, 1.06, n) ** nui
    light = rng.uniform(0, 0.14 * nui, n)
    light_dir = rng.uniform(0, 2 * np.pi, n)
    vignette = rng.uniform(0, site["vignette"], n)
    scope = rng.random(n) < site["scope"]
    scope_r = rng.uniform(0.95, 1.25, n)
    f_skin = _Fourier(rng, n, 6, (3.0, 9.0))
    # milia in image coordinates (rotated, scaled, shifted with the lesion)
    if len(mi_img):
        ang = mi_a + rot[mi_img]
        mx = cx[mi_img] + r0[mi_img] * mi_r * np.cos(ang)
        my = cy[mi_img] + r0[mi_img] * mi_r * np.sin(ang)
    else:
        mx = my = np.zeros(0)
    milia = _Points(mi_img, mx, my, np.full(len(mi_img), 2.2))
    # hairs: a few dark curved strands
    n_hair = np.minimum(rng.poisson(0.9 * nui, n), 6)
    h_img = np.repeat(np.arange(n), n_hair)
    h = len(h_img)
    hair_len = rng.uniform(0.5, 1.6, h)
    hx, hy, _, _ = _curves(
        rng,
        rng.uniform(-1, 1, h),
        rng.uniform(-1, 1, h),
        rng.uniform(0, 2 * np.pi, h),
        hair_len,
        rng.uniform(-1.5, 1.5, h),
        rng.uniform(0, 0.15, h),
        steps=max(64, size * 2),
    )
    hair_w = rng.uniform(0.6, 1.2, h) * hair_len * 32 / hx.shape[1]  # line strength x spacing (64 px)
    hairs = _Points(np.repeat(h_img, hx.shape[1]), hx.ravel(), hy.ravel(), np.repeat(hair_w, hx.shape[1]))

    gx, gy = _grid(size)
    gxx, gyy = np.broadcast_arrays(gx, gy)  # full [1, S, S] grids
    out = np.empty((n, size, size, 3), dtype=np.uint8)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        s = slice(lo, hi)
        # lesion-local coordinates (lesion radius = 1), rotated with the lesion
        dx, dy = (gx - _col(cx[s])) / _col(r0[s]), (gy - _col(cy[s])) / _col(r0[s])
        cr, sr = _col(np.cos(rot[s])), _col(np.sin(rot[s]))
        u, v = cr * dx + sr * dy, -sr * dx + cr * dy
        r = np.sqrt(u * u + v * v)
        # border radius 1 + sum_k a_k cos(k theta + p_k), with cos/sin(k theta) by recurrence
        c1, s1 = u / np.maximum(r, 1e-6), v / np.maximum(r, 1e-6)
        ck, sk_ = c1, s1
        amps = {1: (asym, 0), 2: (elong, 1), **{int(k): (coef[:, j], j + 2) for j, k in enumerate(harmonics)}}
        border = np.ones_like(r)
        for k in range(1, int(harmonics[-1]) + 1):
            if k > 1:
                ck, sk_ = ck * c1 - sk_ * s1, sk_ * c1 + ck * s1
            amp, p = amps[k]
            a = _col(amp[s])
            border = border + (a * _col(np.cos(phases[s, p]))) * ck - (a * _col(np.sin(phases[s, p]))) * sk_
        radius_px = _col(r0[s]) * size / 2
        soft = _col(soft_px[s]) * size / 64.0
        mask = _sigmoid((border - r) * radius_px / soft) * _col(opacity[s])
        # pigment density: base + variegation + asymmetric gradient + darker centre
        dens = (
            _col(darkness[s])
            + _col(variegation[s]) * f_var(s, u, v)
            + _col(grad[s]) * (np.cos(_col(grad_dir[s])) * u + np.sin(_col(grad_dir[s])) * v)
            + 0.12 * (1 - np.minimum(r, 1.2) ** 2)
        )
        dens = np.clip(dens, 0, 1) * (len(_DERM_PALETTE) - 1)
        base = np.minimum(np.floor(dens), np.float32(len(_DERM_PALETTE) - 2))
        frac = (dens - base)[..., None]  # stays float32 (an int index would promote to float64)
        i0 = base.astype(np.intp)
        lesion = _DERM_PALETTE[i0] * (1 - frac) + _DERM_PALETTE[i0 + 1] * frac
        wb = (_col(blue[s]) * _sigmoid(5 * (f_blue(s, u, v) - 0.2)) * (r < 1.1))[..., None]
        lesion = lesion * (1 - wb) + _DERM_BLUE_GREY * wb
        lesion = lesion * (1 + _col(ridges[s]) * (0.8 - np.abs(f_ridge(s, u, v))))[..., None]  # cerebriform fissures
        mil = milia.render(lo, hi, size, 0.55)
        mil = (1 - np.exp(-mil))[..., None]
        lesion = lesion * (1 - mil) + np.array([0.93, 0.88, 0.74], dtype=np.float32) * mil
        sk = skin[s, None, None, :].astype(np.float32) * (1 + 0.025 * nui * f_skin(s, gxx, gyy))[..., None]
        # darker skin darkens the lesion too
        lesion = lesion * np.sqrt(sk / np.array([0.94, 0.77, 0.68], dtype=np.float32))
        m = mask[..., None]
        rgb = sk * (1 - m) + lesion * m
        hair = 1 - np.exp(-1.6 * hairs.render(lo, hi, size, 0.45))[..., None]
        rgb = rgb * (1 - hair) + np.array([0.12, 0.08, 0.06], dtype=np.float32) * hair
        # illumination, vignetting, dermatoscope field
        rr = gx * gx + gy * gy
        slope = np.cos(_col(light_dir[s])) * gx + np.sin(_col(light_dir[s])) * gy
        illum = _col(gain[s]) * (1 + _col(light[s]) * slope)
        illum = illum * (1 - _col(vignette[s]) * rr)
        field = 1 - _col(scope[s]) * _sigmoid((np.sqrt(rr) - _col(scope_r[s])) * size / 3.0)
        rgb = rgb * (illum * field)[..., None]
        # camera: white balance, contrast, gamma
        rgb = rgb * np.asarray(site["gains"], dtype=np.float32)
        rgb = _tone(rgb, site["contrast"], 0.5, site["gamma"])
        out[s] = _finish(rgb, rng, size, blur_px64=site["blur"], noise=site["noise"] * nui)
    return out


# ----------------------------------------------------------------------------------------------
# fundus

_FUNDUS_SITES = {
    "A": dict(gains=(1.00, 1.00, 1.00), contrast=1.00, gamma=1.00, fov=0.93, blur=0.0, noise=0.012, flash=0.0),
    "B": dict(gains=(0.92, 1.06, 1.18), contrast=0.92, gamma=1.10, fov=0.86, blur=0.45, noise=0.018, flash=0.08),
}


def render_fundus(rng: np.random.Generator, labels: np.ndarray, spec: Look) -> np.ndarray:
    n, size, sig, nui = len(labels), spec.image_size, spec.signal, spec.nuisance
    site = _FUNDUS_SITES[spec.site]
    # --- latent severity: adjacent grades overlap ---
    severity = sig * (labels + rng.normal(0, 0.45, n))
    sev = np.clip(severity, 0, None)
    n_ma = rng.poisson(3.5 * np.clip(sev - 0.35, 0, None) ** 1.1)
    n_hem = rng.poisson(1.6 * np.clip(sev - 1.3, 0, None) ** 1.3)
    n_ex = rng.poisson(1.2 * np.clip(sev - 1.5, 0, None) ** 1.2)  # clusters
    n_cw = rng.poisson(0.7 * np.clip(sev - 2.3, 0, None))
    n_nv = rng.poisson(5.0 * _sigmoid(4.0 * (sev - 3.5)))
    # --- anatomy / nuisance ---
    side = np.where(rng.random(n) < 0.5, 1.0, -1.0)  # optic disc right (+1) or left (-1)
    fov_c = rng.normal(0, 0.02 * nui, (n, 2))
    fov = site["fov"] * rng.uniform(0.97, 1.03, n)
    disc_x = fov_c[:, 0] + side * (0.40 + rng.normal(0, 0.04 * nui, n))
    disc_y = fov_c[:, 1] + rng.normal(0, 0.05 * nui, n)
    disc_r = rng.uniform(0.10, 0.13, n)
    mac_x = disc_x - side * (0.45 + rng.normal(0, 0.03, n))
    mac_y = disc_y + 0.06 + rng.normal(0, 0.03, n)
    bright = rng.uniform(0.62, 1.0, n) ** nui
    pigment = rng.uniform(-1, 1, n) * nui  # darker / paler fundus
    base = np.stack([0.86 + 0.05 * pigment, 0.36 - 0.08 * pigment, 0.14 - 0.04 * pigment], 1) * bright[:, None]
    f_chor = _Fourier(rng, n, 8, (4.0, 10.0))

    # --- vessels: 4 arcades (vein + artery each) from the disc, with branches ---
    steps = max(64, int(size * 1.2))
    img_m = np.repeat(np.arange(n), 8)
    kind = np.tile(np.arange(8), n)  # 0-3 veins (ST, IT, SN, IN), 4-7 arteries
    arcade = kind % 4
    temporal = arcade < 2
    up = np.where(arcade % 2 == 0, -1.0, 1.0)
    ang_c = np.where(temporal, up * 0.95, np.pi - up * 0.55) + rng.normal(0, 0.18 * nui, len(kind))
    ang_c = ang_c + (kind >= 4) * up * 0.15  # arteries run alongside the veins
    curv = np.where(temporal, -up * 1.25, -up * 0.3) * rng.uniform(0.7, 1.3, len(kind))
    length = np.where(temporal, rng.uniform(1.0, 1.35, len(kind)), rng.uniform(0.5, 0.75, len(kind)))
    zeros = np.zeros(len(kind))
    xc, yc, hd, tt = _curves(rng, zeros, zeros, ang_c, length, curv, rng.uniform(0.05, 0.15, len(kind)), steps)
    weight_m = np.where(kind < 4, 1.0, 0.7)[:, None] * (1 - 0.55 * tt) * (length * 32 / steps)[:, None]
    # branches: two per main vessel
    parent = np.repeat(np.arange(len(kind)), 2)
    at = rng.integers(int(0.2 * steps), int(0.8 * steps), len(parent))
    bx0, by0 = xc[parent, at], yc[parent, at]
    b_ang = hd[parent, at] + np.where(rng.random(len(parent)) < 0.5, -1, 1) * rng.uniform(0.5, 1.0, len(parent))
    b_len = rng.uniform(0.2, 0.5, len(parent))
    b_curv = rng.uniform(-1.5, 1.5, len(parent))
    bxc, byc, _, btt = _curves(rng, bx0, by0, b_ang, b_len, b_curv, rng.uniform(0.05, 0.2, len(parent)), steps // 2)
    weight_b = (weight_m[parent, at] * 0.6 * (b_len / length[parent]) * 2)[:, None] * (1 - 0.5 * btt)
    # canonical frame (disc at origin, temporal = +x) -> image
    def to_image(img, x, y):
        return disc_x[img][:, None] - side[img][:, None] * x, disc_y[img][:, None] + y

    vx_m, vy_m = to_image(img_m, xc, yc)
    vx_b, vy_b = to_image(img_m[parent], bxc, byc)
    # neovascularisation: short, very tortuous fine vessels near the disc
    img_nv = np.repeat(np.arange(n), n_nv)
    k = len(img_nv)
    nv_len = rng.uniform(0.15, 0.3, k)
    nv_x0, nv_y0, nv_ang = rng.normal(0, 0.05, k), rng.normal(0, 0.05, k), rng.uniform(0, 2 * np.pi, k)
    nv_curv = rng.uniform(-4, 4, k)
    nxc, nyc, _, _ = _curves(rng, nv_x0, nv_y0, nv_ang, nv_len, nv_curv, rng.uniform(0.6, 1.2, k), steps // 2)
    vx_n, vy_n = to_image(img_nv, nxc, nyc)
    vessels = _Points(
        np.concatenate([np.repeat(img_m, steps), np.repeat(img_m[parent], steps // 2), np.repeat(img_nv, steps // 2)]),
        np.concatenate([vx_m.ravel(), vx_b.ravel(), vx_n.ravel()]),
        np.concatenate([vy_m.ravel(), vy_b.ravel(), vy_n.ravel()]),
        np.concatenate([weight_m.ravel(), weight_b.ravel(), np.repeat(0.5 * nv_len * 32 / (steps // 2), steps // 2)]),
    )

    # --- lesions, positioned inside the field of view ---
    def scatter(counts, spread=0.72):
        img = np.repeat(np.arange(n), counts)
        r = spread * np.sqrt(rng.uniform(0, 1, len(img))) * fov[img]
        a = rng.uniform(0, 2 * np.pi, len(img))
        return img, fov_c[img, 0] + r * np.cos(a), fov_c[img, 1] + r * np.sin(a)

    i_ma, x_ma, y_ma = scatter(n_ma)
    ma = _Points(i_ma, x_ma, y_ma, rng.uniform(1.0, 1.8, len(i_ma)))
    i_h, x_h, y_h = scatter(n_hem)
    hem = _Points(i_h, x_h, y_h, rng.uniform(5.0, 12.0, len(i_h)))
    # exudates: clusters of small yellow flecks, favouring the macular region
    i_c = np.repeat(np.arange(n), n_ex)
    near_mac = rng.random(len(i_c)) < 0.6
    m_c = len(i_c)
    cx = np.where(near_mac, mac_x[i_c] + rng.normal(0, 0.18, m_c), fov_c[i_c, 0] + rng.uniform(-0.55, 0.55, m_c))
    cy = np.where(near_mac, mac_y[i_c] + rng.normal(0, 0.18, m_c), fov_c[i_c, 1] + rng.uniform(-0.55, 0.55, m_c))
    per = rng.integers(2, 7, len(i_c))
    i_e = np.repeat(i_c, per)
    ex_x = np.repeat(cx, per) + rng.normal(0, 0.05, len(i_e))
    ex_y = np.repeat(cy, per) + rng.normal(0, 0.05, len(i_e))
    ex = _Points(i_e, ex_x, ex_y, rng.uniform(0.8, 1.6, len(i_e)))
    i_w, x_w, y_w = scatter(n_cw, 0.5)
    cw = _Points(i_w, x_w, y_w, rng.uniform(6.0, 12.0, len(i_w)))

    gx, gy = _grid(size)
    gxx, gyy = np.broadcast_arrays(gx, gy)  # full [1, S, S] grids
    out = np.empty((n, size, size, 3), dtype=np.uint8)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        s = slice(lo, hi)
        dxf, dyf = gx - _col(fov_c[s, 0]), gy - _col(fov_c[s, 1])
        d = np.sqrt(dxf * dxf + dyf * dyf) / _col(fov[s])
        rgb = base[s, None, None, :].astype(np.float32) * (1 - 0.45 * d * d)[..., None]
        rgb = rgb * (1 + 0.05 * nui * f_chor(s, gxx, gyy))[..., None]
        dm = ((gx - _col(mac_x[s])) ** 2 + (gy - _col(mac_y[s])) ** 2) / 0.16**2
        rgb = rgb * (1 - 0.35 * np.exp(-dm))[..., None]
        dd = np.sqrt((gx - _col(disc_x[s])) ** 2 + (gy - _col(disc_y[s])) ** 2) / _col(disc_r[s])
        disc = np.exp(-(dd**4))[..., None]
        cup = np.exp(-((dd / 0.5) ** 2))[..., None]
        disc_col = np.array([1.0, 0.86, 0.58], dtype=np.float32) * _col(0.75 + 0.25 * bright[s])[..., None]
        rgb = rgb * (1 - disc) + disc_col * disc
        rgb = rgb + 0.12 * cup
        vess = (1 - np.exp(-1.6 * vessels.render(lo, hi, size, 0.55)))[..., None]
        rgb = rgb * (1 - vess * np.array([0.35, 0.65, 0.55], dtype=np.float32))
        red = 1 - np.exp(-(ma.render(lo, hi, size, 0.5) + hem.render(lo, hi, size, 1.3)))
        rgb = rgb * (1 - red[..., None] * np.array([0.55, 0.80, 0.70], dtype=np.float32))
        yel = np.clip(ex.render(lo, hi, size, 0.5), 0, 1)[..., None]
        rgb = rgb * (1 - yel) + np.array([0.98, 0.86, 0.35], dtype=np.float32) * _col(bright[s] ** 0.5)[..., None] * yel
        wool = np.clip(cw.render(lo, hi, size, 1.4) * 0.8, 0, 0.85)[..., None]
        rgb = rgb * (1 - wool) + np.array([0.92, 0.88, 0.78], dtype=np.float32) * wool
        # camera: flash glare near the centre, colour balance, contrast, gamma, circular field
        rgb = rgb + site["flash"] * np.exp(-(dxf**2 + dyf**2) / 0.2)[..., None]
        rgb = rgb * np.asarray(site["gains"], dtype=np.float32)
        rgb = _tone(rgb, site["contrast"], 0.25, site["gamma"])
        rgb = rgb * _sigmoid((1 - d) * _col(fov[s]) * size / 2.0)[..., None]
        out[s] = _finish(rgb.astype(np.float32), rng, size, blur_px64=site["blur"], noise=site["noise"] * nui)
    return out


# ----------------------------------------------------------------------------------------------
# chest X-ray

_CXR_SITES = {
    # exposure: gain & gamma on the attenuation image; blur>0 with sharpen>0 = unsharp mask
    "A": dict(gain=1.00, gamma=1.00, offset=0.00, blur=0.6, sharpen=0.0, noise=0.015),
    "B": dict(gain=0.95, gamma=0.85, offset=0.04, blur=1.0, sharpen=0.25, noise=0.02),
}


def render_cxr(rng: np.random.Generator, labels: np.ndarray, spec: Look) -> np.ndarray:
    n, size, sig, nui = len(labels), spec.image_size, spec.signal, spec.nuisance
    site = _CXR_SITES[spec.site]
    cardio, effusion, consol = labels[:, 0] > 0.5, labels[:, 1] > 0.5, labels[:, 2] > 0.5
    # --- patient / positioning nuisance ---
    scale = rng.uniform(0.80, 1.05, n) ** nui
    rot = rng.normal(0, 0.06 * nui, n)
    shift = rng.normal(0, 0.07 * nui, (n, 2))
    dia = 0.58 + rng.uniform(-0.08, 0.08, n) * nui  # inspiration depth: dome height
    lung_w = 0.32 * rng.uniform(0.92, 1.08, n) ** nui
    soft = rng.uniform(0.45, 0.6, n)  # soft-tissue density (habitus)
    exposure = rng.uniform(0.85, 1.15, n) ** nui
    bubble = rng.random(n) < 0.5
    # --- pathology ---
    ctr = rng.normal(0.44, 0.035, n) + sig * cardio * rng.normal(0.085, 0.03, n)
    heart_w = 0.72 * ctr  # half-width of the heart shadow (thorax half-width ~0.72)
    eff_side = rng.integers(0, 3, n)  # 0 left, 1 right, 2 both (image sides)
    eff_vol = effusion * rng.uniform(0.05, 0.8, n) ** 1.5 * sig
    blunt = rng.uniform(0, 0.05, n) * nui  # physiological costophrenic variation
    con_side = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    con_x = con_side * rng.uniform(0.25, 0.45, n)
    con_y = rng.uniform(-0.35, dia - 0.1, n)
    con_r = rng.uniform(0.10, 0.22, n)
    con_amp = consol * rng.uniform(0.5, 1.3, n) * sig
    f_con = _Fourier(rng, n, 7, (6.0, 14.0))
    f_lung = _Fourier(rng, n, 8, (6.0, 16.0))
    rib_phase = rng.uniform(0, 1, n)
    rib_space = rng.uniform(0.15, 0.18, n)
    noise_sd = site["noise"] * nui * rng.uniform(0.8, 1.2, n)

    gx, gy = _grid(size)
    out = np.empty((n, size, size), dtype=np.uint8)
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        s = slice(lo, hi)
        c, sn = _col(np.cos(rot[s])), _col(np.sin(rot[s]))
        x0, y0 = gx - _col(shift[s, 0]), gy - _col(shift[s, 1])
        X = (c * x0 + sn * y0) / _col(scale[s])
        Y = (-sn * x0 + c * y0) / _col(scale[s])
        ax = np.abs(X)
        # body outline: torso with shoulders and neck
        half = 0.17 + 0.70 * _sigmoid((Y + 0.78) * 9)  # neck -> sloping shoulders -> chest wall
        body = _sigmoid((half - ax) * size / 3)
        img = 0.06 + body * _col(soft[s]) * (0.85 + 0.2 * (1 - np.clip(ax / 0.9, 0, 1) ** 2))
        # lungs: per side, rounded apex, lateral wall, domed diaphragm
        w = _col(lung_w[s])
        dia_s = _col(dia[s])
        lung_cx = 0.40
        u = (ax - lung_cx) / w  # -1 medial, +1 lateral
        apex = -0.72
        vert = np.clip((Y - apex) / 0.35, 0, 1)
        width = np.sqrt(vert)  # rounded apex
        dome = dia_s - 0.13 * np.clip(1 - u * u, 0, 1) + 0.03 * (X > 0)  # left hemidiaphragm sits lower
        lung = (
            _sigmoid((width - np.abs(u)) * w * size / 2.5)
            * _sigmoid((dome - Y) * size / 2.0)
            * _sigmoid((Y - apex) * size / 2)
        )
        # effusion: fluid rising from the base with a lateral meniscus (blunts the angle)
        vol = _col(eff_vol[s])
        es = _col(eff_side[s])
        on_side = np.where(es == 2, 1.0, np.where((X < 0) == (es == 0), 1.0, 0.0))
        amount = _col(blunt[s]) + vol * on_side
        level = dia_s - 0.02 - 0.5 * amount - 0.15 * amount * np.clip(u, 0, 1)  # meniscus: higher laterally
        fluid = _sigmoid((Y - level) * size / 3.0) * np.clip(u + 0.3 + 2 * amount, 0, 1)
        air = lung * (1 - 0.9 * fluid)
        # heart: a blunt ellipse, sitting left of the patient (image right), on the diaphragm
        hw = _col(heart_w[s])
        hx = 0.05 + 0.35 * (hw - 0.28)
        hy = dia_s - 0.12
        heart = _sigmoid((1 - np.sqrt(((X - hx) / hw) ** 2 + ((Y - hy) / 0.27) ** 2)) * _col(heart_w[s]) * size / 2.0)
        media = _sigmoid((0.11 - ax) * size / 2.5) * _sigmoid((hy - Y) * size / 4)
        air = air * (1 - np.maximum(heart, media))
        # lungs are dark: air removes most of the soft-tissue attenuation
        markings = 0.05 * f_lung(s, X, Y) + 0.12 * np.exp(-(((ax - 0.17) / 0.08) ** 2 + ((Y + 0.05) / 0.18) ** 2))
        img = img - air * (0.40 - markings) * _col(soft[s]) / 0.5
        # consolidation: patchy opacity inside a lung
        blob = np.exp(-(((X - _col(con_x[s])) ** 2 + (Y - _col(con_y[s])) ** 2) / _col(con_r[s]) ** 2))
        patch = _sigmoid(3.0 * (f_con(s, X, Y) + 2.2 * blob - 1.3)) * blob
        img = img + lung * _col(con_amp[s]) * 0.28 * patch
        # bones: spine, posterior ribs, clavicles
        spine = _sigmoid((0.06 - ax) * size / 2) * (0.08 + 0.03 * np.cos(2 * np.pi * Y / 0.09))
        ribc = (Y + 0.95 - 0.25 * ax - 0.45 * X * X) / _col(rib_space[s]) + _col(rib_phase[s])
        ribs = ((0.5 + 0.5 * np.cos(2 * np.pi * ribc)) ** 6) * _sigmoid((0.9 - ax) * 8) * _sigmoid((ax - 0.06) * 30)
        ribs = ribs * (Y < dia_s + 0.05)
        clav = np.exp(-(((Y + 0.64 - 0.18 * ax) / 0.03) ** 2)) * _sigmoid((0.55 - ax) * 20) * _sigmoid((ax - 0.06) * 30)
        img = img + body * (spine + 0.11 * ribs * (0.35 + 0.65 * lung) + 0.16 * clav)
        img = img + 0.08 * np.maximum(heart, media) + 0.05 * _sigmoid((Y - dome) * size / 2.0) * body
        trachea = _sigmoid((0.035 - ax) * size / 2) * _sigmoid((-0.25 - Y) * size / 4)
        img = img - 0.12 * trachea
        # gastric bubble under the left hemidiaphragm (image right)
        gb = np.exp(-(((X - 0.35) / 0.1) ** 2 + ((Y - dia_s - 0.12) / 0.06) ** 2)) * _col(bubble[s])
        img = img - 0.22 * gb
        # detector: exposure and site response
        img = np.clip(img * _col(exposure[s]) * site["gain"] + site["offset"], 0, 1) ** site["gamma"]
        img = img[..., None].astype(np.float32)
        out[s] = _finish(img, rng, size, blur_px64=site["blur"], sharpen=site["sharpen"], noise=noise_sd[s])[..., 0]
    return out
