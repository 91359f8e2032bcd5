"""transformers models: vision towers only.

Kinds (option `kind`): `dinov2` (Dinov2Model, CLS token after the final norm = pooler_output),
`siglip` (SiglipVisionModel, attention-pooled MAP head = SigLIP's image embedding), `clip`
(CLIPVisionModelWithProjection, projected image embedding) and `gemma3-vision` (the SigLIP vision
tower of a Gemma 3 / MedGemma checkpoint, read from only the shards that hold it: the language model
is never loaded; embedding = mean of the tower's last hidden states, before the multimodal projector).

Weights: model.safetensors or its shards; a repository that has only pytorch_model.bin is read by our
safe loader (torch.load(weights_only=True)) and handed to transformers as a state dict.
"""

from __future__ import annotations

import json
from pathlib import Path

from crsbench.encoders.adapters import from_model, require
from crsbench.encoders.adapters.weights import WeightsSource, load_state_dict, load_strict, resolve_weights
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.torch_base import TorchEncoderBase
from crsbench.errors import EncoderError

SINGLE_FILE = "model.safetensors"
BIN_FILE = "pytorch_model.bin"  # older repositories hold only this, e.g. PubMedCLIP's main branch
INDEX_FILE = "model.safetensors.index.json"
GEMMA3_VISION_PREFIXES = ("model.vision_tower.", "vision_tower.")  # newer and older checkpoint layouts


def _fetch_weights(weights: WeightsSource, wanted=lambda key: True, single=(SINGLE_FILE, BIN_FILE)) -> list[Path]:
    """The files holding the tensors `wanted` selects: a sharded safetensors checkpoint fetches only
    the shards that hold at least one of them; otherwise the first of `single` found (safetensors
    preferred, a .bin where a repository has nothing else)."""
    try:
        index = json.loads(weights.file(INDEX_FILE, weights=False).read_text())
    except EncoderError:
        return [weights.file(*single)]
    shards = sorted({shard for key, shard in index["weight_map"].items() if wanted(key)})
    return [weights.file(shard) for shard in shards]


def _clip_vision_config(transformers, top: dict):
    """A full CLIPModel checkpoint keeps projection_dim at the top level, not in vision_config."""
    if "vision_config" not in top:
        return None
    return transformers.CLIPVisionConfig(**{**top["vision_config"], "projection_dim": top.get("projection_dim", 512)})


def _from_safetensors(encoder, model_class, folder: Path, files: list[Path], config) -> dict:
    return {"pretrained_model_name_or_path": str(folder), "config": config, "local_files_only": True,
            "use_safetensors": True}


def _from_bin(encoder, model_class, folder: Path, files: list[Path], config) -> dict:
    """A .bin is read by our own loader (weights_only=True, one-line refusal of anything pickled) and
    handed to transformers as a state dict, so the library never unpickles the file itself."""
    config = config or model_class.config_class.from_pretrained(str(folder), local_files_only=True)
    return {"pretrained_model_name_or_path": None, "config": config,
            "state_dict": load_state_dict(files[0], encoder.spec.name)}


# weight file suffix -> the from_pretrained arguments that read it
WEIGHT_READERS = {".safetensors": _from_safetensors, ".bin": _from_bin, ".pt": _from_bin, ".pth": _from_bin}


def _from_pretrained(class_name: str, vision_config=None):
    """The library's own loader, held to our standard: a tensor the vision model needs but the
    checkpoint lacks (randomly initialised by transformers, with only a warning) is an error.
    Unexpected tensors (a text tower next to the vision tower) are fine."""

    def load(encoder: "TransformersEncoder"):
        import torch

        transformers = require("transformers", encoder.spec.name)
        config_file = encoder.weights.file("config.json", weights=False)
        files = _fetch_weights(encoder.weights)
        config = vision_config(transformers, json.loads(config_file.read_text())) if vision_config else None
        model_class = getattr(transformers, class_name)
        reader = WEIGHT_READERS.get(files[0].suffix)
        if reader is None:
            raise EncoderError(f"encoder {encoder.spec.name!r}: cannot read weights file {files[0].name}")
        model, info = model_class.from_pretrained(
            **reader(encoder, model_class, config_file.parent, files, config),
            weights_only=True, dtype=torch.float32, output_loading_info=True,
        )
        missing = list(info.get("missing_keys", [])) + [str(m) for m in info.get("mismatched_keys", [])]
        if missing:
            raise EncoderError(
                f"encoder {encoder.spec.name!r}: checkpoint lacks {len(missing)} tensors of {class_name} "
                f"(e.g. {missing[:3]})"
            )
        return model

    return load


def _in_vision_tower(key: str) -> bool:
    return key.startswith(GEMMA3_VISION_PREFIXES)


def _gemma3_vision(encoder: "TransformersEncoder"):
    require("transformers", encoder.spec.name)
    from safetensors import safe_open
    from transformers import SiglipVisionConfig, SiglipVisionModel

    config = json.loads(encoder.weights.file("config.json", weights=False).read_text())
    vision = {k: v for k, v in config["vision_config"].items() if k != "model_type"}
    model = SiglipVisionModel(SiglipVisionConfig(**vision))
    state = {}
    for shard in _fetch_weights(encoder.weights, _in_vision_tower, single=(SINGLE_FILE,)):  # read by safe_open
        with safe_open(str(shard), framework="pt") as f:
            for key in f.keys():
                prefix = next((p for p in GEMMA3_VISION_PREFIXES if key.startswith(p)), None)
                if prefix is not None:
                    state[key[len(prefix):]] = f.get_tensor(key)
    if not state:
        raise EncoderError(f"encoder {encoder.spec.name!r}: no vision_tower tensors in the checkpoint")
    load_strict(model, state, encoder.spec.name)
    return model


# kind -> (how the model is loaded, {spec output: how it is read from the model's outputs})
KINDS = {
    "dinov2": (_from_pretrained("Dinov2Model"), {"cls": lambda out: out.pooler_output}),
    "siglip": (_from_pretrained("SiglipVisionModel"), {"pooled": lambda out: out.pooler_output}),
    "clip": (
        _from_pretrained("CLIPVisionModelWithProjection", _clip_vision_config),
        {"projected": lambda out: out.image_embeds},
    ),
    "gemma3-vision": (_gemma3_vision, {"pre-projection": lambda out: out.last_hidden_state.mean(dim=1)}),
}


class TransformersEncoder(TorchEncoderBase):
    def __init__(self, spec: EncoderSpec, weights: WeightsSource, **runtime):
        self._load, outputs = KINDS[spec.adapter.kind]
        if spec.output not in outputs:
            raise EncoderError(
                f"encoder {spec.name!r}: kind {spec.adapter.kind!r} gives output {' or '.join(outputs)}, "
                f"not {spec.output!r}"
            )
        super().__init__(spec, **runtime)
        self.weights = weights
        self._output = outputs[spec.output]

    def build_model(self):
        return self._load(self)

    def embed(self, model, pixels):
        return self._output(model(pixel_values=pixels))


def build(spec: EncoderSpec, **options) -> TransformersEncoder:
    spec, weights, runtime = resolve_weights(spec, options)
    spec = from_model.resolve(spec, weights)  # preprocessing: from_model -> the model config's values
    return TransformersEncoder(spec, weights, **runtime)
