"""Perturbation library: registry and sets, API contract, determinism, size scaling, and monotone
severity on real images (skipped when ../shared/data is absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

from crsbench.perturbations import (
    MODALITIES,
    MODALITY_SETS,
    PERTURBATIONS,
    REFERENCE_SIZE,
    SEVERITIES,
    PerturbationSpec,
    contact_sheet,
    get_perturbation,
    image_seed,
    markdown_table,
    modality_set,
    perturb,
    ssim,
)

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
ALL = sorted(PERTURBATIONS)
# Perturbations that draw random numbers; the rest must ignore the seed entirely.
STOCHASTIC = {"gaussian_noise", "speckle_noise", "shot_noise", "impulse_noise", "motion_blur", "hair"}


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    # On a shared 2-core runner torch's intra-op threads contend and run these small ops 5-10x
    # slower than one thread; results are identical either way.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _batch(n: int = 6, h: int = 30, w: int = 34, seed: int = 0) -> torch.Tensor:
    """Smooth random colour images (the first two grey), uint8 [n, 3, h, w], non-square on purpose."""
    g = torch.Generator().manual_seed(seed)
    low = torch.rand((n, 3, 5, 6), generator=g)
    x = torch.nn.functional.interpolate(low, size=(h, w), mode="bilinear", align_corners=False)
    x[:2] = x[:2, :1].expand(-1, 3, -1, -1)
    return (x.clamp(0, 1) * 255).round().to(torch.uint8)


IDS = [f"img-{i}" for i in range(6)]


# ------------------------------------------------------------------------------- registry and sets


def test_registry_is_declarative_table():
    assert isinstance(PERTURBATIONS, dict)
    for name, spec in PERTURBATIONS.items():
        assert isinstance(spec, PerturbationSpec) and spec.name == name
        assert len(spec.params) == 5 and callable(spec.fn)
        assert spec.description and "\n" not in spec.description
        assert get_perturbation(name) is spec
    with pytest.raises(Exception):
        PERTURBATIONS["jpeg"].params = (1, 2, 3, 4, 5)  # frozen


def test_unknown_names_raise_value_error_listing_known_ones():
    with pytest.raises(ValueError, match="jpeg"):
        get_perturbation("jpg")
    with pytest.raises(ValueError, match="dermoscopy.*generic"):
        modality_set("ultrasound")


def test_modality_sets():
    assert set(MODALITIES) == {"dermoscopy", "fundus", "chest_xray", "generic"}
    for modality in MODALITIES:
        specs = modality_set(modality)
        assert len(specs) >= 8 and len({s.name for s in specs}) == len(specs)
        assert all(s is PERTURBATIONS[s.name] for s in specs)
    assert {"hair", "black_corners"} <= set(MODALITY_SETS["dermoscopy"])
    assert {"gamma_up", "gamma_down"} <= set(MODALITY_SETS["chest_xray"])
    used = {n for names in MODALITY_SETS.values() for n in names}
    assert used == set(PERTURBATIONS)  # every perturbation is in some set


def test_docs_table_in_sync_with_specs():
    doc = (REPO / "docs" / "perturbations.md").read_text()
    assert markdown_table() in doc, "docs/perturbations.md is stale: paste crsbench.perturbations.markdown_table()"


@pytest.mark.parametrize("bad", [0, 6, -1, 2.0, True, "3"])
def test_severity_outside_1_to_5_rejected(bad):
    with pytest.raises(ValueError, match="severity"):
        perturb(_batch(2), IDS[:2], "jpeg", bad)


# ------------------------------------------------------------------------------------ API contract


def test_torch_and_numpy_in_same_type_out_and_agree():
    x = _batch()
    y = perturb(x, IDS, "gaussian_noise", 3)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.uint8 and y.shape == x.shape
    xn = x.permute(0, 2, 3, 1).numpy().copy()
    yn = perturb(xn, IDS, "gaussian_noise", 3)
    assert isinstance(yn, np.ndarray) and yn.dtype == np.uint8 and yn.shape == xn.shape
    np.testing.assert_array_equal(yn, y.permute(0, 2, 3, 1).numpy())
    ro = xn.copy()
    ro.flags.writeable = False  # read-only arrays (np.load mmap) are accepted too
    np.testing.assert_array_equal(perturb(ro, IDS, "gaussian_noise", 3), yn)


def test_input_not_modified_and_empty_batch():
    x = _batch()
    before = x.clone()
    for name in ALL:
        perturb(x, IDS, name, 5)
    assert torch.equal(x, before)
    empty = perturb(x[:0], [], "hair", 2)
    assert empty.shape == (0, 3, 30, 34)


@pytest.mark.parametrize(
    "images, ids, error",
    [
        (torch.zeros(2, 3, 8, 8), ["a", "b"], ValueError),  # float, not uint8
        (torch.zeros(2, 8, 8, 3, dtype=torch.uint8), ["a", "b"], ValueError),  # NHWC tensor
        (np.zeros((2, 3, 8, 8), np.uint8), ["a", "b"], ValueError),  # NCHW numpy
        (torch.zeros(2, 3, 8, 8, dtype=torch.uint8), ["a"], ValueError),  # ids length
        (torch.zeros(2, 3, 8, 8, dtype=torch.uint8), [1, 2], TypeError),  # ids not strings
        ([[0]], ["a"], TypeError),
    ],
)
def test_bad_inputs_rejected(images, ids, error):
    with pytest.raises(error):
        perturb(images, ids, "brightness_up", 1)


# ----------------------------------------------------------------------------------- determinism


def test_image_seed_is_pinned():
    # Pinned: changing the hash silently changes every cached corrupted test set.
    assert image_seed("ph2/IMD002", "jpeg", 3, 0) == image_seed("ph2/IMD002", "jpeg", 3, 0)
    assert image_seed("ph2/IMD002", "jpeg", 3, 0) == 6494346012159739177
    assert len({image_seed("a", "b", s, k) for s in SEVERITIES for k in range(3)}) == 15


@pytest.mark.parametrize("name", ALL)
def test_deterministic_and_batch_invariant(name):
    x = _batch()
    full = perturb(x, IDS, name, 4, seed=7)
    assert torch.equal(full, perturb(x, IDS, name, 4, seed=7))  # two calls
    perm = [3, 0, 5, 1, 4, 2]
    assert torch.equal(perturb(x[perm], [IDS[i] for i in perm], name, 4, seed=7), full[perm])  # order
    pieces = torch.cat([perturb(x[a:b], IDS[a:b], name, 4, seed=7) for a, b in [(0, 1), (1, 4), (4, 6)]])
    assert torch.equal(pieces, full)  # batch size and splitting


@pytest.mark.parametrize("name", ALL)
def test_severities_and_seeds(name):
    x = _batch(h=240, w=256)  # above the reference size, where even pixelate severity 1 acts
    outs = [perturb(x, IDS, name, s) for s in SEVERITIES]
    for a, b in zip(outs, outs[1:]):
        assert not torch.equal(a, b), f"{name}: consecutive severities give the same images"
    other_seed = perturb(x, IDS, name, 3, seed=1)
    if name in STOCHASTIC:
        assert not torch.equal(other_seed, outs[2])
        # The id matters: the same image under another id is corrupted differently.
        same = perturb(x[:1].expand(2, -1, -1, -1), ["a", "b"], name, 3)
        assert not torch.equal(same[0], same[1])
    else:
        assert torch.equal(other_seed, outs[2])


@pytest.mark.parametrize("name", ALL)
def test_grey_images_stay_grey(name):
    y = perturb(_batch(), IDS, name, 5)
    assert torch.equal(y[:2, 0], y[:2, 1]) and torch.equal(y[:2, 1], y[:2, 2])


# -------------------------------------------------------------------------------- size scaling


def _spread(img: torch.Tensor) -> float:
    """Spatial std (px) of a blurred delta image [H, W]."""
    h, w = img.shape
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
    p = img.to(torch.float64) / img.sum()
    my, mx = (p * yy).sum(), (p * xx).sum()
    return float(torch.sqrt((p * ((yy - my) ** 2 + (xx - mx) ** 2)).sum()))


@pytest.mark.parametrize("name", ["gaussian_blur", "defocus_blur", "motion_blur"])
def test_blur_scales_with_image_size(name):
    spec = get_perturbation(name)
    spreads = {}
    for size in (112, 448):
        delta = torch.zeros(1, 3, size, size)
        delta[..., size // 2, size // 2] = 1.0
        rngs = [torch.Generator().manual_seed(1)]
        spreads[size] = _spread(spec.fn(delta, spec.params[2], rngs)[0, 0])
    # Same fraction of the field of view at both sizes (4x the pixels -> 4x the blur).
    assert spreads[448] / spreads[112] == pytest.approx(4.0, rel=0.06)


def test_pixelate_keeps_effective_resolution_across_sizes():
    spec = get_perturbation("pixelate")
    for size in (112, 448):
        ramp = torch.linspace(0, 1, size).expand(1, 3, size, size).contiguous()
        cols = spec.fn(ramp, spec.params[4], [])[0, 0, 0]
        assert len(torch.unique(cols)) == round(REFERENCE_SIZE / spec.params[4])


# ------------------------------------------------------------------------------------------ SSIM


def _ssim_reference(a: np.ndarray, b: np.ndarray) -> float:
    """Independent SSIM (scipy filters, scikit-image's gaussian_weights=True recipe) for one grey pair."""
    from scipy.ndimage import gaussian_filter

    a, b = a.astype(np.float64), b.astype(np.float64)
    f = lambda z: gaussian_filter(z, sigma=1.5, truncate=3.5)  # noqa: E731  (11 px window)
    n = 121 / 120
    ma, mb = f(a), f(b)
    va, vb, vab = n * (f(a * a) - ma * ma), n * (f(b * b) - mb * mb), n * (f(a * b) - ma * mb)
    s = ((2 * ma * mb + 1e-4) * (2 * vab + 9e-4)) / ((ma**2 + mb**2 + 1e-4) * (va + vb + 9e-4))
    return float(s[5:-5, 5:-5].mean())


def test_ssim_matches_reference_implementation():
    g = torch.Generator().manual_seed(3)
    a = torch.rand((1, 1, 40, 36), generator=g)
    b = (a + 0.1 * torch.randn((1, 1, 40, 36), generator=g)).clamp(0, 1)
    assert float(ssim(a, a)[0]) == pytest.approx(1.0, abs=1e-5)
    assert float(ssim(a, b)[0]) == pytest.approx(_ssim_reference(a[0, 0].numpy(), b[0, 0].numpy()), abs=1e-4)


# ------------------------------------------------------------------------- monotone on real images

# Smallest required fall of mean SSIM between consecutive severities (the observed minimum is
# about 0.0045: defocus on PH2, where any blur first removes the skin texture).
MIN_GAP = 0.002


def _grey3(a: np.ndarray) -> np.ndarray:
    return np.repeat(a[..., None], 3, axis=-1)


def _load_real(name: str) -> np.ndarray:
    """uint8 [n, H, W, 3]; skips the test when the shared data is not there."""
    if not DATA.is_dir():
        pytest.skip(f"real images not available: {DATA} is absent (see the project README)")
    if name == "ph2":
        paths = sorted((DATA / "ph2" / "images").glob("*.jpg"))[:8]
        if not paths:
            pytest.skip(f"no PH2 images in {DATA / 'ph2' / 'images'}")
        # 192 px centre crop keeps the test fast; params are size-relative anyway.
        return np.stack([np.asarray(ImageOps.fit(Image.open(p).convert("RGB"), (192, 192))) for p in paths])
    files = {
        "retinamnist": ("medmnist/retinamnist.npz", "test_images", 32),
        "pneumoniamnist": ("medmnist/pneumoniamnist.npz", "test_images", 32),
        "cxr_multisource": ("cxr_multisource/cxr_multisource_128.npz", "images", 16),
    }
    rel, key, n = files[name]
    if not (DATA / rel).is_file():
        pytest.skip(f"real images not available: {DATA / rel} is absent")
    images = np.load(DATA / rel)[key][:n]
    return _grey3(images) if images.ndim == 3 else images


# the large images (192 and 128 px) run with the slow tests; the 28 px ones stay in the fast loop
CASES = [
    pytest.param("dermoscopy", "ph2", marks=pytest.mark.slow),
    ("fundus", "retinamnist"),
    ("chest_xray", "pneumoniamnist"),
    pytest.param("chest_xray", "cxr_multisource", marks=pytest.mark.slow),
    pytest.param("generic", "ph2", marks=pytest.mark.slow),  # generic must work on large and on 28 px images
    ("generic", "retinamnist"),
    ("generic", "pneumoniamnist"),
]


@pytest.mark.parametrize("modality, dataset", CASES)
def test_mean_ssim_falls_strictly_with_severity(modality, dataset):
    clean = torch.from_numpy(_load_real(dataset)).permute(0, 3, 1, 2)
    ids = [f"{dataset}/{i}" for i in range(len(clean))]
    failures = []
    for spec in modality_set(modality):
        row = [float(ssim(clean, perturb(clean, ids, spec.name, s)).mean()) for s in SEVERITIES]
        gaps = [a - b for a, b in zip(row, row[1:])]
        if row[0] > 0.9995 or min(gaps) < MIN_GAP:  # severity 1 must already do something
            failures.append(f"{spec.name}: {', '.join(f'{v:.4f}' for v in row)}")
    assert not failures, f"{modality} on {dataset}: mean SSIM not strictly falling by >= {MIN_GAP}:\n" + "\n".join(failures)


# -------------------------------------------------------------------------------- contact sheet


@pytest.mark.parametrize("shape", [(20, 24, 3), (20, 24)])
def test_contact_sheet_layout(shape):
    image = (np.arange(np.prod(shape)) % 251).astype(np.uint8).reshape(shape)
    sheet = contact_sheet(image, "chest_xray", cell=40)
    assert isinstance(sheet, Image.Image) and sheet.mode == "RGB"
    n_rows = len(modality_set("chest_xray"))
    assert sheet.size[0] > 6 * 40 and sheet.size[1] > n_rows * 40
    with pytest.raises(ValueError):
        contact_sheet(image, "ultrasound")
