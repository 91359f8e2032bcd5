"""Checkpoints no library packages (RadImageNet, RETFound, PanDerm, CheXzero): a state dict from a
local file (or a bare hub file), loaded safely into an architecture that timm or open_clip builds.

Declare `adapter={"arch_library": "timm", "arch": "resnet50", "files": ("ResNet50.pt",)}` and, where
the checkpoint holds leftovers such as a pretraining decoder, `"ignore_prefixes": ("decoder_",)`.
"""

from __future__ import annotations

from crsbench.encoders.adapters import open_clip_adapter, timm_adapter
from crsbench.encoders.adapters.weights import resolve_weights
from crsbench.encoders.spec import EncoderSpec

# the library that builds the architecture -> its encoder class (same safe loading, same strictness)
ARCHITECTURES = {
    "timm": timm_adapter.TimmEncoder,
    "open_clip": open_clip_adapter.OpenClipEncoder,
}


def build(spec: EncoderSpec, **options):
    encoder_class = ARCHITECTURES[spec.adapter.arch_library]  # the spec's type allows only these
    spec, weights, runtime = resolve_weights(spec, options)
    return encoder_class(spec, weights, **runtime)
