"""timm models: the architecture from timm's registry, weights loaded strictly from a safe file."""

from __future__ import annotations

from crsbench.encoders.adapters import require
from crsbench.encoders.adapters.weights import WeightsSource, load_state_dict, load_strict
from crsbench.extraction import TorchEncoderBase

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class TimmEncoder(TorchEncoderBase):
    """Embedding = timm's pooled pre-logits features (`num_classes=0`): global average pool for CNNs,
    the class token after the final norm for ViTs (or what `create_kwargs` such as global_pool say)."""

    def __init__(self, entry, meta, weights: WeightsSource, **runtime):
        super().__init__(meta, crop=entry.input_size, **runtime)
        self.entry, self.weights = entry, weights

    def build_model(self):
        timm = require("timm", self.meta.name)
        options = self.entry.options
        path = self.weights.file(*options.get("files", WEIGHT_FILES))  # before a possibly large build
        model = timm.create_model(options["arch"], pretrained=False, num_classes=0, **options.get("create_kwargs", {}))
        # the checkpoint's classifier is not part of a frozen backbone; nothing else may be left over
        classifier = model.pretrained_cfg.get("classifier") or "head"
        classifiers = classifier if isinstance(classifier, (list, tuple)) else (classifier,)
        ignore = tuple(f"{c}." for c in classifiers) + tuple(options.get("ignore_prefixes", ()))
        load_strict(model, load_state_dict(path, self.meta.name), self.meta.name, ignore_prefixes=ignore)
        return model

    def embed(self, model, pixels):
        return model(pixels)


def build(entry, meta, weights: WeightsSource, **runtime) -> TimmEncoder:
    return TimmEncoder(entry, meta, weights, **runtime)
