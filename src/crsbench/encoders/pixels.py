"""From a decoded image to an encoder's input: one float resize, by the encoder's own card.

Every encoder's input is made from the decoded file (or the stored array) in a single resize, so no
smaller copy is ever upsampled and no encoder is resampled twice. Cards disagree on what a non-square
image becomes, and that changes what the encoder sees, so the rule is part of the encoder's spec:

- `shorter-side`: resize the shorter side to `size` keeping the aspect ratio, then centre-crop `crop`
  (timm, open_clip, DINOv2, CLIP processors; torchvision `Resize(size)` + `CenterCrop(crop)`);
- `squash`: resize the whole image to `size` x `size`, aspect ratio not kept (SigLIP, MedSigLIP,
  Gemma 3 processors);
- `pad`: resize the longer side to `size` keeping the aspect ratio and pad the rest black, centred
  (CheXzero's preprocessing).

The result stays float32 on the 0-255 scale: rounding a resized image back to whole grey levels moves a
network's embedding measurably. Filters are torch's, which with `antialias=True` follow PIL's
(bilinear = triangle, bicubic a = -0.5, support widened by the downscale factor); `antialias=False` is
plain interpolation at half-pixel centres (as TensorFlow's `tf.image.resize` without antialiasing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

RULES = ("shorter-side", "squash", "pad")
FILTERS = ("bilinear", "bicubic")
Rule = Literal["shorter-side", "squash", "pad"]


@dataclass(frozen=True)
class PixelRule:
    rule: Rule
    size: int  # shorter side (shorter-side), the square (squash), the longer side (pad)
    crop: int | None = None  # centre crop after the resize; None: none
    filter: str = "bilinear"
    antialias: bool = True
    # where an odd margin leaves the crop: torchvision rounds (n - c) / 2, transformers' processors floor it;
    # one pixel, but a one-pixel shift is what separates the project's input from the library's
    crop_offset: Literal["round", "floor"] = "round"

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown pixel rule {self.rule!r}; known: {', '.join(RULES)}")
        if self.filter not in FILTERS:
            raise ValueError(f"unknown resize filter {self.filter!r}; known: {', '.join(FILTERS)}")
        if self.size <= 0 or (self.crop is not None and not 0 < self.crop <= self.size):
            raise ValueError(f"pixel rule sizes must be positive with crop <= size, got {self.size}, {self.crop}")

    @property
    def input_size(self) -> int:
        """The side of the square the encoder receives."""
        return self.crop or self.size

    def describe(self) -> str:
        """In words, for records, tables and cache keys."""
        crop = f", centre-crop {self.crop}" if self.crop and self.crop != self.size else ""
        floor = " (offsets floored)" if crop and self.crop_offset == "floor" else ""
        aa = "" if self.antialias else ", no antialias"
        return f"{self.rule} {self.size} {self.filter}{aa}{crop}{floor}"

    def resized_shape(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) after the resize, before any crop or pad."""
        if self.rule == "squash":
            return self.size, self.size
        if self.rule == "shorter-side":
            # torchvision's arithmetic: the shorter side becomes `size`, the longer is truncated
            short, long = min(height, width), max(height, width)
            long = max(self.size, int(self.size * long / short))
            return (self.size, long) if height <= width else (long, self.size)
        scale = self.size / max(height, width)  # pad: the longer side becomes `size`
        return max(1, int(height * scale)), max(1, int(width * scale))

    def apply(self, image: np.ndarray) -> np.ndarray:
        """uint8 or float [H, W, 3] on 0-255 -> float32 [S, S, 3] on 0-255, S = input_size."""
        return self.apply_batch(image[None])[0]

    def apply_batch(self, images: np.ndarray) -> np.ndarray:
        """[b, H, W, 3] images of one shape -> float32 [b, S, S, 3]."""
        import torch

        x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).to(torch.float32)
        return self.resize_tensor(x).permute(0, 2, 3, 1).contiguous().numpy()

    def resize_tensor(self, x):
        """float32 [b, 3, H, W] on 0-255, on any torch device -> [b, 3, S, S]: the same operations wherever
        it runs (a GPU resizes the uint8 batches it was sent, see `TorchEncoderBase.encode_resizing`)."""
        import torch.nn.functional as F

        height, width = x.shape[-2:]
        target = self.resized_shape(height, width)
        if target != (height, width):
            # antialiasing is a property of downscaling; torch applies it only where it shrinks
            x = F.interpolate(x, size=target, mode=self.filter, antialias=self.antialias, align_corners=False)
            x = x.clamp_(0, 255)  # bicubic overshoots at edges; every encoder sees one range
        if self.rule == "pad":
            x = _pad_centred(x, self.size)
        if self.crop is not None:
            x = _centre_crop(x, self.crop, self.crop_offset)
        return x


def _centre_crop(x, size: int, offset: str = "round"):
    """torchvision's CenterCrop offsets (`round`) or transformers' `center_crop` (`floor`)."""
    h, w = x.shape[-2:]
    if (h, w) == (size, size):
        return x
    place = (lambda margin: int(round(margin / 2.0))) if offset == "round" else (lambda margin: margin // 2)
    top, left = place(h - size), place(w - size)
    return x[..., top : top + size, left : left + size]


def _pad_centred(x, size: int):
    """Black borders around a resized image, pasted at ((size - w) // 2, (size - h) // 2) as PIL's paste."""
    import torch.nn.functional as F

    h, w = x.shape[-2:]
    top, left = (size - h) // 2, (size - w) // 2
    return F.pad(x, (left, size - w - left, top, size - h - top), value=0.0)


def prepare_batch(images: Sequence[np.ndarray] | np.ndarray, rule: PixelRule) -> np.ndarray:
    """Decoded images (one array [b, H, W, 3] or a list of [H_i, W_i, 3]) -> float32 [b, S, S, 3].

    Images of one shape are resized together; each image's result depends only on itself.
    """
    if isinstance(images, np.ndarray) and images.ndim == 4:
        return rule.apply_batch(images)
    images = list(images)
    size = rule.input_size
    out = np.empty((len(images), size, size, 3), dtype=np.float32)
    for members in group_by_shape(images).values():
        out[members] = rule.apply_batch(np.stack([images[i] for i in members]))
    return out


def group_by_shape(images: Sequence[np.ndarray]) -> dict[tuple, list[int]]:
    """shape -> indices of the images with that shape, in order."""
    groups: dict[tuple, list[int]] = {}
    for i, image in enumerate(images):
        groups.setdefault(tuple(image.shape), []).append(i)
    return groups
