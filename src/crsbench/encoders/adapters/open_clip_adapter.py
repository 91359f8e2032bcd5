"""open_clip models: only the vision tower is built and loaded, so no text tower or tokenizer (and
none of their downloads, e.g. BiomedCLIP's PubMedBERT) is ever needed to embed images."""

from __future__ import annotations

import json

from crsbench.encoders.adapters import from_model, require
from crsbench.encoders.adapters.weights import WeightsSource, load_state_dict, load_strict, resolve_weights
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.torch_base import TorchEncoderBase
from crsbench.errors import EncoderError

WEIGHT_FILES = (
    "open_clip_model.safetensors",
    "open_clip_pytorch_model.safetensors",
    "open_clip_pytorch_model.bin",
    "open_clip_pytorch_model.pth",
)
CONFIG_FILE = from_model.OPEN_CLIP_CONFIG


class OpenClipEncoder(TorchEncoderBase):
    """Embedding = the vision tower's output, i.e. `encode_image` before L2 normalisation (projected)."""

    outputs = ("projected",)

    def __init__(self, spec: EncoderSpec, weights: WeightsSource, **runtime):
        super().__init__(spec, **runtime)
        self.weights = weights

    def model_config(self) -> dict:
        """A built-in open_clip config named by option `model` (e.g. OpenAI-format checkpoints such as
        CheXzero), else the repository's open_clip_config.json."""
        open_clip = require("open_clip", self.spec.name)
        builtin = self.spec.adapter.model
        if builtin:
            config = open_clip.get_model_config(builtin)
            if config is None:
                raise EncoderError(f"encoder {self.spec.name!r}: open_clip has no built-in model {builtin!r}")
        else:
            config = json.loads(self.weights.file(CONFIG_FILE, weights=False).read_text())["model_cfg"]
        return {**config, **self.spec.adapter.config_overrides}

    def build_model(self):
        require("open_clip", self.spec.name)
        from open_clip.model import CLIPVisionCfg, _build_vision_tower

        config = self.model_config()
        # the file is found and read (an unsafe one refused) before the build
        state = self.read_state(self.weights.file(*(self.spec.adapter.files or WEIGHT_FILES)))
        tower = _build_vision_tower(
            config["embed_dim"],
            CLIPVisionCfg(**config["vision_cfg"]),
            quick_gelu=bool(config.get("quick_gelu", False)),
            cast_dtype=None,
        )
        visual = {k[len("visual."):]: v for k, v in state.items() if k.startswith("visual.")}
        if not visual:
            raise EncoderError(f"encoder {self.spec.name!r}: the checkpoint has no 'visual.*' tensors")
        load_strict(tower, visual, self.spec.name)
        return tower

    def read_state(self, path):
        """The checkpoint's tensors under open_clip's key names (`visual.*` for the tower)."""
        return load_state_dict(path, self.spec.name)

    def embed(self, model, pixels):
        return model(pixels)


def build(spec: EncoderSpec, **options) -> OpenClipEncoder:
    spec, weights, runtime = resolve_weights(spec, options)
    spec = from_model.resolve(spec, weights)  # preprocessing: from_model -> the model config's values
    return OpenClipEncoder(spec, weights, **runtime)
