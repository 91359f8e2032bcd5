"""Contact sheet: every perturbation of a modality x severity 1-5 on one image, for eyeballing."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from crsbench.perturbations.core import perturb
from crsbench.perturbations.registry import SEVERITIES
from crsbench.perturbations.sets import modality_set

_LABEL_W, _HEADER_H, _GAP = 130, 22, 4


def _display(img: np.ndarray, cell: int) -> Image.Image:
    """Fit into a cell for display only (after perturbing); small images upscaled with NEAREST so
    the true pixels stay visible rather than being smoothed by the viewer's interpolation."""
    pil = Image.fromarray(img)
    scale = cell / max(pil.size)
    size = (max(1, round(pil.width * scale)), max(1, round(pil.height * scale)))
    return pil.resize(size, Image.NEAREST if scale >= 2 else Image.LANCZOS)


def contact_sheet(image: np.ndarray, modality: str, seed: int = 0, cell: int = 160,
                  image_id: str = "contact-sheet") -> Image.Image:
    """Rows: the modality's perturbations; columns: clean, then severity 1..5. Perturbed at native size."""
    if image.dtype != np.uint8 or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[-1] != 3):
        raise ValueError(f"image must be uint8 [H, W, 3] or [H, W], got {image.dtype} {image.shape}")
    rgb = np.repeat(image[..., None], 3, axis=-1) if image.ndim == 2 else image
    specs = modality_set(modality)
    font = ImageFont.load_default()
    cols = 1 + len(SEVERITIES)
    sheet = Image.new("RGB", (_LABEL_W + cols * (cell + _GAP), _HEADER_H + len(specs) * (cell + _GAP)), "white")
    draw = ImageDraw.Draw(sheet)
    for c, title in enumerate(["clean"] + [f"severity {s}" for s in SEVERITIES]):
        draw.text((_LABEL_W + c * (cell + _GAP) + 4, 4), title, fill="black", font=font)
    for r, spec in enumerate(specs):
        top = _HEADER_H + r * (cell + _GAP)
        draw.text((4, top + cell // 2 - 6), spec.name, fill="black", font=font)
        row = [rgb] + [perturb(rgb[None], [image_id], spec.name, s, seed)[0] for s in SEVERITIES]
        for c, img in enumerate(row):
            sheet.paste(_display(img, cell), (_LABEL_W + c * (cell + _GAP), top))
    return sheet
