"""Checkpoints no library packages (RadImageNet, RETFound, PanDerm, CheXzero): a state dict from a
local file (or a bare hub file), loaded safely into an architecture that timm or open_clip builds.

Declare `options={"arch_library": "timm", "arch": "resnet50", "files": ("ResNet50.pt",)}` and, where
the checkpoint holds leftovers such as a pretraining decoder, `"ignore_prefixes": ("decoder_",)`.
"""

from __future__ import annotations

from crsbench.encoders.adapters import open_clip_adapter, timm_adapter
from crsbench.encoders.adapters.weights import WeightsSource
from crsbench.errors import EncoderError

# the library that builds the architecture -> its encoder class (same safe loading, same strictness)
ARCHITECTURES = {
    "timm": timm_adapter.TimmEncoder,
    "open_clip": open_clip_adapter.OpenClipEncoder,
}


def build(entry, meta, weights: WeightsSource, **runtime):
    library = entry.options.get("arch_library")
    try:
        encoder_class = ARCHITECTURES[library]
    except KeyError:
        raise EncoderError(
            f"encoder {entry.name!r}: option arch_library must be one of {sorted(ARCHITECTURES)}, got {library!r}"
        ) from None
    return encoder_class(entry, meta, weights, **runtime)
