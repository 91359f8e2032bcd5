"""The encoder protocol: an `EncoderSpec` plus `encode(images) -> float32 [n, d]`.

The extraction engine (`crsbench.embed`) resizes every image to `spec.resize` with
`spec.interpolation` before calling `encode`, so an encoder only crops, normalises and runs its
forward pass. Anything that maps a uint8 batch to vectors can be an encoder: wrap a callable with
`CallableEncoder`.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from crsbench.encoders.spec import GROUPS, EncoderSpec
from crsbench.errors import EncoderError

__all__ = ["GROUPS", "CallableEncoder", "Encoder", "EncoderBase", "check_options", "normalise_batch"]


@runtime_checkable
class Encoder(Protocol):
    spec: EncoderSpec

    def encode(self, images: np.ndarray) -> np.ndarray:
        """uint8 [n, spec.resize, spec.resize, 3] -> float32 [n, d]."""
        ...


class EncoderBase:
    """What every encoder class shares: its spec."""

    spec: EncoderSpec


class CallableEncoder(EncoderBase):
    """Any function from a uint8 batch to vectors, described by a spec."""

    def __init__(self, spec: EncoderSpec, fn: Callable[[np.ndarray], np.ndarray]):
        self.spec = spec
        self._fn = fn

    def encode(self, images: np.ndarray) -> np.ndarray:
        return np.asarray(self._fn(images), dtype=np.float32)


def check_options(spec: EncoderSpec, options: dict, allowed: tuple[str, ...]) -> None:
    """Suite options an encoder does not take are an error, not silently ignored."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise EncoderError(f"encoder {spec.name!r}: unknown options {unknown}; allowed: {list(allowed)}")


def normalise_batch(images: np.ndarray, mean, std):
    """uint8 [n, H, W, 3] -> float32 torch tensor [n, 3, H, W], (x/255 - mean) / std."""
    import torch

    x = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float().div_(255.0)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
    return (x - mean_t) / std_t
