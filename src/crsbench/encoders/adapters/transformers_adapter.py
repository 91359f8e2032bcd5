"""transformers models: vision towers only.

Kinds (option `kind`): `dinov2` (Dinov2Model, CLS token after the final norm = pooler_output),
`siglip` (SiglipVisionModel, attention-pooled MAP head = SigLIP's image embedding), `clip`
(CLIPVisionModelWithProjection, projected image embedding) and `gemma3-vision` (the SigLIP vision
tower of a Gemma 3 / MedGemma checkpoint, read from only the shards that hold it: the language model
is never loaded; embedding = mean of the tower's last hidden states, before the multimodal projector).
"""

from __future__ import annotations

import json
from pathlib import Path

from crsbench.encoders.adapters import require
from crsbench.encoders.adapters.weights import WeightsSource, load_strict
from crsbench.errors import EncoderError
from crsbench.extraction import TorchEncoderBase

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
GEMMA3_VISION_PREFIXES = ("model.vision_tower.", "vision_tower.")  # newer and older checkpoint layouts


def _fetch_weights(weights: WeightsSource, wanted=lambda key: True) -> list[Path]:
    """The safetensors files holding the tensors `wanted` selects; a sharded checkpoint fetches only
    the shards that hold at least one of them."""
    try:
        index = json.loads(weights.file(INDEX_FILE, weights=False).read_text())
    except EncoderError:
        return [weights.file(SINGLE_FILE)]
    shards = sorted({shard for key, shard in index["weight_map"].items() if wanted(key)})
    return [weights.file(shard) for shard in shards]


def _clip_vision_config(transformers, top: dict):
    """A full CLIPModel checkpoint keeps projection_dim at the top level, not in vision_config."""
    if "vision_config" not in top:
        return None
    return transformers.CLIPVisionConfig(**{**top["vision_config"], "projection_dim": top.get("projection_dim", 512)})


def _from_pretrained(class_name: str, vision_config=None):
    """The library's own loader, held to our standard: a tensor the vision model needs but the
    checkpoint lacks (randomly initialised by transformers, with only a warning) is an error.
    Unexpected tensors (a text tower next to the vision tower) are fine."""

    def load(encoder: "TransformersEncoder"):
        import torch

        transformers = require("transformers", encoder.meta.name)
        config_file = encoder.weights.file("config.json", weights=False)
        _fetch_weights(encoder.weights)
        config = vision_config(transformers, json.loads(config_file.read_text())) if vision_config else None
        model, info = getattr(transformers, class_name).from_pretrained(
            str(config_file.parent), config=config, local_files_only=True, use_safetensors=True,
            dtype=torch.float32, output_loading_info=True,
        )
        missing = list(info.get("missing_keys", [])) + [str(m) for m in info.get("mismatched_keys", [])]
        if missing:
            raise EncoderError(
                f"encoder {encoder.meta.name!r}: checkpoint lacks {len(missing)} tensors of {class_name} "
                f"(e.g. {missing[:3]})"
            )
        return model

    return load


def _gemma3_vision(encoder: "TransformersEncoder"):
    require("transformers", encoder.meta.name)
    from safetensors import safe_open
    from transformers import SiglipVisionConfig, SiglipVisionModel

    config = json.loads(encoder.weights.file("config.json", weights=False).read_text())
    vision = {k: v for k, v in config["vision_config"].items() if k != "model_type"}
    model = SiglipVisionModel(SiglipVisionConfig(**vision))
    state = {}
    for shard in _fetch_weights(encoder.weights, lambda key: key.startswith(GEMMA3_VISION_PREFIXES)):
        with safe_open(str(shard), framework="pt") as f:
            for key in f.keys():
                prefix = next((p for p in GEMMA3_VISION_PREFIXES if key.startswith(p)), None)
                if prefix is not None:
                    state[key[len(prefix):]] = f.get_tensor(key)
    if not state:
        raise EncoderError(f"encoder {encoder.meta.name!r}: no vision_tower tensors in the checkpoint")
    load_strict(model, state, encoder.meta.name)
    return model


# kind -> (how the model is loaded, which output is the embedding)
KINDS = {
    "dinov2": (_from_pretrained("Dinov2Model"), lambda out: out.pooler_output),
    "siglip": (_from_pretrained("SiglipVisionModel"), lambda out: out.pooler_output),
    "clip": (_from_pretrained("CLIPVisionModelWithProjection", _clip_vision_config), lambda out: out.image_embeds),
    "gemma3-vision": (_gemma3_vision, lambda out: out.last_hidden_state.mean(dim=1)),
}


class TransformersEncoder(TorchEncoderBase):
    def __init__(self, entry, meta, weights: WeightsSource, **runtime):
        kind = entry.options.get("kind")
        if kind not in KINDS:
            raise EncoderError(f"encoder {entry.name!r}: option kind must be one of {sorted(KINDS)}, got {kind!r}")
        super().__init__(meta, crop=entry.input_size, **runtime)
        self.entry, self.weights = entry, weights
        self._load, self._output = KINDS[kind]

    def build_model(self):
        return self._load(self)

    def embed(self, model, pixels):
        return self._output(model(pixel_values=pixels))


def build(entry, meta, weights: WeightsSource, **runtime) -> TransformersEncoder:
    return TransformersEncoder(entry, meta, weights, **runtime)
