"""The encoder protocol: an `EncoderSpec` plus `encode(images) -> float32 [n, d]`.

The extraction engine (`crsbench.embed.cache`) resizes every stored image once, in float, to `spec.resize`
with `spec.interpolation` (antialiased) before calling `encode`, so an encoder only crops, normalises
and runs its forward pass.

What `encode` receives: float32 pixels [n, spec.resize, spec.resize, 3], RGB, on the 0-255 scale
(divide by 255 for [0, 1]). They are not rounded to whole grey levels: rounding the resized image back
to uint8 moves a network's embeddings by more than 10 %. Anything that maps such a batch to vectors can
be an encoder: wrap a callable with `CallableEncoder` (it receives exactly this batch).
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from crsbench.encoders.spec import GROUPS, EncoderSpec
from crsbench.errors import EncoderError

__all__ = ["GROUPS", "CallableEncoder", "Encoder", "EncoderBase", "check_options"]


@runtime_checkable
class Encoder(Protocol):
    spec: EncoderSpec

    def encode(self, images: np.ndarray) -> np.ndarray:
        """float32 pixels in [0, 255], [n, spec.resize, spec.resize, 3] -> float32 [n, d]."""
        ...


class EncoderBase:
    """What every encoder class shares: its spec."""

    spec: EncoderSpec


class CallableEncoder(EncoderBase):
    """Any function from a pixel batch to vectors, described by a spec.

    `fn` receives what every `encode` receives: float32 [n, spec.resize, spec.resize, 3] in [0, 255].
    """

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
