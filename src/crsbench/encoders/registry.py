"""Encoders by name: a dict of factories, so adding one is one `register_encoder` call."""

from __future__ import annotations

from typing import Callable

from crsbench.encoders.base import Encoder
from crsbench.encoders.classical import ColourTextureEncoder, RawPixelsEncoder
from crsbench.encoders.efficientnet_lite import EfficientNetLiteEncoder
from crsbench.errors import EncoderError

EncoderFactory = Callable[..., Encoder]

_FACTORIES: dict[str, EncoderFactory] = {
    "efficientnet-lite0": lambda **opts: EfficientNetLiteEncoder("efficientnet-lite0", **opts),
    "efficientnet-lite1": lambda **opts: EfficientNetLiteEncoder("efficientnet-lite1", **opts),
    "efficientnet-lite2": lambda **opts: EfficientNetLiteEncoder("efficientnet-lite2", **opts),
    "raw-pixels": lambda **opts: RawPixelsEncoder(**opts),
    "colour-texture": lambda **opts: ColourTextureEncoder(**opts),
}


def register_encoder(name: str, factory: EncoderFactory, *, replace: bool = False) -> None:
    if name in _FACTORIES and not replace:
        raise EncoderError(f"encoder {name!r} is already registered (pass replace=True to override)")
    _FACTORIES[name] = factory


def encoder_names() -> list[str]:
    return sorted(_FACTORIES)


def get_encoder(name: str, **options) -> Encoder:
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise EncoderError(f"unknown encoder {name!r}; known: {', '.join(encoder_names())}") from None
    try:
        return factory(**options)
    except TypeError as exc:
        raise EncoderError(f"encoder {name!r}: bad options {options}: {exc}") from None
from crsbench.encoders import zoo as _zoo  # noqa: E402,F401  registers the zoo (after register_encoder exists)
