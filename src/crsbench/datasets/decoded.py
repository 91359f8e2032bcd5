"""Decoded pixels kept on disk, so an image file is decoded once for every encoder and condition.

Each encoder's input is made from the decoded original (`crsbench.encoders.pixels`), so a suite of E encoders
and C conditions would otherwise decode each test file E x C times: at ISIC or CheXpert scale decoding,
not the encoders, becomes the bill on a CPU. The store writes each decoded image once as an
uncompressed `.npy` (write-then-rename, so a crash never leaves half a file) and reads it back
memory-mapped. Its name is a hash of the file's path, size and modification time and of the decode
settings, so an edited file is decoded again and a stale copy is never served.

Cost: the decoded size, H x W x 3 bytes per image (a 1024 x 768 dermoscopy image is 2.4 MB; a
320 x 390 CheXpert-small X-ray 0.37 MB), against the compressed file's 5-10 times less; `max_side` on
the dataset caps it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

import numpy as np

from crsbench.core.atomic import atomic_write

# Bumped whenever decoding changes (orientation, 16-bit scaling, the cap's filter): old copies are not read.
DECODE_VERSION = "decode-1"


class DecodedStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.hits = 0
        self.decoded = 0

    def key(self, path: Path, max_side: int | None) -> str:
        stat = path.stat()
        material = "\x1f".join((DECODE_VERSION, str(path.resolve()), str(stat.st_size), str(stat.st_mtime_ns),
                                str(max_side)))
        return hashlib.sha256(material.encode()).hexdigest()[:32]

    def _file(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.npy"

    def get(self, path: Path, max_side: int | None, decode: Callable[[Path, int | None], np.ndarray]) -> np.ndarray:
        """The decoded image, from the store when a readable copy is there, else decoded and stored."""
        file = self._file(self.key(path, max_side))
        if file.exists():
            try:
                image = np.load(file, mmap_mode="r", allow_pickle=False)
                if image.dtype == np.uint8 and image.ndim == 3 and image.shape[-1] == 3:
                    self.hits += 1
                    return image
            except (OSError, ValueError, EOFError):
                pass  # unreadable: decode again and replace it
        image = decode(path, max_side)
        file.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(file, lambda f: np.save(f, image, allow_pickle=False))
        self.decoded += 1
        return image
