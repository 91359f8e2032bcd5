"""`preprocessing: from_model`: an encoder's pixel rule, filter, mean and std read from the model's own config.

- timm: the architecture's `pretrained_cfg` in timm's registry (input_size, crop_pct, crop_mode,
  interpolation, mean, std), as `timm.data.create_transform` reads it: resize the shorter side (or the
  whole image, crop_mode squash) to floor(size / crop_pct), centre-crop size;
- open_clip: the `preprocess_cfg` of the repository's open_clip_config.json, or of the built-in config
  the spec names, over open_clip's defaults (size = the vision tower's image_size; resize_mode shortest,
  squash or longest = our shorter-side, squash or pad);
- transformers: the repository's image processor (preprocessor_config.json): `size.shortest_edge` is
  shorter-side, `size.height` x `size.width` a squash, `crop_size` the centre crop when `do_center_crop`.

`resolve(spec, weights)` turns such a spec into an ordinary one holding the values (its `card` says
where they came from), so the fingerprint, the cache and the records see numbers, never "from_model".
A config this engine cannot reproduce (timm's border crop, a non-square input, a filter other than
bilinear or bicubic) is refused in one line rather than approximated.
"""

from __future__ import annotations

import json
import math

from crsbench.encoders.adapters import require
from crsbench.encoders.spec import EncoderSpec
from crsbench.errors import EncoderError

FILTERS = {"bilinear": "bilinear", "bicubic": "bicubic", 2: "bilinear", 3: "bicubic"}  # PIL's resample codes


def _filter(spec: EncoderSpec, value, where: str) -> str:
    value = getattr(value, "value", value)  # an enum of the library's
    if value not in FILTERS:
        raise EncoderError(f"encoder {spec.name!r}: {where} asks for the {value!r} filter; only bilinear and "
                           "bicubic are reproduced (give resize, mean and std instead of preprocessing: from_model)")
    return FILTERS[value]


def _square(spec: EncoderSpec, height: int, width: int, where: str) -> int:
    if height != width:
        raise EncoderError(f"encoder {spec.name!r}: {where} asks for a {height}x{width} input; only square inputs "
                           "are supported")
    return int(height)


def _filled(spec: EncoderSpec, source: str, **values) -> EncoderSpec:
    words = f"{values['pixel_rule']} {values['resize']} {values['interpolation']}"
    if values.get("crop") and values["crop"] != values["resize"]:
        words += f", centre-crop {values['crop']}"
    card = f"from_model: {source}: {words}, mean {list(values['mean'])}, std {list(values['std'])}"
    return spec.replace(preprocessing="card", card=card, **values)


# --- timm ------------------------------------------------------------------------------------------


def timm_values(spec: EncoderSpec, arch: str) -> EncoderSpec:
    timm = require("timm", spec.name)
    cfg = timm.get_pretrained_cfg(arch)
    if cfg is None:
        raise EncoderError(f"encoder {spec.name!r}: timm has no pretrained_cfg for {arch!r}")
    where = f"timm pretrained_cfg of {arch}"
    size = _square(spec, *cfg.input_size[-2:], where)
    crop_pct = cfg.crop_pct or 0.875  # timm's DEFAULT_CROP_PCT
    mode = cfg.crop_mode or "center"
    if mode not in ("center", "squash"):
        raise EncoderError(f"encoder {spec.name!r}: {where} has crop_mode {mode!r}; only center and squash are "
                           "reproduced")
    return _filled(spec, where, pixel_rule="shorter-side" if mode == "center" else "squash",
                   resize=math.floor(size / crop_pct), crop=size, antialias=True,
                   interpolation=_filter(spec, cfg.interpolation, where),
                   mean=tuple(map(float, cfg.mean)), std=tuple(map(float, cfg.std)))


# --- open_clip -------------------------------------------------------------------------------------

OPEN_CLIP_CONFIG = "open_clip_config.json"  # the repository's config, as the open_clip adapter reads it
OPEN_CLIP_RULES = {"shortest": "shorter-side", "squash": "squash", "longest": "pad"}


def open_clip_values(spec: EncoderSpec, model_cfg: dict, preprocess_cfg: dict, where: str) -> EncoderSpec:
    require("open_clip", spec.name)
    from open_clip.transform import PreprocessCfg

    known = {k: v for k, v in preprocess_cfg.items() if k in PreprocessCfg.__dataclass_fields__}
    cfg = PreprocessCfg(**{"size": model_cfg["vision_cfg"].get("image_size", 224), **known})
    size = cfg.size if isinstance(cfg.size, int) else _square(spec, *cfg.size, where)
    if cfg.resize_mode not in OPEN_CLIP_RULES:
        raise EncoderError(f"encoder {spec.name!r}: {where} has resize_mode {cfg.resize_mode!r}; known: "
                           f"{', '.join(OPEN_CLIP_RULES)}")
    if cfg.resize_mode == "longest" and cfg.fill_color != 0:
        raise EncoderError(f"encoder {spec.name!r}: {where} pads with colour {cfg.fill_color}; only black is reproduced")
    return _filled(spec, where, pixel_rule=OPEN_CLIP_RULES[cfg.resize_mode], resize=int(size), crop=None,
                   antialias=True, interpolation=_filter(spec, cfg.interpolation, where),
                   mean=tuple(map(float, cfg.mean)), std=tuple(map(float, cfg.std)))


def _open_clip_configs(spec: EncoderSpec, builtin, weights) -> tuple[dict, dict, str]:
    open_clip = require("open_clip", spec.name)
    if builtin:
        config = open_clip.get_model_config(builtin)
        if config is None:
            raise EncoderError(f"encoder {spec.name!r}: open_clip has no built-in model {builtin!r}")
        return config, config.get("preprocess_cfg", {}), f"open_clip built-in config {builtin}"
    path = weights.file(OPEN_CLIP_CONFIG, weights=False)
    data = json.loads(path.read_text())
    return data["model_cfg"], data.get("preprocess_cfg", {}), f"{OPEN_CLIP_CONFIG} preprocess_cfg"


# --- transformers ----------------------------------------------------------------------------------


def transformers_values(spec: EncoderSpec, processor, where: str) -> EncoderSpec:
    size = dict(getattr(processor, "size", None) or {})
    if "shortest_edge" in size:
        rule, resize = "shorter-side", int(size["shortest_edge"])
    elif "height" in size and "width" in size:
        rule, resize = "squash", _square(spec, size["height"], size["width"], where)
    else:
        raise EncoderError(f"encoder {spec.name!r}: {where} has size {size}; only shortest_edge or height/width "
                           "are reproduced")
    crop = None
    if getattr(processor, "do_center_crop", False):
        crop_size = dict(processor.crop_size)
        crop = _square(spec, crop_size["height"], crop_size["width"], where)
        if crop > resize and rule == "shorter-side":
            raise EncoderError(f"encoder {spec.name!r}: {where} crops {crop} from a shorter side of {resize}")
    return _filled(spec, where, pixel_rule=rule, resize=resize, crop=crop, antialias=True,
                   interpolation=_filter(spec, processor.resample, where),
                   mean=tuple(map(float, processor.image_mean)), std=tuple(map(float, processor.image_std)))


def _transformers_processor(spec: EncoderSpec, weights):
    transformers = require("transformers", spec.name)
    folder = weights.file("preprocessor_config.json", weights=False).parent
    try:
        return transformers.AutoImageProcessor.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - an unreadable processor is one line naming it
        raise EncoderError(f"encoder {spec.name!r}: cannot read the image processor in {folder} "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None


# --- dispatch --------------------------------------------------------------------------------------


def resolve(spec: EncoderSpec, weights) -> EncoderSpec:
    """A `from_model` spec with its values filled from the model's config; any other spec unchanged."""
    if spec.resolved:
        return spec
    adapter, library = spec.adapter, spec.source
    if spec.source == "local":
        library = adapter.arch_library
    if library == "timm":
        return timm_values(spec, adapter.arch)
    if library == "open_clip":
        return open_clip_values(spec, *_open_clip_configs(spec, adapter.model, weights))
    if library == "transformers":
        return transformers_values(spec, _transformers_processor(spec, weights), "preprocessor_config.json")
    raise EncoderError(f"encoder {spec.name!r}: source {spec.source!r} has no model config to read")


def where_from(spec: EncoderSpec) -> str:
    """Which config a `from_model` spec reads, in words (for `crsbench encoders show`)."""
    adapter = spec.adapter
    library = adapter.arch_library if spec.source == "local" else spec.source
    if library == "timm":
        return f"timm pretrained_cfg of {adapter.arch}"
    if library == "open_clip":
        return f"open_clip built-in config {adapter.model}" if adapter.model else f"{OPEN_CLIP_CONFIG} preprocess_cfg"
    return "the image processor of preprocessor_config.json"


def preview(spec: EncoderSpec) -> EncoderSpec | None:
    """The spec as it will be built, where that needs no download and no weights: timm's registry and
    open_clip's built-in configs are in the library; a hub config is read only from the local cache."""
    try:
        library = spec.adapter.arch_library if spec.source == "local" else spec.source
        if library == "timm" or (library == "open_clip" and spec.adapter.model):
            return resolve(spec, None)
        return resolve(spec, _CachedOnly(spec))
    except EncoderError:
        return None


class _CachedOnly:
    """A weights source that answers from the Hugging Face cache or not at all (never the network)."""

    def __init__(self, spec: EncoderSpec):
        self.spec = spec

    def file(self, *candidates: str, weights: bool = True):
        from pathlib import Path

        if not self.spec.hub_repo:
            raise EncoderError("no hub repository")
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            raise EncoderError("huggingface_hub not installed") from None
        for name in candidates:
            found = try_to_load_from_cache(self.spec.hub_repo, name, revision=self.spec.revision)
            if isinstance(found, str):
                return Path(found)
        raise EncoderError("not cached")
