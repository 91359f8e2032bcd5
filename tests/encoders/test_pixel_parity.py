"""Pixel parity: every catalogue entry's input tensor against the reference library's own preprocessing.

For each of the zoo's entries, the project's input is what the engine and the encoder make of a decoded
image: `spec.pixels().apply(image)` (one float resize from the original by the card's rule), then
`TorchEncoderBase.preprocess` (BGR flip where declared, `(x/255 - mean) / std`). The reference is the
library the entry's card names, built offline from parameters:

- timm entries: `resolve_data_config` of `timm.create_model(arch, pretrained=False)` + `create_transform`;
- open_clip entries: `open_clip.transform.image_transform` with open_clip's own defaults for the model
  (BiomedCLIP: the card's values, since its open_clip_config.json cannot be read offline);
- transformers entries: the PIL ("slow") image processor (`*ImageProcessorPil`) with the card's values;
  the torchvision ("fast", transformers' default) processor is measured too;
- MedSigLIP: the authors' evaluation resize (whole image to 448, bilinear, no antialias, as TensorFlow's
  `tf.image.resize`), i.e. `F.interpolate(mode="bilinear", antialias=False, align_corners=False)` on the
  float image; its distance from the hub processor (bicubic, antialiased) is only measured;
- local entries: torchvision transforms built from the authors' own code (PanDerm, RETFound, CheXzero) or
  description (RadImageNet). CheXzero's two resizes (PIL LANCZOS to 320 + pad, then bicubic to 224) differ
  from the project's single pad-resize to 224 by construction: that difference is measured and held to a
  stated loose bound only.

Images: a PH2 dermoscopy JPEG (non-square, e.g. 384 x 287), a 128 x 128 chest X-ray from the multi-source
set, and a non-square crop of that X-ray (rows 0:128, columns 10:110, so 128 x 100). The X-rays are grey;
they are made RGB by repeating the channel, as the datasets do for grey images.

Tolerances are in grey levels k and checked per channel in normalised units, |diff| <= k / 255 / std.
The references resize uint8 PIL images (rounded to whole grey levels, and PIL rounds again between its
horizontal and vertical passes) while the project resizes float pixels once, so up to about 0.5-1 level is
rounding alone; bicubic adds PIL's clamping of the intermediate pass where the kernel overshoots.

Run `python tests/encoders/test_pixel_parity.py` (or pytest with `-s`) for the table of measured figures.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # conftest, when run as a script
from _shared_data import SHARED_DATA  # noqa: E402

from crsbench.encoders.spec import EncoderSpec  # noqa: E402
from crsbench.encoders.torch_base import TorchEncoderBase  # noqa: E402
from crsbench.encoders.zoo import SPECS  # noqa: E402

PH2_DIR = SHARED_DATA / "ph2" / "images"
CXR_FILE = SHARED_DATA / "cxr_multisource" / "cxr_multisource_128.npz"
CXR_CROP = (slice(0, 128), slice(10, 110))  # a non-square (128 x 100) piece of a square X-ray

# --- tolerances, in grey levels (x 1/255/std in normalised units) -----------------------------------
# Library references resize uint8: <= 0.5 level of rounding after the resize, plus PIL's own rounding between
# its horizontal and vertical passes (measured mean 0.27-0.35 levels); for bicubic, PIL also clamps that
# intermediate pass to 0-255 where the kernel overshoots at sharp edges, which the project (float, one clamp
# at the end) does not: up to about 3.3 levels measured, at PH2's dark vignette corners.
TOL_LIBRARY = {"bilinear": (1.5, 0.4), "bicubic": (4.0, 0.4)}  # (max, mean) grey levels
# transformers' torchvision backend resizes uint8 tensors with torch's antialiased kernels: the same bounds
TOL_FAST = TOL_LIBRARY
# MedSigLIP: the same float computation as the project's; only float arithmetic may differ
TOL_EXACT = (0.01, 0.001)
# CheXzero's two resizes against one: LANCZOS to 320 then bicubic to 224 is not bicubic to 224, and on a
# non-square image the pad edge lands half a pixel apart (one full-contrast column): the mean is bounded,
# the max is not (255). On a square image (no pad edge) `test_chexzero_difference_is_a_filter_difference`
# bounds the max too.
TOL_CHEXZERO = (255.0, 4.0)
TOL_CHEXZERO_SQUARE = (20.0, 1.0)

# --- the authors' own preprocessing, as their code describes it --------------------------------------
PANDERM = dict(rule="shorter-side", resize=256, crop=224, interpolation="bilinear", antialias=True,
               mean=(0.485, 0.456, 0.406), std=(0.228, 0.224, 0.225), channel_order="RGB")
# RETFound util/datasets.py build_transform, eval: input_size 224 -> crop_pct 224/256, Resize(int(224 /
# crop_pct), BICUBIC), CenterCrop(224), Normalize(IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD)
RETFOUND_INPUT_SIZE = 224
# CheXzero data_process.preprocess + zero_shot.make: longer side to 320 (PIL ANTIALIAS = LANCZOS), pasted on
# a black 'L' 320 x 320 canvas, Normalize(101.48761, 83.43944) on 0-255 pixels, then Resize(224, BICUBIC)
CHEXZERO = dict(desired=320, input=224, mean=101.48761, std=83.43944)
# MedSigLIP evaluation notebook: tf.image.resize(image, [448, 448]) (bilinear, no antialias), then [-1, 1]
MEDSIGLIP = dict(rule="squash", resize=448, crop=None, interpolation="bilinear", antialias=False,
                 mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), channel_order="RGB")
# RadImageNet's PyTorch notebook (acl/acl_pytorch_train.ipynb): cv2.imread (BGR), (x - 127.5) * 2 / 255, i.e.
# [-1, 1], then cv2.resize to 224 x 224 (whole image, bilinear, no antialias)
RADIMAGENET = dict(input=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), channel_order="BGR", rule="squash",
                   interpolation="bilinear", antialias=False)

# --- images ---------------------------------------------------------------------------------------


def data_available() -> bool:
    return PH2_DIR.is_dir() and CXR_FILE.is_file()


@functools.lru_cache(maxsize=1)
def load_images() -> dict[str, np.ndarray]:
    """name -> uint8 [H, W, 3], decoded once and given to the project and the reference alike."""
    from PIL import Image

    ph2 = sorted(PH2_DIR.glob("*.jpg"))[0]
    with Image.open(ph2) as im:
        dermoscopy = np.array(im.convert("RGB"))  # a writable copy
    cxr = np.load(CXR_FILE)["images"][0]
    rgb = lambda grey: np.ascontiguousarray(np.repeat(grey[..., None], 3, axis=-1))  # noqa: E731
    return {
        f"ph2 {ph2.stem} {dermoscopy.shape[1]}x{dermoscopy.shape[0]}": dermoscopy,
        "cxr 128x128": rgb(cxr),
        "cxr crop 100x128": rgb(cxr[CXR_CROP]),
    }


def grey_only(images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: im for name, im in images.items() if name.startswith("cxr")}


# --- the project's input ---------------------------------------------------------------------------


class _Preprocessor(TorchEncoderBase):
    """Only `preprocess` is used: no model is ever built."""


def project_input(spec: EncoderSpec, image: np.ndarray):
    """What the encoder receives: the engine's one float resize, then the encoder's normalisation."""
    encoder = _Preprocessor(spec, device="cpu", precision="fp32")
    return encoder.preprocess(spec.pixels().apply(image)[None])


# --- references ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    label: str  # the library and how it was built
    transform: Callable  # uint8 [H, W, 3] -> float tensor [3, S, S] (or [1, 3, S, S]), normalised
    std: tuple[float, float, float]  # the reference's std, which defines its normalised units
    tolerance: tuple[float, float] | None  # (max, mean) grey levels; None: measured, not asserted
    grey_only: bool = False  # defined on grey images only (CheXzero pastes on an 'L' canvas)


def _pil(image: np.ndarray):
    from PIL import Image

    return Image.fromarray(image)


@functools.lru_cache(maxsize=None)
def timm_data_config(arch: str) -> dict:
    import timm
    from timm.data import resolve_data_config

    return resolve_data_config({}, model=timm.create_model(arch, pretrained=False))


def timm_reference(spec: EncoderSpec) -> list[Reference]:
    from timm.data import create_transform

    config = timm_data_config(spec.adapter.arch)
    transform = create_transform(**config)
    return [Reference("timm create_transform", lambda im: transform(_pil(im)), tuple(config["std"]),
                      TOL_LIBRARY[config["interpolation"]])]


def open_clip_cfg(spec: EncoderSpec) -> dict:
    """open_clip's own preprocessing for the entry: the built-in pretrained tag whose hub repo is the entry's;
    for a hub-config model (BiomedCLIP) the card's values, the repository's config being offline."""
    import open_clip
    from open_clip.constants import OPENAI_DATASET_MEAN, OPENAI_DATASET_STD

    if spec.adapter.model is None:
        # BiomedCLIP card: open_clip_config.json preprocess_cfg names OpenAI mean/std; interpolation and
        # resize mode are open_clip's defaults (None); the image size is the one in the repository name.
        size = int(re.search(r"_(\d+)$", spec.identifier).group(1))
        return dict(size=size, mean=OPENAI_DATASET_MEAN, std=OPENAI_DATASET_STD, interpolation=None,
                    resize_mode=None, source="card values (open_clip_config.json not readable offline)")
    model = spec.adapter.model
    tags = [tag for tag in open_clip.list_pretrained_tags_by_model(model)
            if open_clip.get_pretrained_cfg(model, tag).get("hf_hub", "").strip("/") == spec.hub_repo]
    assert len(tags) == 1, f"{spec.name}: no single open_clip pretrained tag of {model} is hosted at {spec.hub_repo}"
    cfg = open_clip.get_pretrained_cfg(model, tags[0])
    size = open_clip.get_model_config(model)["vision_cfg"]["image_size"]
    return dict(size=size, mean=cfg["mean"], std=cfg["std"], interpolation=cfg.get("interpolation"),
                resize_mode=cfg.get("resize_mode"), source=f"open_clip {model}/{tags[0]}")


def open_clip_reference(spec: EncoderSpec) -> list[Reference]:
    from open_clip.transform import image_transform

    cfg = open_clip_cfg(spec)
    transform = image_transform(cfg["size"], is_train=False, mean=cfg["mean"], std=cfg["std"],
                                interpolation=cfg["interpolation"], resize_mode=cfg["resize_mode"])
    interpolation = cfg["interpolation"] or "bicubic"  # open_clip's default
    return [Reference(f"open_clip image_transform ({cfg['source']})", lambda im: transform(_pil(im)),
                      tuple(cfg["std"]), TOL_LIBRARY[interpolation])]


def _processor_classes(kind: str):
    import transformers

    name = {"dinov2": "BitImageProcessor", "siglip": "SiglipImageProcessor", "clip": "CLIPImageProcessor",
            "gemma3-vision": "Gemma3ImageProcessor"}[kind]
    # transformers 5: `<Model>ImageProcessor` is the torchvision backend, `<Model>ImageProcessorPil` the PIL one
    return getattr(transformers, name + "Pil"), getattr(transformers, name)


def processor_rule(cls) -> str:
    """The resize the processor class itself does: shortest edge (then its centre crop), or the whole image."""
    return "shorter-side" if "shortest_edge" in dict(cls.size) else "squash"


def _resample(interpolation: str):
    from transformers.image_utils import PILImageResampling

    return {"bilinear": PILImageResampling.BILINEAR, "bicubic": PILImageResampling.BICUBIC}[interpolation]


def build_processor(cls, spec: EncoderSpec, interpolation: str | None = None):
    """The processor with the card's values (read from the entry; the hub config is not read offline)."""
    kwargs = dict(resample=_resample(interpolation or spec.interpolation), image_mean=list(spec.mean),
                  image_std=list(spec.std), do_rescale=True, rescale_factor=1 / 255, do_normalize=True)
    if processor_rule(cls) == "shorter-side":
        crop = spec.crop or spec.resize
        kwargs.update(size={"shortest_edge": spec.resize}, do_center_crop=True,
                      crop_size={"height": crop, "width": crop})
    else:
        kwargs.update(size={"height": spec.resize, "width": spec.resize})
    if "Gemma3" in cls.__name__:
        kwargs.update(do_pan_and_scan=False)
    return cls(**kwargs)


def _run_processor(processor):
    return lambda im: processor(images=_pil(im), return_tensors="pt")["pixel_values"]


def transformers_reference(spec: EncoderSpec) -> list[Reference]:
    slow, fast = _processor_classes(spec.adapter.kind)
    tol = TOL_LIBRARY[spec.interpolation]
    return [
        Reference(f"transformers {slow.__name__}", _run_processor(build_processor(slow, spec)), spec.std, tol),
        Reference(f"transformers {fast.__name__} (torchvision)", _run_processor(build_processor(fast, spec)),
                  spec.std, TOL_FAST[spec.interpolation]),
    ]


def medsiglip_reference(spec: EncoderSpec) -> list[Reference]:
    import torch
    import torch.nn.functional as F

    a = MEDSIGLIP

    def authors(im):
        x = torch.from_numpy(im).permute(2, 0, 1)[None].float()
        x = F.interpolate(x, size=(a["resize"], a["resize"]), mode=a["interpolation"], antialias=a["antialias"],
                          align_corners=False)
        mean, std = (torch.tensor(v).view(1, 3, 1, 1) for v in (a["mean"], a["std"]))
        return (x / 255 - mean) / std

    slow, fast = _processor_classes(spec.adapter.kind)
    hub = spec.replace(interpolation="bicubic", antialias=True)  # the hub processor's filter
    return [
        Reference("authors' notebook: F.interpolate bilinear, no antialias (= tf.image.resize)", authors,
                  a["std"], TOL_EXACT),
        Reference(f"hub processor {slow.__name__} bicubic (measured only)", _run_processor(build_processor(slow, hub)),
                  a["std"], None),
    ]


def _torchvision_resize(rule: str, resize: int, crop: int | None, interpolation: str):
    from torchvision import transforms as T

    mode = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC}[interpolation]
    if rule == "shorter-side":
        return [T.Resize(resize, interpolation=mode), T.CenterCrop(crop or resize)]
    if rule == "squash":
        return [T.Resize((resize, resize), interpolation=mode)] + ([T.CenterCrop(crop)] if crop else [])
    raise AssertionError(f"no torchvision reference for rule {rule!r}")


def _torchvision_reference(label, steps, mean, std, tolerance, flip_bgr=False) -> Reference:
    from torchvision import transforms as T

    transform = T.Compose([*steps, T.ToTensor(), T.Normalize(mean, std)])

    def run(im):
        return transform(_pil(im[..., ::-1].copy() if flip_bgr else im))

    return Reference(label, run, tuple(std), tolerance)


def panderm_reference(spec: EncoderSpec) -> list[Reference]:
    a = PANDERM
    steps = _torchvision_resize(a["rule"], a["resize"], a["crop"], a["interpolation"])
    return [_torchvision_reference("authors: torchvision Resize(256) bilinear, CenterCrop(224), Normalize",
                                   steps, a["mean"], a["std"], TOL_LIBRARY[a["interpolation"]])]


def retfound_eval_transform() -> dict:
    from timm.data.constants import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

    crop_pct = 224 / 256 if RETFOUND_INPUT_SIZE <= 224 else 1.0
    return dict(rule="shorter-side", resize=int(RETFOUND_INPUT_SIZE / crop_pct), crop=RETFOUND_INPUT_SIZE,
                interpolation="bicubic", antialias=True, mean=tuple(IMAGENET_DEFAULT_MEAN),
                std=tuple(IMAGENET_DEFAULT_STD), channel_order="RGB")


def retfound_reference(spec: EncoderSpec) -> list[Reference]:
    # built from the entry, as the brief's RETFound eval transform is; its values are checked separately
    steps = _torchvision_resize(spec.pixel_rule, spec.resize, spec.crop, spec.interpolation)
    return [_torchvision_reference("RETFound eval: torchvision Resize, CenterCrop, Normalize (entry's values)",
                                   steps, spec.mean, spec.std, TOL_LIBRARY[spec.interpolation])]


def radimagenet_reference(spec: EncoderSpec) -> list[Reference]:
    """The authors' notebook: BGR, [-1, 1], the whole image to 224 x 224 by cv2.resize (INTER_LINEAR), which on
    float pixels is bilinear at half-pixel centres without antialiasing: the same float computation as ours."""
    import torch
    import torch.nn.functional as F

    a = RADIMAGENET

    def notebook(im):
        x = (torch.from_numpy(im[..., ::-1].copy()).permute(2, 0, 1)[None].double() - 127.5) * 2 / 255
        size = (a["input"], a["input"])
        return F.interpolate(x, size=size, mode="bilinear", antialias=False, align_corners=False).float()

    return [Reference("authors' notebook: BGR, [-1, 1], cv2.resize 224x224 bilinear, no antialias", notebook,
                      a["std"], TOL_EXACT)]


def chexzero_pipeline(antialias: bool = True):
    """CheXzero's two steps. The second is a tensor resize: torchvision >= 0.17 antialiases it by default;
    the torchvision of the paper's time did not (`antialias=False`)."""
    import torch
    from PIL import Image
    from torchvision import transforms as T

    a = CHEXZERO
    lanczos = getattr(Image, "ANTIALIAS", Image.LANCZOS)  # ANTIALIAS was removed in Pillow 10: the same filter
    second = T.Compose([T.Normalize((a["mean"],) * 3, (a["std"],) * 3),
                        T.Resize(a["input"], interpolation=T.InterpolationMode.BICUBIC, antialias=antialias)])

    def run(im):
        img = _pil(im)
        ratio = float(a["desired"]) / max(img.size)
        new_size = tuple(int(x * ratio) for x in img.size)
        img = img.resize(new_size, lanczos)
        canvas = Image.new("L", (a["desired"], a["desired"]))
        canvas.paste(img, ((a["desired"] - new_size[0]) // 2, (a["desired"] - new_size[1]) // 2))
        x = torch.from_numpy(np.asarray(canvas, dtype=np.float32))[None].repeat(3, 1, 1)  # the h5 holds float
        return second(x)

    return run


def chexzero_reference(spec: EncoderSpec) -> list[Reference]:
    std = (CHEXZERO["std"] / 255,) * 3
    return [
        Reference("authors: PIL LANCZOS to 320 + pad, then Resize(224) bicubic (antialiased)", chexzero_pipeline(True),
                  std, TOL_CHEXZERO, grey_only=True),
        Reference("authors, second resize without antialias (torchvision < 0.17; measured only)",
                  chexzero_pipeline(False), std, None, grey_only=True),
    ]


LOCAL_REFERENCES = {"panderm": panderm_reference, "radimagenet": radimagenet_reference,
                    "retfound": retfound_reference, "chexzero": chexzero_reference}


def local_kind(spec: EncoderSpec) -> str:
    text = f"{spec.name} {spec.family}".lower().replace("-", "")
    kinds = [kind for kind in LOCAL_REFERENCES if kind in text]
    assert len(kinds) == 1, f"{spec.name}: no reference pipeline written for this local entry"
    return kinds[0]


def is_medsiglip(spec: EncoderSpec) -> bool:
    return "medsiglip" in spec.identifier.lower()


def references(spec: EncoderSpec) -> list[Reference]:
    if spec.source == "timm":
        return timm_reference(spec)
    if spec.source == "open_clip":
        return open_clip_reference(spec)
    if spec.source == "transformers":
        return medsiglip_reference(spec) if is_medsiglip(spec) else transformers_reference(spec)
    if spec.source == "local":
        return LOCAL_REFERENCES[local_kind(spec)](spec)
    raise AssertionError(f"{spec.name}: no reference for source {spec.source!r}")


# --- comparison ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    max_norm: float  # max |project - reference| in normalised units
    mean_norm: float
    max_levels: float  # the same in grey levels (normalised x 255 x the reference's std, per channel)
    mean_levels: float


def compare(project, reference, std) -> Measure:
    import torch

    reference = torch.as_tensor(reference).float()
    if reference.dim() == 3:
        reference = reference[None]
    assert tuple(project.shape) == tuple(reference.shape), f"shapes differ: {tuple(project.shape)} vs " \
                                                           f"{tuple(reference.shape)}"
    diff = (project.float() - reference).abs()
    levels = diff * torch.tensor(std).view(1, 3, 1, 1) * 255
    return Measure(diff.max().item(), diff.mean().item(), levels.max().item(), levels.mean().item())


def measure(spec: EncoderSpec, ref: Reference, image: np.ndarray) -> Measure:
    return compare(project_input(spec, image), ref.transform(image), ref.std)


_MEASURED: dict[tuple, Measure] = {}


def measure_zoo(spec: EncoderSpec, ref: Reference, name: str, image: np.ndarray) -> Measure:
    """`measure` for a catalogue entry, remembered so that the table reuses the parity tests' figures."""
    key = (spec.fingerprint(), spec.name, ref.label, name)
    if key not in _MEASURED:
        _MEASURED[key] = measure(spec, ref, image)
    return _MEASURED[key]


def within(m: Measure, ref: Reference) -> bool:
    # per channel in normalised units: |diff| <= k / 255 / std  <=>  |diff| * 255 * std <= k
    return m.max_levels <= ref.tolerance[0] and m.mean_levels <= ref.tolerance[1]


def crop_offset_note(spec: EncoderSpec, ref: Reference, image: np.ndarray) -> str:
    """Where a transformers processor's centre crop starts elsewhere than torchvision's (the project's)."""
    rule = spec.pixels()
    if not ref.label.startswith("transformers") or rule.rule != "shorter-side":
        return ""
    notes = []
    for axis, n in zip(("top", "left"), rule.resized_shape(*image.shape[:2])):
        ours, theirs = int(round((n - rule.crop) / 2.0)), int((n - rule.crop) / 2.0)
        if ours != theirs:
            notes.append(f"{axis} {theirs} (transformers: int((n - c) / 2)) vs {ours} (project, torchvision: "
                         f"round((n - c) / 2)) for n = {n}, c = {rule.crop}")
    return "; crop offset " + ", ".join(notes) if notes else ""


def images_for(ref: Reference, images: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return grey_only(images) if ref.grey_only else images


# --- tests -----------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """Every reference is built from parameters: nothing may reach a model hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def images():
    if not data_available():
        pytest.skip(f"real data not available: {PH2_DIR} or {CXR_FILE} is absent")
    return load_images()


def test_the_catalogue_has_fifteen_entries_each_with_a_reference():
    assert len(SPECS) == 15 and len({s.name for s in SPECS}) == 15
    for spec in SPECS:
        assert [r for r in references(spec) if r.tolerance is not None], f"{spec.name}: nothing asserted"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_pixel_parity(spec, images):
    failures = []
    for ref in references(spec):
        if ref.tolerance is None:
            continue
        for name, image in images_for(ref, images).items():
            m = measure_zoo(spec, ref, name, image)
            if not within(m, ref):
                failures.append(f"{ref.label} on {name}: max {m.max_levels:.3f} / mean {m.mean_levels:.4f} grey "
                                f"levels (max {m.max_norm:.4f} / mean {m.mean_norm:.5f} normalised), allowed "
                                f"{ref.tolerance[0]} / {ref.tolerance[1]} levels{crop_offset_note(spec, ref, image)}")
    assert not failures, f"{spec.name} ({spec.pixels().describe()}):\n" + "\n".join(failures)


def _values(spec: EncoderSpec) -> dict:
    return dict(rule=spec.pixel_rule, resize=spec.resize, crop=spec.pixels().crop, interpolation=spec.interpolation,
                antialias=spec.antialias, mean=tuple(spec.mean), std=tuple(spec.std), channel_order=spec.channel_order)


def _assert_values(spec: EncoderSpec, expected: dict):
    got = _values(spec)
    wrong = []
    for key, want in expected.items():
        have = got[key]
        same = np.allclose(have, want, rtol=0, atol=1e-6) if key in ("mean", "std") else have == want
        if not same:
            wrong.append(f"{key}: entry {have!r}, reference {want!r}")
    assert not wrong, f"{spec.name} disagrees with its reference: " + "; ".join(wrong)


def expected_values(spec: EncoderSpec) -> dict:
    """The reference's own preprocessing values, independent of the entry wherever the reference has them."""
    if spec.source == "timm":
        c = timm_data_config(spec.adapter.arch)
        assert c["crop_mode"] == "center"
        crop = c["input_size"][-1]
        return dict(rule="shorter-side", resize=math.floor(crop / c["crop_pct"]), crop=crop,
                    interpolation=c["interpolation"], antialias=True, mean=tuple(c["mean"]), std=tuple(c["std"]),
                    channel_order="RGB")
    if spec.source == "open_clip":
        c = open_clip_cfg(spec)
        rule = {"shortest": "shorter-side", "squash": "squash", "longest": "pad"}[c["resize_mode"] or "shortest"]
        return dict(rule=rule, resize=c["size"], crop=c["size"] if rule == "shorter-side" else None,
                    interpolation=c["interpolation"] or "bicubic", antialias=True, mean=tuple(c["mean"]),
                    std=tuple(c["std"]), channel_order="RGB")
    if spec.source == "transformers":
        if is_medsiglip(spec):
            return dict(MEDSIGLIP)
        # offline, only the processor class's own resize rule and PIL's antialiasing are the library's
        return dict(rule=processor_rule(_processor_classes(spec.adapter.kind)[0]), antialias=True,
                    channel_order="RGB")
    kind = local_kind(spec)
    if kind == "panderm":
        return dict(PANDERM)
    if kind == "retfound":
        return retfound_eval_transform()
    if kind == "radimagenet":
        return dict(rule=RADIMAGENET["rule"], resize=RADIMAGENET["input"], interpolation=RADIMAGENET["interpolation"],
                    antialias=RADIMAGENET["antialias"], mean=RADIMAGENET["mean"], std=RADIMAGENET["std"],
                    channel_order=RADIMAGENET["channel_order"])
    return dict(rule="pad", resize=CHEXZERO["input"], interpolation="bicubic", antialias=True,
                mean=(CHEXZERO["mean"] / 255,) * 3, std=(CHEXZERO["std"] / 255,) * 3, channel_order="RGB")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_entry_values_equal_the_reference(spec):
    """Rule, sizes, filter, mean/std and channel order equal the library's or the authors' (pixel parity alone
    would let a 0.228 / 0.229 std slip through within rounding tolerance)."""
    _assert_values(spec, expected_values(spec))
    if spec.source == "local" and local_kind(spec) == "radimagenet":
        assert spec.input_size == RADIMAGENET["input"]


# the negative checks: each change to a timm entry's rule must push it far outside its tolerance
WRONG = {
    "squash instead of shorter-side": dict(pixel_rule="squash", crop=None),
    "shorter side 8 px too large": "resize+8",
    "no antialias": dict(antialias=False),
    "BGR instead of RGB": dict(channel_order="BGR"),
}


def wrong_spec(spec: EncoderSpec, change) -> EncoderSpec:
    if change == "resize+8":
        return spec.replace(resize=spec.resize + 8)
    if change.get("pixel_rule") == "squash":
        return spec.replace(pixel_rule="squash", resize=spec.input_size, crop=None)
    return spec.replace(**change)


@pytest.mark.parametrize("what", list(WRONG))
def test_parity_catches_a_wrong_preprocessing(what, images):
    spec = next(s for s in SPECS if s.source == "timm")
    ref = references(spec)[0]
    ph2 = next(im for name, im in images.items() if name.startswith("ph2"))
    assert ph2.shape[0] != ph2.shape[1], "the negative check needs a non-square image"
    right, wrong = measure(spec, ref, ph2), measure(wrong_spec(spec, WRONG[what]), ref, ph2)
    assert within(right, ref)
    print(f"\n{what}: max {wrong.max_levels:.2f}, mean {wrong.mean_levels:.3f} grey levels (right rule: "
          f"{right.max_levels:.2f}, {right.mean_levels:.3f})")
    assert not within(wrong, ref), f"{what}: max {wrong.max_levels:.2f}, mean {wrong.mean_levels:.3f} levels"
    assert wrong.max_levels > 5 * ref.tolerance[0], f"{what} is caught only narrowly: {wrong}"


def test_chexzero_difference_is_a_filter_difference(images):
    """The single pad-resize against CheXzero's two: small on the square X-ray (no pad edge), larger but
    bounded on the non-square one, where the pad edge falls half a pixel apart."""
    spec = next(s for s in SPECS if s.source == "local" and local_kind(s) == "chexzero")
    ref = chexzero_reference(spec)[0]
    square = measure(spec, ref, images["cxr 128x128"])
    assert square.max_levels <= TOL_CHEXZERO_SQUARE[0] and square.mean_levels <= TOL_CHEXZERO_SQUARE[1], square
    non_square = measure(spec, ref, images["cxr crop 100x128"])
    assert non_square.mean_levels <= TOL_CHEXZERO[1], non_square


def parity_table(images: dict[str, np.ndarray]) -> list[dict]:
    rows = []
    for spec in SPECS:
        rule = spec.pixels()
        for ref in references(spec):
            ms = [measure_zoo(spec, ref, name, im) for name, im in images_for(ref, images).items()]
            rows.append(dict(
                entry=spec.name, reference=ref.label, rule=rule.rule, size=rule.input_size,
                filter=rule.filter + ("" if rule.antialias else " no-aa"),
                max_norm=max(m.max_norm for m in ms), mean_norm=max(m.mean_norm for m in ms),
                max_levels=max(m.max_levels for m in ms), mean_levels=max(m.mean_levels for m in ms),
                tolerance="-" if ref.tolerance is None else f"{ref.tolerance[0]:g}/{ref.tolerance[1]:g}",
                ok="-" if ref.tolerance is None else ("yes" if all(within(m, ref) for m in ms) else "NO"),
            ))
    return rows


def format_table(rows: list[dict]) -> str:
    head = ("entry", "reference", "entry's rule", "size", "filter", "max (norm)", "mean (norm)", "max (levels)",
            "mean (levels)", "tol max/mean (levels)", "ok")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r['entry']} | {r['reference']} | {r['rule']} | {r['size']} | {r['filter']} | "
                     f"{r['max_norm']:.4f} | {r['mean_norm']:.5f} | {r['max_levels']:.3f} | {r['mean_levels']:.4f} | "
                     f"{r['tolerance']} | {r['ok']} |")
    return "\n".join(lines)


def test_print_parity_table(images):
    """The figures (worst over the three images) for docs/pixels.md; printed under `pytest -s`."""
    rows = parity_table(images)
    print("\n" + format_table(rows))
    assert {r["entry"] for r in rows} == {s.name for s in SPECS}


if __name__ == "__main__":
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if not data_available():
        sys.exit(f"real data not available: {PH2_DIR} or {CXR_FILE} is absent")
    print(format_table(parity_table(load_images())))
