"""What every torch-backed encoder shares: device, precision, crop, normalisation, batches.

`TorchEncoderBase` owns the device (cuda, then mps, then cpu), optional bf16/fp16 autocast on a GPU,
`torch.inference_mode`, the channel order and the mean/std normalisation (the engine has already made
the card's square input, `crsbench.encoders.pixels`); a subclass only builds its model and says which output is
the embedding.
"""

from __future__ import annotations

import contextlib

import numpy as np

from crsbench.encoders.base import EncoderBase
from crsbench.encoders.spec import EncoderSpec
from crsbench.errors import EncoderError

# "auto" is float32 on every device (what records are compared against); "bf16" and "fp16" autocast on a GPU
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
RUNTIME_OPTIONS = ("device", "precision")  # suite options every torch encoder takes


def select_device(preference: str = "auto") -> str:
    """'auto' -> cuda if present, else mps, else cpu; anything else is passed to torch as given."""
    import torch

    if preference != "auto":
        return preference
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def resolve_precision(device: str, precision: str = "auto") -> str:
    """'auto' is fp32 everywhere: reduced precision changes the vectors, so it is asked for by name. bf16
    and fp16 autocast only on a CUDA device; on cpu and mps they mean fp32 (CPU autocast is slower, not
    faster)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision if device.startswith("cuda") and precision in _AUTOCAST_DTYPES else "fp32"


_AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_context(device: str, precision: str):
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.split(":")[0], dtype=getattr(torch, _AUTOCAST_DTYPES[precision]))


class TorchEncoderBase(EncoderBase):
    """An Encoder whose model is a torch module built lazily on first use.

    Subclasses implement `build_model()` (returns a module, weights loaded) and
    `embed(model, pixels)` (float tensor [n, 3, S, S] -> [n, d], S = spec.input_size).
    """

    outputs: tuple[str, ...] = ()  # the spec outputs this class can return; empty: any

    def __init__(self, spec: EncoderSpec, *, device: str = "auto", precision: str = "auto"):
        if self.outputs and spec.output not in self.outputs:
            raise EncoderError(
                f"encoder {spec.name!r}: {type(self).__name__} returns {' or '.join(self.outputs)}, not {spec.output!r}"
            )
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        # the device, and with it the precision, is chosen on first use: building an encoder to check a
        # suite (`crsbench validate`) then needs no torch
        self._asked = (device, precision)
        self._spec_given = spec
        self._chosen: tuple[str, str, EncoderSpec] | None = None
        self._model = None

    def _choose(self) -> tuple[str, str, EncoderSpec]:
        if self._chosen is None:
            device = select_device(self._asked[0])
            precision = resolve_precision(device, self._asked[1])
            # reduced precision changes the vectors, so it is part of the spec's fingerprint
            spec = self._spec_given.replace(precision=None if precision == "fp32" else precision)
            self._chosen = (device, precision, spec)
        return self._chosen

    @property
    def device(self) -> str:
        return self._choose()[0]

    @property
    def precision(self) -> str:
        return self._choose()[1]

    @property
    def spec(self) -> EncoderSpec:
        return self._choose()[2]

    @spec.setter
    def spec(self, spec: EncoderSpec) -> None:
        device, precision, _ = self._choose()
        self._chosen = (device, precision, spec)

    def build_model(self):
        raise NotImplementedError

    def embed(self, model, pixels):
        raise NotImplementedError

    @property
    def model(self):
        if self._model is None:
            self._model = self.build_model().eval().to(self.device)
        return self._model

    def preprocess(self, images: np.ndarray):
        """Pixels in [0, 255] [n, S, S, 3] (the engine's float32; uint8 accepted) -> normalised float32
        [n, 3, S, S] on the device, channels in the order the checkpoint was trained on."""
        import torch

        x = torch.from_numpy(np.ascontiguousarray(images)).to(self.device, non_blocking=True).permute(0, 3, 1, 2)
        if self.spec.channel_order == "BGR":
            x = x.flip(1)
        x = x.float().div(255.0)
        mean = torch.tensor(self.spec.mean, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(self.spec.std, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        return (x - mean) / std

    def encode(self, images: np.ndarray) -> np.ndarray:
        import torch

        model = self.model
        with torch.inference_mode(), autocast_context(self.device, self.precision):
            vectors = self.embed(model, self.preprocess(images))
        return vectors.float().cpu().numpy()
