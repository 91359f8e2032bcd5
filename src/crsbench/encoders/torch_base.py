"""What every torch-backed encoder shares: device, precision, crop, normalisation, batches.

`TorchEncoderBase` owns the device (cuda, then mps, then cpu), optional bf16/fp16 autocast where the
device multiplies in it natively (channels-last then too), `torch.inference_mode`, the channel order
and the mean/std normalisation (the engine has already made the card's square input,
`crsbench.encoders.pixels`); a subclass only builds its model and says which output is the embedding.
"""

from __future__ import annotations

import contextlib

import numpy as np

from crsbench.core.hardware import bfloat16_is_native, choose_device
from crsbench.encoders.base import EncoderBase
from crsbench.encoders.spec import EncoderSpec
from crsbench.errors import EncoderError

# "auto" is float32 on every device (what records are compared against); "bf16" and "fp16" are asked by name
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
RUNTIME_OPTIONS = ("device", "precision")  # suite options every torch encoder takes


def resolve_precision(device: str, precision: str = "auto") -> str:
    """'auto' is fp32 everywhere: reduced precision changes the vectors, so it is asked for by name. What
    is asked runs only where the device multiplies in it natively, else fp32: bf16 on a CUDA device of
    compute capability 8.0 and above or a CPU with AVX512-BF16 (`bfloat16_is_native`), fp16 on a CUDA
    device. Autocast elsewhere converts each operand first and runs slower than float32."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "bf16" and device.split(":")[0] in ("cuda", "cpu") and bfloat16_is_native(device):
        return "bf16"
    return "fp16" if precision == "fp16" and device.startswith("cuda") else "fp32"


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
            device = choose_device(self._asked[0])
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
            model = self.build_model().eval().to(self.device)
            if self.precision != "fp32":
                # reduced-precision convolutions run fastest on channels-last weights (oneDNN, cuDNN), and the
                # engine's [n, S, S, 3] pixels are channels-last already; float32 keeps the layout its records had
                import torch

                model = model.to(memory_format=torch.channels_last)
            self._model = model
        return self._model

    @property
    def resizes_on_device(self) -> bool:
        """On a GPU the engine sends uint8 batches as decoded (a quarter of float32's bytes) and the resize
        runs there (`encode_resizing`); on a CPU the DataLoader's workers resize while this process encodes."""
        return self.device.startswith("cuda")

    def preprocess(self, images: np.ndarray):
        """Pixels in [0, 255] [n, S, S, 3] (the engine's float32; uint8 accepted) -> normalised float32
        [n, 3, S, S] on the device, channels in the order the checkpoint was trained on."""
        return self._normalised(self._on_device(images))

    def _on_device(self, images: np.ndarray):
        """[n, H, W, 3] pixels (uint8 or float) -> float32 [n, 3, H, W] on the device, moved as they are."""
        import torch

        x = torch.from_numpy(np.ascontiguousarray(images)).to(self.device, non_blocking=True)
        return x.permute(0, 3, 1, 2).float()

    def _normalised(self, x):
        """float32 [n, 3, S, S] on 0-255 on the device -> the checkpoint's channel order and normalisation."""
        import torch

        if self.spec.channel_order == "BGR":
            x = x.flip(1)
        x = x.div(255.0)
        mean = torch.tensor(self.spec.mean, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(self.spec.std, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        x = (x - mean) / std
        return x if self.precision == "fp32" else x.contiguous(memory_format=torch.channels_last)

    def encode(self, images: np.ndarray) -> np.ndarray:
        return self._encoded(lambda: self.preprocess(images))

    def encode_resizing(self, images: np.ndarray, pixels) -> np.ndarray:
        """Decoded images [n, H, W, 3] of one shape (uint8 as stored, pinned by the DataLoader on a GPU) ->
        vectors: moved as they are, then resized by `pixels` (a `PixelRule`) and normalised on the device."""
        return self._encoded(lambda: self._normalised(pixels.resize_tensor(self._on_device(images))))

    def _encoded(self, prepared) -> np.ndarray:
        import torch

        model = self.model
        with torch.inference_mode(), autocast_context(self.device, self.precision):
            vectors = self.embed(model, prepared())
        return vectors.float().cpu().numpy()
