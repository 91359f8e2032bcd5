"""Encoders by name: every entry is an `EncoderSpec`, so listing one builds nothing.

The registry imports nothing concrete. The catalogue modules (pure data) and installed packages'
entry points (group `crsbench.encoders`) are read on first use; an encoder is built by the module
its spec's `source` names, imported only then. User code may register a spec with its own factory.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable, Optional

from crsbench.encoders.spec import EncoderSpec
from crsbench.errors import EncoderError, SuiteError

EncoderFactory = Callable[..., Any]  # suite options -> an Encoder

# modules whose `SPECS` make up the catalogue: data only, no model library
CATALOGUES = ("crsbench.encoders.builtins", "crsbench.encoders.zoo")
ENTRY_POINT_GROUP = "crsbench.encoders"

# source -> the module whose `build(spec, **options)` turns a spec into an encoder
BUILDERS = {
    "timm": "crsbench.encoders.adapters.timm_adapter",
    "open_clip": "crsbench.encoders.adapters.open_clip_adapter",
    "transformers": "crsbench.encoders.adapters.transformers_adapter",
    "local": "crsbench.encoders.adapters.local_adapter",
    "efficientnet-lite": "crsbench.encoders.efficientnet_lite",
    "builtin": "crsbench.encoders.classical",
}


@dataclass(frozen=True)
class _Entry:
    spec: EncoderSpec
    factory: Optional[EncoderFactory] = None  # None: built from the spec by its source's builder
    process_local: bool = False  # registered at run time: no other process (the shell, a Ray worker) has it


_ENTRIES: dict[str, _Entry] = {}
# where a name is unknown: the likeliest reason is an encoder registered in another process
LOCAL_HINT = (" (register_encoder() reaches only its own Python process: elsewhere name user code as "
              "module:factory or install it under the entry point group crsbench.encoders, docs/encoders.md)")
_loaded = False


def register_encoder(spec, factory: EncoderFactory | None = None, *, replace: bool = False) -> None:
    """Declare an encoder for this Python process: an EncoderSpec (built from the spec by
    `BUILDERS[spec.source]`, or by `factory(**options)`), or an encoder object itself (anything with
    `spec` and `encode`, e.g. `crsbench.encoders.byo.encoder(name, fn)`), which every suite of this
    process then uses as it is. Other processes (the shell, Ray workers) do not see it."""
    _load_catalogue()
    if not isinstance(spec, EncoderSpec) and factory is None and _is_encoder(spec):
        spec, factory = spec.spec, _as_is(spec)
    _add(spec, factory, replace, process_local=True)


def _is_encoder(obj) -> bool:
    return isinstance(getattr(obj, "spec", None), EncoderSpec) and callable(getattr(obj, "encode", None))


def _as_is(encoder) -> EncoderFactory:
    def factory(**options):
        if options:
            raise EncoderError(f"encoder {encoder.spec.name!r} is an object of this process: it takes no options "
                               f"(got {sorted(options)})")
        return encoder

    return factory


def register_object(item) -> str:
    """An object of this process registered as an encoder, by its name: an encoder (`spec` and `encode`), or
    a torch module or named function, made one with byo.encoder's defaults. It replaces an earlier
    registration of its own (a notebook cell run again), never a catalogue encoder."""
    from crsbench.encoders.byo import encoder, is_torch_module

    if not _is_encoder(item):
        name = getattr(item, "__name__", None) or (type(item).__name__ if is_torch_module(item) else None)
        if not name or not callable(item) or name == "<lambda>":
            raise SuiteError(f"encoders: cannot tell what to call {item!r}: give it a name with "
                             "crsbench.api.encoder('my-name', fn)")
        item = encoder(name, item)
    name = item.spec.name
    if name in encoder_names() and not is_process_local(name):
        raise SuiteError(f"encoders: {name!r} is a catalogue encoder's name; name yours differently")
    register_encoder(item, replace=True)
    return name


def is_process_local(name: str) -> bool:
    """Registered at run time in this process (so invisible to the shell and to other processes)."""
    _load_catalogue()
    entry = _ENTRIES.get(name)
    return bool(entry and entry.process_local)


def _add(spec: EncoderSpec, factory: EncoderFactory | None, replace: bool, process_local: bool = False) -> None:
    if not isinstance(spec, EncoderSpec):
        raise EncoderError(f"register_encoder needs an EncoderSpec or an encoder object, got {type(spec).__name__}")
    if spec.name in _ENTRIES and not replace:
        raise EncoderError(f"encoder {spec.name!r} is already registered (pass replace=True to override)")
    if factory is None and spec.source not in BUILDERS:
        raise EncoderError(f"encoder {spec.name!r}: source {spec.source!r} has no builder; pass a factory")
    _ENTRIES[spec.name] = _Entry(spec, factory, process_local)


def unregister_encoder(name: str) -> None:
    _ENTRIES.pop(name, None)


def _load_catalogue() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True  # first, so a catalogue module that registers through this API does not recurse
    for module in CATALOGUES:
        for spec in importlib.import_module(module).SPECS:
            _add(spec, None, replace=False)
    for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        for spec, factory in _entry_point_specs(entry_point):
            _add(spec, factory, replace=False)


def _entry_point_specs(entry_point) -> list[tuple[EncoderSpec, EncoderFactory | None]]:
    """An entry point names an EncoderSpec, a list of them, or a callable returning either."""
    where = f"entry point {entry_point.name!r} ({entry_point.value}) of group {ENTRY_POINT_GROUP!r}"
    try:
        value = entry_point.load()
        if callable(value) and not isinstance(value, EncoderSpec):
            value = value()
    except Exception as exc:  # noqa: BLE001 - a broken plug-in is one line naming it
        raise EncoderError(f"{where}: cannot load ({type(exc).__name__}: {exc})") from None
    specs = [value] if isinstance(value, EncoderSpec) else list(value) if isinstance(value, (list, tuple)) else None
    if not specs or not all(isinstance(s, EncoderSpec) for s in specs):
        raise EncoderError(f"{where}: must give an EncoderSpec or a list of them, got {type(value).__name__}")
    return [(spec, None) for spec in specs]


def encoder_names() -> list[str]:
    _load_catalogue()
    return sorted(_ENTRIES)


def encoder_spec(name: str) -> EncoderSpec:
    """An encoder's spec, without building it."""
    return _entry(name).spec


def _entry(name: str) -> _Entry:
    _load_catalogue()
    try:
        return _ENTRIES[name]
    except KeyError:
        raise EncoderError(f"unknown encoder {name!r}; known: {', '.join(encoder_names())}{LOCAL_HINT}") from None


def build_encoder(spec: EncoderSpec, **options):
    """An encoder from its spec and suite options, by the builder of its source."""
    try:
        module = BUILDERS[spec.source]
    except KeyError:
        raise EncoderError(
            f"encoder {spec.name!r}: source {spec.source!r} has no builder; register a factory"
        ) from None
    return importlib.import_module(module).build(spec, **options)


def get_encoder(name: str, **options):
    """A registered encoder by name, or user code named `module:factory`."""
    if ":" in name:  # registry names never hold a colon
        return encoder_from_factory(name, **options)
    entry = _entry(name)
    if entry.factory is None:
        return build_encoder(entry.spec, **options)
    try:
        return _checked(entry.factory(**options), name)
    except TypeError as exc:
        raise EncoderError(f"encoder {name!r}: bad options {options}: {exc}") from None


def load_factory(reference: str, python_path: str | None = None) -> Callable:
    """'package.module:attribute' -> the callable it names, or one line saying what is wrong.
    `python_path`: the folder the module is imported from (a suite's `python_path`), added to sys.path
    only when it holds that module's top-level package, so a suite cannot add any other folder."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise EncoderError(f"encoder {reference!r}: user code is named 'module:factory'")
    if python_path is not None:
        add_import_root(reference, python_path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = "" if python_path else "; add python_path: <the folder holding it> to the suite's encoder entry"
        raise EncoderError(f"encoder {reference!r}: cannot import module {module_name!r} ({exc}){hint}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise EncoderError(f"encoder {reference!r}: module {module_name!r} has no callable {attribute!r}")
    return factory


def _holds(folder, top: str) -> bool:
    from pathlib import Path

    folder = Path(folder)
    return (folder / f"{top}.py").is_file() or (folder / top).is_dir()


def add_import_root(reference: str, folder: str) -> None:
    """Put `folder` on sys.path if it holds the reference's top-level module; else one line."""
    import os
    import sys

    top = reference.partition(":")[0].split(".")[0]
    if not os.path.isdir(folder) or not _holds(folder, top):
        raise EncoderError(f"encoder {reference!r}: python_path {folder} does not hold the module {top!r}")
    if folder not in sys.path:
        # last, not first: a suite's folder must never shadow the standard library or an installed package
        sys.path.append(folder)
        importlib.invalidate_caches()


def import_root(reference: str) -> str | None:
    """The folder a user module was imported from (what PYTHONPATH had to hold), or None where it is
    installed (site-packages, the interpreter's own library) and needs no path."""
    import os
    import sys
    import sysconfig

    top = reference.partition(":")[0].split(".")[0]
    module = importlib.import_module(top)
    file = getattr(module, "__file__", None)
    if file:  # a module file, or a package's __init__.py
        file = os.path.realpath(file)
        folder = os.path.dirname(os.path.dirname(file)) if os.path.basename(file) == "__init__.py" else \
            os.path.dirname(file)
    else:  # a namespace package: the folder above its first location
        locations = list(getattr(module, "__path__", []))
        if not locations:
            return None
        folder = os.path.dirname(os.path.realpath(locations[0]))
    installed = {os.path.realpath(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                                                sysconfig.get_paths()["stdlib"], sys.prefix, sys.base_prefix)}
    if any(folder == root or folder.startswith(root + os.sep) for root in installed):
        return None
    return folder


def encoder_from_factory(reference: str, **options):
    """User code: a factory returning an Encoder, or an EncoderSpec that is then built. The factory's
    module file is part of the encoder's identity: editing the code re-embeds instead of serving old vectors."""
    from crsbench.encoders.byo import is_torch_module

    factory = load_factory(reference)
    # a torch module, or (given no options) a function with a required positional argument, the images,
    # is itself the encoder's model; anything else is a factory of the suite's options
    made = factory if is_torch_module(factory) or (not options and _takes_images(factory)) else None
    if made is not None and options:
        raise EncoderError(f"encoder {reference!r} is a torch module: it takes no options (got {sorted(options)}); "
                           "write a factory for options")
    if made is None:
        try:
            made = factory(**options)
        except TypeError as exc:
            raise EncoderError(f"encoder {reference!r}: bad options {options}: {exc}") from None
    if isinstance(made, EncoderSpec):
        encoder = build_encoder(made)
    elif not _is_encoder(made) and callable(made):  # a bare embed function or torch module: the defaults
        from crsbench.encoders.byo import encoder as byo_encoder

        encoder = byo_encoder(reference.replace(":", "."), made)
    else:
        encoder = _checked(made, reference)
    identity = f"+code-{code_identity(reference.partition(':')[0])}" + "".join(
        f"+{key}-{file_identity}" for key, file_identity in _file_options(options))
    encoder.spec = encoder.spec.replace(revision=f"{encoder.spec.revision or 'unversioned'}{identity}")
    return encoder


def _file_options(options: dict) -> list[tuple[str, str]]:
    """The options that name an existing file or folder (weights a factory loads), with their identity."""
    from pathlib import Path

    from crsbench.encoders.adapters.weights import path_identity

    found = []
    for key, value in sorted(options.items()):
        if isinstance(value, str) and value and Path(value).expanduser().exists():
            found.append((key, path_identity(Path(value).expanduser())))
    return found


def code_identity(module_name: str) -> str:
    """12 hex digits of the SHA-256 of a module's source file ("no-file" for a module without one)."""
    import hashlib

    path = getattr(importlib.import_module(module_name), "__file__", None)
    if not path:
        return "no-file"
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:12]


def _takes_images(obj) -> bool:
    """A plain function with a required positional parameter: an embed function, not a factory."""
    import inspect
    import types

    if not isinstance(obj, types.FunctionType):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional and p.default is inspect.Parameter.empty
               for p in inspect.signature(obj).parameters.values())


def _checked(encoder, name: str):
    if not isinstance(getattr(encoder, "spec", None), EncoderSpec) or not callable(getattr(encoder, "encode", None)):
        raise EncoderError(
            f"encoder {name!r}: the factory must return an object with `spec` (EncoderSpec) and `encode`"
        )
    return encoder
