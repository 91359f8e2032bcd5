"""The demo datasets' images: dermoscopy, fundus and chest-X-ray look-alikes drawn from their labels
(`synthetic` holds the specs, the dataset kind and the labels; the look of each specialty is described there).

All geometry is drawn in normalised coordinates [-1, 1], so `image_size` changes resolution,
not content. Rendering is vectorised over images (numpy, in chunks); point-like structures
(hairs, vessels, dots) are splatted and blurred, with the primitives of `synthetic_drawing`. Any
change here changes the images: bump synthetic.GENERATOR_VERSION with it.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from crsbench.datasets.synthetic_drawing import (
    CHUNK,
    BlurredPoints,
    FourierField,
    by_class,
    camera_finish,
    per_image,
    pixel_grid,
    random_curves,
    sigmoid,
    tone_curve,
)


class Look(Protocol):
    """What a renderer reads of a synthetic.SyntheticSpec."""

    site: str
    image_size: int
    signal: float
    nuisance: float


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
    irregular = by_class([0.04, 0.08, 0.05], labels, sig) * lognorm(0.45)
    asym = by_class([0.035, 0.07, 0.045], labels, sig) * lognorm(0.5)
    grad = by_class([0.06, 0.18, 0.08], labels, sig) * rng.uniform(0, 2, n)
    variegation = by_class([0.12, 0.24, 0.15], labels, sig) * lognorm(0.35)
    blue = by_class([0.05, 0.28, 0.07], labels, sig) * rng.uniform(0, 2, n) * (rng.random(n) < 0.8)
    darkness = by_class([0.50, 0.60, 0.40], labels, sig) + rng.uniform(-0.25, 0.25, n)
    ridges = by_class([0.04, 0.05, 0.11], labels, sig) * rng.uniform(0.4, 1.6, n)
    soft_px = by_class([0.9, 1.3, 0.7], labels, sig) * rng.uniform(0.6, 1.5, n)
    milia_rate = np.maximum(by_class([0.4, 0.4, 2.0], labels, sig), 0.0)
    elong = rng.uniform(0, 0.28 * nui, n)
    opacity = rng.uniform(0.75, 1.0, n)
    harmonics = np.arange(3, 9)
    coef = rng.standard_normal((n, len(harmonics))) / np.sqrt(harmonics / 3.0) / np.sqrt(len(harmonics)) * 1.3
    coef *= irregular[:, None]
    phases = rng.uniform(0, 2 * np.pi, (n, len(harmonics) + 2))
    grad_dir = rng.uniform(0, 2 * np.pi, n)
    f_var = FourierField(rng, n, 6, (2.0, 5.0))
    f_blue = FourierField(rng, n, 5, (1.5, 4.0))
    f_ridge = FourierField(rng, n, 8, (10.0, 18.0))
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
    skin_tone = rng.uniform(0, 1, n) ** 1.4 * min(1.0, 0.8 * nui + 0.2)
    skin = (
        np.array([0.94, 0.77, 0.68])[None] * (1 - skin_tone[:, None])
        + np.array([0.60, 0.41, 0.30])[None] * skin_tone[:, None]
    ) * (1 + rng.normal(0, 0.03 * nui, (n, 3)))
    gain = rng.uniform(0.88, 1.06, n) ** nui
    light = rng.uniform(0, 0.14 * nui, n)
    light_dir = rng.uniform(0, 2 * np.pi, n)
    vignette = rng.uniform(0, site["vignette"], n)
    scope = rng.random(n) < site["scope"]
    scope_r = rng.uniform(0.95, 1.25, n)
    f_skin = FourierField(rng, n, 6, (3.0, 9.0))
    # milia in image coordinates (rotated, scaled, shifted with the lesion)
    if len(mi_img):
        ang = mi_a + rot[mi_img]
        mx = cx[mi_img] + r0[mi_img] * mi_r * np.cos(ang)
        my = cy[mi_img] + r0[mi_img] * mi_r * np.sin(ang)
    else:
        mx = my = np.zeros(0)
    milia = BlurredPoints(mi_img, mx, my, np.full(len(mi_img), 2.2))
    # hairs: a few dark curved strands
    n_hair = np.minimum(rng.poisson(0.9 * nui, n), 6)
    h_img = np.repeat(np.arange(n), n_hair)
    h = len(h_img)
    hair_len = rng.uniform(0.5, 1.6, h)
    hx, hy, _, _ = random_curves(
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
    hairs = BlurredPoints(np.repeat(h_img, hx.shape[1]), hx.ravel(), hy.ravel(), np.repeat(hair_w, hx.shape[1]))

    gx, gy = pixel_grid(size)
    gxx, gyy = np.broadcast_arrays(gx, gy)  # full [1, S, S] grids
    out = np.empty((n, size, size, 3), dtype=np.uint8)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        s = slice(lo, hi)
        # lesion-local coordinates (lesion radius = 1), rotated with the lesion
        dx, dy = (gx - per_image(cx[s])) / per_image(r0[s]), (gy - per_image(cy[s])) / per_image(r0[s])
        cr, sr = per_image(np.cos(rot[s])), per_image(np.sin(rot[s]))
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
            a = per_image(amp[s])
            border = border + (a * per_image(np.cos(phases[s, p]))) * ck - (a * per_image(np.sin(phases[s, p]))) * sk_
        radius_px = per_image(r0[s]) * size / 2
        soft = per_image(soft_px[s]) * size / 64.0
        mask = sigmoid((border - r) * radius_px / soft) * per_image(opacity[s])
        # pigment density: base + variegation + asymmetric gradient + darker centre
        dens = (
            per_image(darkness[s])
            + per_image(variegation[s]) * f_var(s, u, v)
            + per_image(grad[s]) * (np.cos(per_image(grad_dir[s])) * u + np.sin(per_image(grad_dir[s])) * v)
            + 0.12 * (1 - np.minimum(r, 1.2) ** 2)
        )
        dens = np.clip(dens, 0, 1) * (len(_DERM_PALETTE) - 1)
        base = np.minimum(np.floor(dens), np.float32(len(_DERM_PALETTE) - 2))
        frac = (dens - base)[..., None]  # stays float32 (an int index would promote to float64)
        i0 = base.astype(np.intp)
        lesion = _DERM_PALETTE[i0] * (1 - frac) + _DERM_PALETTE[i0 + 1] * frac
        wb = (per_image(blue[s]) * sigmoid(5 * (f_blue(s, u, v) - 0.2)) * (r < 1.1))[..., None]
        lesion = lesion * (1 - wb) + _DERM_BLUE_GREY * wb
        # cerebriform fissures
        lesion = lesion * (1 + per_image(ridges[s]) * (0.8 - np.abs(f_ridge(s, u, v))))[..., None]
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
        slope = np.cos(per_image(light_dir[s])) * gx + np.sin(per_image(light_dir[s])) * gy
        illum = per_image(gain[s]) * (1 + per_image(light[s]) * slope)
        illum = illum * (1 - per_image(vignette[s]) * rr)
        field = 1 - per_image(scope[s]) * sigmoid((np.sqrt(rr) - per_image(scope_r[s])) * size / 3.0)
        rgb = rgb * (illum * field)[..., None]
        # camera: white balance, contrast, gamma
        rgb = rgb * np.asarray(site["gains"], dtype=np.float32)
        rgb = tone_curve(rgb, site["contrast"], 0.5, site["gamma"])
        out[s] = camera_finish(rgb, rng, size, blur_px64=site["blur"], noise=site["noise"] * nui)
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
    n_nv = rng.poisson(5.0 * sigmoid(4.0 * (sev - 3.5)))
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
    f_chor = FourierField(rng, n, 8, (4.0, 10.0))

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
    xc, yc, hd, tt = random_curves(rng, zeros, zeros, ang_c, length, curv, rng.uniform(0.05, 0.15, len(kind)), steps)
    weight_m = np.where(kind < 4, 1.0, 0.7)[:, None] * (1 - 0.55 * tt) * (length * 32 / steps)[:, None]
    # branches: two per main vessel
    parent = np.repeat(np.arange(len(kind)), 2)
    at = rng.integers(int(0.2 * steps), int(0.8 * steps), len(parent))
    bx0, by0 = xc[parent, at], yc[parent, at]
    b_ang = hd[parent, at] + np.where(rng.random(len(parent)) < 0.5, -1, 1) * rng.uniform(0.5, 1.0, len(parent))
    b_len = rng.uniform(0.2, 0.5, len(parent))
    b_curv = rng.uniform(-1.5, 1.5, len(parent))
    bxc, byc, _, btt = random_curves(rng, bx0, by0, b_ang, b_len, b_curv, rng.uniform(0.05, 0.2, len(parent)),
                                     steps // 2)
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
    nxc, nyc, _, _ = random_curves(rng, nv_x0, nv_y0, nv_ang, nv_len, nv_curv, rng.uniform(0.6, 1.2, k), steps // 2)
    vx_n, vy_n = to_image(img_nv, nxc, nyc)
    vessels = BlurredPoints(
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
    ma = BlurredPoints(i_ma, x_ma, y_ma, rng.uniform(1.0, 1.8, len(i_ma)))
    i_h, x_h, y_h = scatter(n_hem)
    hem = BlurredPoints(i_h, x_h, y_h, rng.uniform(5.0, 12.0, len(i_h)))
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
    ex = BlurredPoints(i_e, ex_x, ex_y, rng.uniform(0.8, 1.6, len(i_e)))
    i_w, x_w, y_w = scatter(n_cw, 0.5)
    cw = BlurredPoints(i_w, x_w, y_w, rng.uniform(6.0, 12.0, len(i_w)))

    gx, gy = pixel_grid(size)
    gxx, gyy = np.broadcast_arrays(gx, gy)  # full [1, S, S] grids
    out = np.empty((n, size, size, 3), dtype=np.uint8)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        s = slice(lo, hi)
        dxf, dyf = gx - per_image(fov_c[s, 0]), gy - per_image(fov_c[s, 1])
        d = np.sqrt(dxf * dxf + dyf * dyf) / per_image(fov[s])
        rgb = base[s, None, None, :].astype(np.float32) * (1 - 0.45 * d * d)[..., None]
        rgb = rgb * (1 + 0.05 * nui * f_chor(s, gxx, gyy))[..., None]
        dm = ((gx - per_image(mac_x[s])) ** 2 + (gy - per_image(mac_y[s])) ** 2) / 0.16**2
        rgb = rgb * (1 - 0.35 * np.exp(-dm))[..., None]
        dd = np.sqrt((gx - per_image(disc_x[s])) ** 2 + (gy - per_image(disc_y[s])) ** 2) / per_image(disc_r[s])
        disc = np.exp(-(dd**4))[..., None]
        cup = np.exp(-((dd / 0.5) ** 2))[..., None]
        disc_col = np.array([1.0, 0.86, 0.58], dtype=np.float32) * per_image(0.75 + 0.25 * bright[s])[..., None]
        rgb = rgb * (1 - disc) + disc_col * disc
        rgb = rgb + 0.12 * cup
        vess = (1 - np.exp(-1.6 * vessels.render(lo, hi, size, 0.55)))[..., None]
        rgb = rgb * (1 - vess * np.array([0.35, 0.65, 0.55], dtype=np.float32))
        red = 1 - np.exp(-(ma.render(lo, hi, size, 0.5) + hem.render(lo, hi, size, 1.3)))
        rgb = rgb * (1 - red[..., None] * np.array([0.55, 0.80, 0.70], dtype=np.float32))
        yel = np.clip(ex.render(lo, hi, size, 0.5), 0, 1)[..., None]
        yellow = np.array([0.98, 0.86, 0.35], dtype=np.float32)
        rgb = rgb * (1 - yel) + yellow * per_image(bright[s] ** 0.5)[..., None] * yel
        wool = np.clip(cw.render(lo, hi, size, 1.4) * 0.8, 0, 0.85)[..., None]
        rgb = rgb * (1 - wool) + np.array([0.92, 0.88, 0.78], dtype=np.float32) * wool
        # camera: flash glare near the centre, colour balance, contrast, gamma, circular field
        rgb = rgb + site["flash"] * np.exp(-(dxf**2 + dyf**2) / 0.2)[..., None]
        rgb = rgb * np.asarray(site["gains"], dtype=np.float32)
        rgb = tone_curve(rgb, site["contrast"], 0.25, site["gamma"])
        rgb = rgb * sigmoid((1 - d) * per_image(fov[s]) * size / 2.0)[..., None]
        out[s] = camera_finish(rgb.astype(np.float32), rng, size, blur_px64=site["blur"], noise=site["noise"] * nui)
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
    f_con = FourierField(rng, n, 7, (6.0, 14.0))
    f_lung = FourierField(rng, n, 8, (6.0, 16.0))
    rib_phase = rng.uniform(0, 1, n)
    rib_space = rng.uniform(0.15, 0.18, n)
    noise_sd = site["noise"] * nui * rng.uniform(0.8, 1.2, n)

    gx, gy = pixel_grid(size)
    out = np.empty((n, size, size), dtype=np.uint8)
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        s = slice(lo, hi)
        c, sn = per_image(np.cos(rot[s])), per_image(np.sin(rot[s]))
        x0, y0 = gx - per_image(shift[s, 0]), gy - per_image(shift[s, 1])
        X = (c * x0 + sn * y0) / per_image(scale[s])
        Y = (-sn * x0 + c * y0) / per_image(scale[s])
        ax = np.abs(X)
        # body outline: torso with shoulders and neck
        half = 0.17 + 0.70 * sigmoid((Y + 0.78) * 9)  # neck -> sloping shoulders -> chest wall
        body = sigmoid((half - ax) * size / 3)
        img = 0.06 + body * per_image(soft[s]) * (0.85 + 0.2 * (1 - np.clip(ax / 0.9, 0, 1) ** 2))
        # lungs: per side, rounded apex, lateral wall, domed diaphragm
        w = per_image(lung_w[s])
        dia_s = per_image(dia[s])
        lung_cx = 0.40
        u = (ax - lung_cx) / w  # -1 medial, +1 lateral
        apex = -0.72
        vert = np.clip((Y - apex) / 0.35, 0, 1)
        width = np.sqrt(vert)  # rounded apex
        dome = dia_s - 0.13 * np.clip(1 - u * u, 0, 1) + 0.03 * (X > 0)  # left hemidiaphragm sits lower
        lung = (
            sigmoid((width - np.abs(u)) * w * size / 2.5)
            * sigmoid((dome - Y) * size / 2.0)
            * sigmoid((Y - apex) * size / 2)
        )
        # effusion: fluid rising from the base with a lateral meniscus (blunts the angle)
        vol = per_image(eff_vol[s])
        es = per_image(eff_side[s])
        on_side = np.where(es == 2, 1.0, np.where((X < 0) == (es == 0), 1.0, 0.0))
        amount = per_image(blunt[s]) + vol * on_side
        level = dia_s - 0.02 - 0.5 * amount - 0.15 * amount * np.clip(u, 0, 1)  # meniscus: higher laterally
        fluid = sigmoid((Y - level) * size / 3.0) * np.clip(u + 0.3 + 2 * amount, 0, 1)
        air = lung * (1 - 0.9 * fluid)
        # heart: a blunt ellipse, sitting left of the patient (image right), on the diaphragm
        hw = per_image(heart_w[s])
        hx = 0.05 + 0.35 * (hw - 0.28)
        hy = dia_s - 0.12
        heart = sigmoid(
            (1 - np.sqrt(((X - hx) / hw) ** 2 + ((Y - hy) / 0.27) ** 2)) * per_image(heart_w[s]) * size / 2.0)
        media = sigmoid((0.11 - ax) * size / 2.5) * sigmoid((hy - Y) * size / 4)
        air = air * (1 - np.maximum(heart, media))
        # lungs are dark: air removes most of the soft-tissue attenuation
        markings = 0.05 * f_lung(s, X, Y) + 0.12 * np.exp(-(((ax - 0.17) / 0.08) ** 2 + ((Y + 0.05) / 0.18) ** 2))
        img = img - air * (0.40 - markings) * per_image(soft[s]) / 0.5
        # consolidation: patchy opacity inside a lung
        blob = np.exp(-(((X - per_image(con_x[s])) ** 2 + (Y - per_image(con_y[s])) ** 2) / per_image(con_r[s]) ** 2))
        patch = sigmoid(3.0 * (f_con(s, X, Y) + 2.2 * blob - 1.3)) * blob
        img = img + lung * per_image(con_amp[s]) * 0.28 * patch
        # bones: spine, posterior ribs, clavicles
        spine = sigmoid((0.06 - ax) * size / 2) * (0.08 + 0.03 * np.cos(2 * np.pi * Y / 0.09))
        ribc = (Y + 0.95 - 0.25 * ax - 0.45 * X * X) / per_image(rib_space[s]) + per_image(rib_phase[s])
        ribs = ((0.5 + 0.5 * np.cos(2 * np.pi * ribc)) ** 6) * sigmoid((0.9 - ax) * 8) * sigmoid((ax - 0.06) * 30)
        ribs = ribs * (Y < dia_s + 0.05)
        clav = np.exp(-(((Y + 0.64 - 0.18 * ax) / 0.03) ** 2)) * sigmoid((0.55 - ax) * 20) * sigmoid((ax - 0.06) * 30)
        img = img + body * (spine + 0.11 * ribs * (0.35 + 0.65 * lung) + 0.16 * clav)
        img = img + 0.08 * np.maximum(heart, media) + 0.05 * sigmoid((Y - dome) * size / 2.0) * body
        trachea = sigmoid((0.035 - ax) * size / 2) * sigmoid((-0.25 - Y) * size / 4)
        img = img - 0.12 * trachea
        # gastric bubble under the left hemidiaphragm (image right)
        gb = np.exp(-(((X - 0.35) / 0.1) ** 2 + ((Y - dia_s - 0.12) / 0.06) ** 2)) * per_image(bubble[s])
        img = img - 0.22 * gb
        # detector: exposure and site response
        img = np.clip(img * per_image(exposure[s]) * site["gain"] + site["offset"], 0, 1) ** site["gamma"]
        img = img[..., None].astype(np.float32)
        out[s] = camera_finish(img, rng, size, blur_px64=site["blur"], sharpen=site["sharpen"],
                               noise=noise_sd[s])[..., 0]
    return out
