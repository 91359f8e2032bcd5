"""Bring your own encoder: a name and an embed function (or a torch module) are enough.

`encoder("my-net", fn)` makes an Encoder from
- a plain callable: it receives what every `encode` receives, float32 [n, S, S, 3] RGB on 0-255, and
  returns [n, d]; no normalisation is applied (mean and std are recorded as 0 and 1);
- a `torch.nn.Module`: it receives a normalised float tensor [n, 3, S, S] on its device (ImageNet mean
  and std unless given) and returns [n, d]; it is run in eval mode under `torch.inference_mode`.

Defaults (every one a keyword): `size=224` and `pixel_rule="shorter-side"` (shorter side to 224, centre
square), `interpolation="bilinear"`, `antialias=True`; `resize=` with `size=` as the crop gives
"resize R, centre-crop S". They are printed by `describe(encoder)` and stored with every record.

Identity. Vectors are cached by the spec's fingerprint, so what the code computes must be part of it:
the revision carries a digest of the function's code (nested functions and the functions, arrays,
tensors and modules it reads from its closure, defaults and module globals), and of a module's class
code and every parameter and buffer. Editing the function or retraining the model re-embeds; state the
digest cannot see (a file the function opens, a random seed) needs `revision=` bumped by hand.
"""

from __future__ import annotations

import hashlib
import types
from typing import Any, Callable, Optional

import numpy as np

from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.spec import EncoderSpec
from crsbench.errors import EncoderError

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
DEFAULTS = {"size": 224, "pixel_rule": "shorter-side", "interpolation": "bilinear", "antialias": True}
_MAX_DEPTH = 4  # how far the digest follows functions that call functions


def encoder(name: str, fn: Callable, *, size: int = 224, resize: Optional[int] = None,
            pixel_rule: str = "shorter-side", interpolation: str = "bilinear", antialias: bool = True,
            mean=None, std=None, revision: Optional[str] = None, output: str = "pooled",
            device: str = "auto", precision: str = "auto", **description: Any):
    """An Encoder from a name and a callable or torch module (module docstring); `description` takes
    the spec's descriptive fields (family, group, specialty, licence, notes, ...)."""
    module = is_torch_module(fn)
    if not callable(fn):
        raise EncoderError(f"encoder {name!r}: needs a callable or a torch.nn.Module, got {type(fn).__name__}")
    resize = resize or size
    if resize < size:
        raise EncoderError(f"encoder {name!r}: resize {resize} is smaller than the input size {size}")
    if not module and (mean is not None or std is not None):
        raise EncoderError(f"encoder {name!r}: a plain callable receives the pixels unnormalised; mean and std "
                           "apply to a torch module only")
    fields = dict(
        name=name, source="user", identifier=description.pop("identifier", name), resize=resize,
        crop=size if (pixel_rule == "shorter-side" or size != resize) else None, pixel_rule=pixel_rule,
        interpolation=interpolation, antialias=antialias, output=output, adapter={"params": {}},
        mean=tuple(mean or (IMAGENET_MEAN if module else (0.0, 0.0, 0.0))),
        std=tuple(std or (IMAGENET_STD if module else (1.0, 1.0, 1.0))),
        revision=f"{revision or 'unversioned'}+code-{identity(fn)}",
        status=description.pop("status", "unconfirmed: your own encoder"),
        **description,
    )
    from crsbench.encoders.spec import parse_spec

    spec = parse_spec(fields, where=f"encoder {name!r}")
    if module:
        return ModuleEncoder(spec, fn, device=device, precision=precision)
    return CallableEncoder(spec, _checked_output(name, fn))


def describe(enc) -> str:
    """One line: what the encoder is fed and how it is identified."""
    spec = enc.spec
    norm = "no normalisation" if isinstance(enc, CallableEncoder) else f"mean {list(spec.mean)}, std {list(spec.std)}"
    return f"{spec.name}: {spec.pixels().describe()}, {norm}, revision {spec.revision}"


def _checked_output(name: str, fn: Callable) -> Callable:
    def run(images: np.ndarray) -> np.ndarray:
        out = np.asarray(fn(images))
        if out.ndim != 2 or out.shape[0] != len(images):
            raise EncoderError(f"encoder {name!r}: must return [n, d] for n = {len(images)} images, got shape "
                               f"{list(out.shape)}")
        return out

    return run


def is_torch_module(obj) -> bool:
    import sys

    torch = sys.modules.get("torch")  # a torch module exists only where torch is already imported
    return torch is not None and isinstance(obj, torch.nn.Module)


class ModuleEncoder:
    """A torch module the caller already holds, fed normalised [n, 3, S, S] tensors on its device."""

    def __init__(self, spec: EncoderSpec, module, *, device: str = "auto", precision: str = "auto"):
        from crsbench.encoders.torch_base import TorchEncoderBase

        # composed, not inherited, so that `import crsbench.encoders.byo` never needs torch
        class _Runner(TorchEncoderBase):
            def build_model(inner):
                return module

            def embed(inner, model, pixels):
                out = model(pixels)
                if not hasattr(out, "ndim") or out.ndim != 2:
                    shape = list(out.shape) if hasattr(out, "shape") else type(out).__name__
                    raise EncoderError(f"encoder {spec.name!r}: the module must return a tensor [n, d], got "
                                       f"{shape}; wrap it in a function that picks the embedding")
                return out

        self._runner = _Runner(spec, device=device, precision=precision)

    @property
    def spec(self) -> EncoderSpec:
        return self._runner.spec

    @spec.setter
    def spec(self, spec: EncoderSpec) -> None:
        self._runner.spec = spec

    @property
    def model(self):
        return self._runner.model

    def preprocess(self, images: np.ndarray):
        return self._runner.preprocess(images)

    def encode(self, images: np.ndarray) -> np.ndarray:
        return self._runner.encode(images)

    @property
    def resizes_on_device(self) -> bool:
        return self._runner.resizes_on_device

    def encode_resizing(self, images: np.ndarray, pixels) -> np.ndarray:
        return self._runner.encode_resizing(images, pixels)


# --- identity --------------------------------------------------------------------------------------


def identity(obj) -> str:
    """12 hex digits that change when the code or the state the object reads changes."""
    digest = hashlib.sha256()
    _feed(digest, obj, 0, set())
    return digest.hexdigest()[:12]


def _feed(digest, value, depth: int, seen: set) -> None:
    """Put what `value` computes with into the digest; objects it cannot read contribute their type."""
    if id(value) in seen:
        digest.update(b"<seen>")
        return
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        digest.update(repr(value).encode())
        return
    seen.add(id(value))
    if isinstance(value, (tuple, list)):
        digest.update(f"{type(value).__name__}{len(value)}".encode())
        for item in value:
            _feed(digest, item, depth, seen)
    elif isinstance(value, (set, frozenset)):
        for text in sorted(repr(item) for item in value):  # order-free: string hashes are salted per process
            digest.update(text.encode())
    elif isinstance(value, dict):
        for key in sorted(value, key=repr):
            digest.update(repr(key).encode())
            _feed(digest, value[key], depth, seen)
    elif isinstance(value, np.ndarray):
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif _is_tensor(value):
        _feed(digest, _tensor_bytes(value), depth, seen)
    elif is_torch_module(value):
        digest.update(type(value).__qualname__.encode())
        _feed_code_of_class(digest, type(value), depth, seen)
        for key, tensor in value.state_dict().items():
            digest.update(key.encode())
            _feed(digest, _tensor_bytes(tensor), depth, seen)
    elif isinstance(value, types.ModuleType):
        digest.update(value.__name__.encode())  # a library: its name, not its contents
    elif isinstance(value, (types.FunctionType, types.MethodType)):
        _feed_function(digest, value, depth, seen)
    elif isinstance(value, (types.BuiltinFunctionType, type)):
        digest.update(f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}".encode())
    elif callable(value):  # an instance with __call__: its class's code and its attributes
        _feed_code_of_class(digest, type(value), depth, seen)
        _feed(digest, dict(getattr(value, "__dict__", {})), depth, seen)
    else:
        digest.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())


def _is_tensor(value) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _tensor_bytes(tensor) -> np.ndarray:
    import torch

    t = tensor.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
        t = t.view(torch.int16)
    return t.numpy()


def _feed_function(digest, fn, depth: int, seen: set) -> None:
    if isinstance(fn, types.MethodType):
        _feed(digest, fn.__self__, depth, seen)
        fn = fn.__func__
    if depth > _MAX_DEPTH:
        digest.update(fn.__qualname__.encode())
        return
    _feed_code(digest, fn.__code__)
    _feed(digest, fn.__defaults__, depth, seen)
    _feed(digest, fn.__kwdefaults__, depth, seen)
    for cell in fn.__closure__ or ():
        try:
            _feed(digest, cell.cell_contents, depth + 1, seen)
        except ValueError:  # an empty cell
            digest.update(b"<empty>")
    names = _global_names(fn.__code__)
    for name in sorted(names):
        if name in fn.__globals__:
            value = fn.__globals__[name]
            # the function's own module's functions and data; libraries contribute their names only
            if isinstance(value, types.FunctionType) and value.__module__ != fn.__module__:
                digest.update(f"{value.__module__}.{value.__qualname__}".encode())
            else:
                digest.update(name.encode())
                _feed(digest, value, depth + 1, seen)


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _feed_code(digest, code: types.CodeType) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(digest, const)
        elif isinstance(const, frozenset):
            digest.update(repr(sorted(map(repr, const))).encode())
        else:
            digest.update(repr(const).encode())


def _feed_code_of_class(digest, cls: type, depth: int, seen: set) -> None:
    """The class's own methods (not the library's base classes)."""
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("torch", "builtins"):
            continue
        for name, member in sorted(vars(klass).items()):
            if isinstance(member, types.FunctionType):
                digest.update(f"{klass.__qualname__}.{name}".encode())
                _feed_code(digest, member.__code__)


__all__ = ["DEFAULTS", "ModuleEncoder", "describe", "encoder", "identity"]
