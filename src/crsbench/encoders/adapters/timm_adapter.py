"""timm models: the architecture from timm's registry, weights loaded strictly from a safe file."""

from __future__ import annotations

from crsbench.encoders.adapters import from_model, require
from crsbench.encoders.adapters.weights import WeightsSource, load_state_dict, load_strict, resolve_weights
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.torch_base import TorchEncoderBase

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class TimmEncoder(TorchEncoderBase):
    """Embedding = timm's pooled pre-logits features (`num_classes=0`): global average pool for CNNs,
    the class token after the final norm for ViTs (or what `create_kwargs` such as global_pool say)."""

    outputs = ("cls", "pooled")  # which one is the architecture's (and `create_kwargs`') pooling

    def __init__(self, spec: EncoderSpec, weights: WeightsSource, **runtime):
        super().__init__(spec, **runtime)
        self.weights = weights

    def build_model(self):
        timm = require("timm", self.spec.name)
        options = self.spec.adapter
        # the file is found and read (an unsafe one refused) before a possibly large build
        state = self.read_state(self.weights.file(*(options.files or WEIGHT_FILES)))
        model = timm.create_model(options.arch, pretrained=False, num_classes=0, **options.create_kwargs)
        # the checkpoint's classifier is not part of a frozen backbone; nothing else may be left over
        classifier = model.pretrained_cfg.get("classifier") or "head"
        classifiers = classifier if isinstance(classifier, (list, tuple)) else (classifier,)
        ignore = tuple(f"{c}." for c in classifiers) + tuple(options.ignore_prefixes)
        load_strict(model, state, self.spec.name, ignore_prefixes=ignore)
        return model

    def read_state(self, path):
        """The checkpoint's tensors under the architecture's key names."""
        return load_state_dict(path, self.spec.name)

    def embed(self, model, pixels):
        return model(pixels)


def build(spec: EncoderSpec, **options) -> TimmEncoder:
    spec, weights, runtime = resolve_weights(spec, options)
    spec = from_model.resolve(spec, weights)  # preprocessing: from_model -> the model config's values
    return TimmEncoder(spec, weights, **runtime)
