"""Where an encoder's weight files come from, in order: an explicit local path, the Hugging Face
cache (no network), a download. Offline, a missing file is one line naming it and how to provide it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from crsbench.encoders.adapters import require
from crsbench.encoders.base import check_options
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.torch_base import RUNTIME_OPTIONS
from crsbench.errors import EncoderError

_TRUE = {"1", "on", "yes", "true"}


def offline() -> bool:
    return any(os.environ.get(var, "").lower() in _TRUE for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def pinned(revision: str | None) -> str | None:
    """None (or empty) means not pinned: the hub's default branch is used."""
    return revision or None


WEIGHT_OPTIONS = ("weights", "revision", "weights_identity")  # options of every encoder whose weights are files
IDENTITY_MODES = ("mtime", "content")


def resolve_weights(spec: EncoderSpec, options: dict) -> tuple[EncoderSpec, "WeightsSource", dict]:
    """Suite options -> (the spec the vectors will come from, where its weights are, runtime options)."""
    check_options(spec, options, WEIGHT_OPTIONS + RUNTIME_OPTIONS)
    if options.get("revision"):
        spec = spec.replace(revision=str(options["revision"]))
    weights = WeightsSource.of(spec.name, spec.hub_repo, spec.revision, options.get("weights"), spec.how_to_get)
    if options.get("weights"):
        # a local file is not the hub's revision, and its name says nothing of what it holds: the
        # revision (so the cache key and the records) carries the file's identity
        mode = options.get("weights_identity", "mtime")
        if mode not in IDENTITY_MODES:
            raise EncoderError(f"encoder {spec.name!r}: weights_identity must be one of {IDENTITY_MODES}, got {mode!r}")
        spec = spec.replace(revision=f"local:{weights.local_path.name}:{mode}-{path_identity(weights.local_path, mode)}")
    return spec, weights, {k: options[k] for k in RUNTIME_OPTIONS if k in options}


def path_identity(path: Path, mode: str = "mtime") -> str:
    """What a weights file (or every file at the top of a weights folder, where weight and config files are
    looked up) holds: size and modification time (`mtime`: a file replaced in place changes it, at no
    cost), or the bytes' SHA-256 (`content`: reads every byte; survives copies that reset times)."""
    import hashlib

    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode() + b"\x00")
        if mode == "content":
            with open(file, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        else:
            stat = file.stat()
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class WeightsSource:
    encoder: str
    repo_id: str | None = None  # a Hugging Face repository, or None where weights are not on the hub
    revision: str | None = None
    local_path: Path | None = None  # the suite's `weights:` option: a folder or one weights file
    how_to_get: str = ""  # for weights off the hub: where a user downloads them

    @classmethod
    def of(cls, encoder: str, repo_id: str | None, revision: str | None, weights=None, how_to_get: str = ""):
        local = Path(weights).expanduser() if weights else None
        if local is not None and not local.exists():
            raise EncoderError(f"encoder {encoder!r}: weights path {local} does not exist (option `weights`)")
        return cls(encoder, repo_id, pinned(revision), local, how_to_get)

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.revision or 'main'}" if self.repo_id else "local weights"

    def file(self, *candidates: str, weights: bool = True) -> Path:
        """The first candidate file that exists locally, is cached, or downloads.

        A `weights:` path that is a single file answers every weights request; config requests look
        beside it.
        """
        if self.local_path is not None:
            return self._local_file(candidates, weights)
        if self.repo_id is None:
            raise EncoderError(
                f"encoder {self.encoder!r} has no public hub download: {self.how_to_get or 'obtain its checkpoint'}, "
                f"then set `weights: /path/to/checkpoint` for it in the suite"
            )
        return self._hub_file(candidates)

    def _local_file(self, candidates, weights: bool) -> Path:
        if self.local_path.is_file():
            if weights:
                return self.local_path
            folder = self.local_path.parent
        else:
            folder = self.local_path
        for name in candidates:
            if (folder / name).is_file():
                return folder / name
        raise EncoderError(f"encoder {self.encoder!r}: none of {list(candidates)} in {folder} (option `weights`)")

    def _hub_file(self, candidates) -> Path:
        hub = require("huggingface_hub", self.encoder)
        for name in candidates:  # the cache first, without touching the network
            try:
                return Path(hub.hf_hub_download(self.repo_id, name, revision=self.revision, local_files_only=True))
            except Exception:  # noqa: BLE001 - any failure here only means "not cached"
                continue
        if offline():
            raise EncoderError(
                f"encoder {self.encoder!r}: {' or '.join(candidates)} of {self.label} is not in the local Hugging Face "
                f"cache and the hub is offline; on a connected machine run `hf download {self.repo_id}"
                f"{f' --revision {self.revision}' if self.revision else ''}` (same HF_HOME), or set "
                f"`weights: /path` for this encoder in the suite"
            )
        return self._download(hub, candidates)

    def _download(self, hub, candidates) -> Path:
        from huggingface_hub.errors import EntryNotFoundError

        last: Exception | None = None
        for name in candidates:
            try:
                return Path(hub.hf_hub_download(self.repo_id, name, revision=self.revision))
            except EntryNotFoundError as exc:  # try the next file name
                last = exc
            except Exception as exc:  # noqa: BLE001 - network, gated licence, bad revision: one line
                raise EncoderError(
                    f"encoder {self.encoder!r}: could not download {name} from {self.label} "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); gated models need "
                    f"their licence accepted and `hf auth login`, or set `weights: /path` in the suite"
                ) from None
        raise EncoderError(f"encoder {self.encoder!r}: {self.label} has none of {list(candidates)} ({last})")


def load_state_dict(path: Path, encoder: str) -> dict:
    """A checkpoint as a flat dict of tensors, never running pickled code.

    safetensors when it can; otherwise torch.load(weights_only=True), which also accepts the few
    harmless types training scripts save beside the weights (`allowed_globals`). Wrappers that training
    scripts add ('model', 'state_dict', a DataParallel 'module.' prefix) are removed.
    """
    path = Path(path)
    state = _read_safetensors(path, encoder) if path.suffix == ".safetensors" else _read_pickle(path, encoder)
    for wrapper in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(wrapper), dict):
            state = state[wrapper]
    if not isinstance(state, dict):
        raise EncoderError(f"encoder {encoder!r}: {path.name} does not hold a state dict")
    if state and all(k.startswith("module.") for k in state):
        state = {k[len("module."):]: v for k, v in state.items()}
    return state


def _read_safetensors(path: Path, encoder: str) -> dict:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, ValueError, OSError) as exc:
        detail = " ".join(str(exc).split())[:200]
        raise EncoderError(
            f"encoder {encoder!r}: {path}: not a readable .safetensors file ({detail}); "
            "download or convert the weights again"
        ) from None


def _read_pickle(path: Path, encoder: str):
    import torch

    try:
        with torch.serialization.safe_globals(allowed_globals()):
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickle refused or unreadable: say so in one line
        refused = _refused_type(str(exc))
        what = f"it holds a pickled {refused}, which is not allowed" if refused else type(exc).__name__
        raise EncoderError(
            f"encoder {encoder!r}: {path.name} cannot be loaded with torch.load(weights_only=True) ({what}); "
            "convert it to .safetensors in a trusted environment"
        ) from None


def _refused_type(message: str) -> str | None:
    """The name torch's weights-only unpickler refused (a global to call, or a class to build)."""
    found = re.search(r"GLOBAL ([\w.]+)|but got <class '([\w.]+)'>", message)
    return (found.group(1) or found.group(2)) if found else None


def allowed_globals() -> list:
    """What a checkpoint may hold besides tensors and plain containers: the argparse hyper-parameters
    training scripts save next to the weights (MAE/RETFound, BEiT/CAE/PanDerm keep `args`), and the
    numpy scalars and dtypes found inside them. Each only rebuilds a value; none can run code."""
    import argparse

    import numpy

    scalar = _numpy_scalar()
    # a dtype is rebuilt through its class (numpy.dtypes.Float64DType, ...): numeric ones only, no object dtype
    dtype_classes = {type(numpy.dtype(code)) for code in "?bhilqBHILQefdgFDG"}
    # numpy 1.x pickles name the scalar reconstructor numpy.core..., numpy 2 numpy._core...
    return [argparse.Namespace, numpy.dtype, *sorted(dtype_classes, key=str),
            (scalar, "numpy.core.multiarray.scalar"),
            (scalar, "numpy._core.multiarray.scalar")]


def _numpy_scalar():
    try:
        from numpy._core.multiarray import scalar  # numpy >= 2
    except ImportError:
        from numpy.core.multiarray import scalar  # numpy 1.x
    return scalar


def load_strict(module, state: dict, encoder: str, ignore_prefixes: tuple[str, ...] = ()) -> None:
    """Load every tensor the module needs; keys starting with `ignore_prefixes` are known leftovers
    (a pretraining decoder, a classifier). Anything else missing or unexpected is an error, because a
    silently half-loaded encoder would be benchmarked as if it were the real one.
    """
    state = {k: v for k, v in state.items() if not k.startswith(ignore_prefixes)} if ignore_prefixes else state
    missing, unexpected = module.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise EncoderError(
            f"encoder {encoder!r}: checkpoint does not match the architecture: {len(missing)} missing keys "
            f"(e.g. {missing[:3]}), {len(unexpected)} unexpected keys (e.g. {unexpected[:3]})"
        )
