"""What every torch-backed encoder shares, and the batch pipeline that feeds the extraction engine.

`TorchEncoderBase` owns the device (cuda, then mps, then cpu), optional bf16/fp16 autocast on a GPU,
`torch.inference_mode`, the centre crop and the mean/std normalisation; an adapter only builds its
model and says which output is the embedding. `iter_batches` reads, alters and resizes images in
DataLoader workers, in split order, so the engine's rows always line up with the split's ids.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import numpy as np

from crsbench.datasets.base import ImageSource, images_batch
from crsbench.encoders.base import EncoderMeta

# "auto" picks the fastest safe choice for the device; "fp32" turns autocast off everywhere
PRECISIONS = ("auto", "bf16", "fp16", "fp32")


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
    """Autocast only on a GPU: on cpu and mps 'auto' means fp32 (CPU autocast is slower, not faster)."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    on_cuda = device.startswith("cuda")
    if precision == "auto":
        if not on_cuda:
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return precision if on_cuda or precision == "fp32" else "fp32"


_AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_context(device: str, precision: str):
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.split(":")[0], dtype=getattr(torch, _AUTOCAST_DTYPES[precision]))


def center_crop(x, size: int):
    """[n, C, H, W] -> [n, C, size, size], the same offsets torchvision's CenterCrop uses."""
    h, w = x.shape[-2:]
    if h == size and w == size:
        return x
    top, left = int(round((h - size) / 2.0)), int(round((w - size) / 2.0))
    return x[..., top : top + size, left : left + size]


class TorchEncoderBase:
    """An Encoder whose model is a torch module built lazily on first use.

    Subclasses implement `build_model()` (returns an eval-mode module, weights loaded) and
    `embed(model, pixels)` (float tensor [n, 3, crop, crop] -> [n, d]).
    """

    def __init__(self, meta: EncoderMeta, *, crop: int | None = None, device: str = "auto", precision: str = "auto"):
        self.device = select_device(device)
        self.precision = resolve_precision(self.device, precision)
        if self.precision != "fp32":
            # reduced precision changes the vectors, so it must change the cache key
            meta = _with_extra(meta, precision=self.precision)
        self.meta = meta
        self.crop = crop or meta.input_size
        self._model = None

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
        """uint8 [n, S, S, 3] -> normalised float32 [n, 3, crop, crop] on the device.

        The uint8 batch crosses to the device before conversion: a quarter of the bytes of float32.
        """
        import torch

        x = torch.from_numpy(np.ascontiguousarray(images)).to(self.device, non_blocking=True)
        x = center_crop(x.permute(0, 3, 1, 2), self.crop).float().div_(255.0)
        mean = torch.tensor(self.meta.mean, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(self.meta.std, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        return (x - mean) / std

    def encode(self, images: np.ndarray) -> np.ndarray:
        import torch

        model = self.model
        with torch.inference_mode(), autocast_context(self.device, self.precision):
            vectors = self.embed(model, self.preprocess(images))
        return vectors.float().cpu().numpy()


def _with_extra(meta: EncoderMeta, **extra) -> EncoderMeta:
    from dataclasses import replace

    return replace(meta, extra={**meta.extra, **extra})


# --- the batch pipeline --------------------------------------------------------------------------

BatchPrepare = Callable[[np.ndarray, Sequence[str]], np.ndarray]


class _BatchesDataset:
    """Item b is the whole batch b: workers read with the source's vectorised `batch` when it has one."""

    def __init__(self, images: ImageSource, ids: Sequence[str], batch_size: int, prepare: BatchPrepare | None):
        self.images, self.ids, self.batch_size, self.prepare = images, list(ids), batch_size, prepare
        self.n = len(images)

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __getitem__(self, b: int):
        import torch

        index = np.arange(b * self.batch_size, min((b + 1) * self.batch_size, self.n))
        batch = images_batch(self.images, index)
        if self.prepare is not None:
            batch = self.prepare(batch, [self.ids[i] for i in index])
        # tensors, so the DataLoader can pin them for an asynchronous copy to the GPU
        return torch.from_numpy(index), torch.from_numpy(np.ascontiguousarray(batch, dtype=np.uint8))


def iter_batches(
    images: ImageSource,
    ids: Sequence[str],
    batch_size: int = 32,
    num_workers: int = 0,
    pin_memory: bool | None = None,
    prepare: BatchPrepare | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (indices, uint8 batch [b, H, W, 3]) in split order, whatever the number of workers.

    `prepare(batch, batch_ids)` runs inside the workers (image condition, resize); with workers it
    must be picklable (a module-level function or functools.partial). `pin_memory=None` pins when
    CUDA is available.
    """
    import torch
    from torch.utils.data import DataLoader

    if len(ids) != len(images):
        raise ValueError(f"iter_batches: {len(ids)} ids for {len(images)} images")
    if pin_memory is None:
        pin_memory = torch.cuda.is_available()
    loader = DataLoader(
        _BatchesDataset(images, ids, batch_size, prepare),
        batch_size=None,  # items are already batches
        shuffle=False,  # a sequential sampler: order is the split's order, with or without workers
        num_workers=num_workers,
        pin_memory=pin_memory,
        persistent_workers=False,
        prefetch_factor=2 if num_workers > 0 else None,
    )
    for index, batch in loader:
        yield index.numpy(), batch.numpy()
