"""`perturb`: apply one perturbation at one severity to a batch, seeded per image."""

from __future__ import annotations

import hashlib
from typing import Sequence, TypeVar

import numpy as np
import torch

from crsbench.perturbations.registry import get_perturbation

Images = TypeVar("Images", torch.Tensor, np.ndarray)


def image_seed(image_id: str, name: str, severity: int, seed: int) -> int:
    """A 63-bit seed from (image id, perturbation, severity, seed) via SHA-256.

    hashlib, not hash(): Python's string hash is salted per process, so it would change the
    corrupted images between runs and machines.
    """
    key = "\x1f".join((image_id, name, str(int(severity)), str(int(seed))))
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") & (2**63 - 1)


def _as_nchw(images: torch.Tensor | np.ndarray) -> torch.Tensor:
    if isinstance(images, np.ndarray):
        if images.dtype != np.uint8 or images.ndim != 4 or images.shape[-1] != 3:
            raise ValueError(f"numpy images must be uint8 [b, H, W, 3], got {images.dtype} {images.shape}")
        # A copy when read-only (e.g. np.load mmap / PIL views): torch wants writable memory.
        arr = np.ascontiguousarray(images) if images.flags.writeable else images.copy()
        return torch.from_numpy(arr).permute(0, 3, 1, 2)
    if isinstance(images, torch.Tensor):
        if images.dtype != torch.uint8 or images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"tensor images must be uint8 [b, 3, H, W], got {images.dtype} {tuple(images.shape)}")
        return images.detach().cpu()
    raise TypeError(f"images must be a torch.Tensor or numpy.ndarray, got {type(images).__name__}")


def perturb(images: Images, ids: Sequence[str], name: str, severity: int, seed: int = 0) -> Images:
    """Perturb a uint8 batch (torch [b, 3, H, W] or numpy [b, H, W, 3]); returns the same type and layout.

    Image i's result depends only on (ids[i], name, severity, seed) and the clean image i, so the
    same test image is corrupted identically for every encoder, batch size and batch order.
    """
    spec = get_perturbation(name)
    param = spec.param(severity)
    x = _as_nchw(images)
    ids = list(ids)
    if len(ids) != x.shape[0]:
        raise ValueError(f"got {x.shape[0]} images but {len(ids)} ids")
    if not all(isinstance(i, str) for i in ids):
        raise TypeError("ids must be strings (stable image ids)")
    if x.shape[0] == 0:
        return images.copy() if isinstance(images, np.ndarray) else images.clone()
    rngs = [torch.Generator().manual_seed(image_seed(i, name, severity, seed)) for i in ids]
    y = spec.fn(x.to(torch.float32) / 255, param, rngs)
    out = (y.clamp(0, 1) * 255).round().to(torch.uint8)
    if isinstance(images, np.ndarray):
        return out.permute(0, 2, 3, 1).contiguous().numpy()
    return out.to(images.device)
