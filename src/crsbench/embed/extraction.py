"""The batch pipeline that feeds the extraction engine.

`iter_batches` reads, alters and resizes images in DataLoader workers, in split order, so the
engine's rows always line up with the split's ids. What torch encoders share (device, precision,
crop, normalisation) lives in `crsbench.encoders.torch_base`.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np

from crsbench.datasets.base import ImageSource, images_batch

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
        elif isinstance(batch, list):
            batch = np.stack(batch)  # unprepared images must share a size to travel as one tensor
        # tensors, so the DataLoader can pin them for an asynchronous copy to the GPU
        # the batch keeps its dtype: uint8 as stored, float32 once prepared (never rounded back)
        return torch.from_numpy(index), torch.from_numpy(np.ascontiguousarray(batch))


def iter_batches(
    images: ImageSource,
    ids: Sequence[str],
    batch_size: int = 32,
    num_workers: int = 0,
    pin_memory: bool | None = None,
    prepare: BatchPrepare | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (indices, batch [b, H, W, 3]) in split order, whatever the number of workers.

    The batch is uint8 as stored, or what `prepare` returns (the engine: float32 pixels in [0, 255]).

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
