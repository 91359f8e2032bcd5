"""Embedding step: (encoder, dataset split, image condition) -> cached float32 matrix.

Nothing downstream of this module touches images or models. The cache is a wrapper around the
extraction engine: `CachedEmbedder(embedder, cache).embed(request)` returns the stored matrix when
its content hash verifies, and otherwise computes and stores it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np

from crsbench.core.atomic import atomic_write
from crsbench.plan.conditions import CLEAN, Condition
from crsbench.datasets.base import Dataset, ImageSource
from crsbench.datasets.decoded import DecodedStore
from crsbench.encoders.base import Encoder
from crsbench.core.hashing import sha256_of
from crsbench.encoders.pixels import PixelRule, prepare_batch
from crsbench.core.progress import Progress, SilentProgress


@dataclass(frozen=True)
class EncoderFacts:
    """What the embedding step reads from an encoder, read in one place (`encoder_facts`)."""

    name: str
    fingerprint: str
    revision: str | None
    pixels: PixelRule  # how the engine makes this encoder's input from a decoded image
    embed_dim: int | None


def encoder_facts(encoder: Encoder) -> EncoderFacts:
    spec = encoder.spec
    return EncoderFacts(spec.name, spec.fingerprint(), spec.revision, spec.pixels(), spec.embed_dim)


@dataclass(frozen=True)
class EmbeddingRequest:
    encoder: Encoder
    dataset: Dataset
    split: str
    condition: Condition = CLEAN

    def key(self) -> str:
        return sha256_of(
            EMBEDDING_VERSION, encoder_facts(self.encoder).fingerprint, self.dataset.meta.name, self.dataset.fingerprint(), self.split,
            self.condition.cache_id(),
        )[:32]

    def describe(self) -> dict:
        facts = encoder_facts(self.encoder)
        return {
            "embedding_version": EMBEDDING_VERSION,
            "encoder": facts.name,
            "encoder_fingerprint": facts.fingerprint,
            "pixels": facts.pixels.describe(),
            "dataset": self.dataset.meta.name,
            "dataset_fingerprint": self.dataset.fingerprint(),
            "split": self.split,
            "condition": self.condition.cache_id(),
        }


@dataclass(frozen=True)
class Embedding:
    matrix: np.ndarray  # float32 [n, d], rows in the split's order
    content_hash: str
    from_cache: bool


def content_hash(matrix: np.ndarray) -> str:
    digest = hashlib.sha256(f"{matrix.dtype.str}{matrix.shape}".encode())
    # fed from the array's own buffer: no byte copy of a matrix that may be larger than memory would like
    digest.update(np.ascontiguousarray(matrix).reshape(-1).view(np.uint8))
    return digest.hexdigest()[:32]


# Part of every embedding cache key: bumped whenever the engine's pixels change, so an embedding made by
# an older engine is never served. 2: one float resize, no rounding to uint8 before the encoder.
# 3: the one resize starts from the decoded original, by the encoder's pixel rule.
EMBEDDING_VERSION = "embed-3"


def _prepare(condition: Condition, pixels: PixelRule, batch, ids: Sequence[str]) -> np.ndarray:
    """The condition on the decoded images, then the encoder's single float resize; runs inside
    DataLoader workers, hence module-level (picklable)."""
    return prepare_batch(condition.apply(batch, ids), pixels)


def _prepare_for_device(condition: Condition, pixels: PixelRule, batch, ids: Sequence[str]) -> np.ndarray:
    """For an encoder that resizes on its device: the condition alone where the batch is uint8 images of one
    size, the whole preparation otherwise (float32, resized). The dtype tells the two apart: a prepared
    batch is always float32."""
    altered = condition.apply(batch, ids)
    uniform_uint8 = isinstance(altered, np.ndarray) and altered.dtype == np.uint8
    return altered if uniform_uint8 else prepare_batch(altered, pixels)


class Embedder:
    """The extraction engine: batches in split order, condition, resize, encode.

    Each decoded uint8 image, at the resolution it was acquired (or stored) at, is altered by the
    condition (perturbations are defined relative to the image, so they mean the same whatever encoder
    follows), then made into the encoder's input by one float resize (`spec.pixels()`); `encode`
    receives float32 [n, S, S, 3] on 0-255. A torch encoder on a GPU is sent the uint8 images instead
    (`encode_resizing`), where a batch's images share a size, and the same resize runs on its device.

    Batches come from a DataLoader (`num_workers` processes prepare them while the encoder runs);
    0 workers is the default because on a small CPU a worker competes with the encoder's threads.
    """

    def __init__(self, batch_size: int = 32, progress: Progress | None = None, num_workers: int = 0,
                 pin_memory: bool | None = None, decoded: DecodedStore | None = None,
                 resize_on_device: bool | None = None):
        self.batch_size = batch_size
        self.decoded = decoded  # decoded image files kept between passes (None: decode on every pass)
        self.progress = progress or SilentProgress()
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        # None: where the encoder says (`resizes_on_device`: a torch encoder on a GPU); True/False: forced
        self.resize_on_device = resize_on_device
        self.forward_passes = 0  # counted so tests can prove a warm cache runs none

    def embed(self, request: EmbeddingRequest) -> Embedding:
        split = request.dataset.split(request.split)
        matrix = self.extract(request.encoder, split.images, split.ids, request.condition, self._label(request))
        return Embedding(matrix, content_hash(matrix), from_cache=False)

    def extract(
        self, encoder: Encoder, images: ImageSource, ids: Sequence[str], condition: Condition, label: str
    ) -> np.ndarray:
        from crsbench.embed.extraction import iter_batches

        n = len(images)
        chunks = []
        facts = encoder_facts(encoder)
        images = self.through_store(images)
        on_device = hasattr(encoder, "encode_resizing") and (
            encoder.resizes_on_device if self.resize_on_device is None else self.resize_on_device)
        prepare = partial(_prepare_for_device if on_device else _prepare, condition, facts.pixels)
        with self.progress.task(label, total=n, unit="img") as task:
            for index, batch in iter_batches(images, ids, self.batch_size, num_workers=self.num_workers,
                                             pin_memory=self.pin_memory, prepare=prepare):
                if batch.dtype == np.uint8:  # decoded pixels as stored: the device resizes them
                    vectors = encoder.encode_resizing(batch, facts.pixels)
                else:
                    vectors = encoder.encode(batch)
                self.forward_passes += 1
                chunks.append(np.asarray(vectors, dtype=np.float32))
                task.advance(len(index))
        return np.concatenate(chunks) if chunks else np.zeros((0, facts.embed_dim or 0), np.float32)

    def through_store(self, images: ImageSource) -> ImageSource:
        """File-backed images read through the store of decoded pixels, when there is one."""
        if self.decoded is not None and hasattr(images, "with_store"):
            return images.with_store(self.decoded)
        return images

    @staticmethod
    def _label(request: EmbeddingRequest) -> str:
        condition = request.condition.cache_id()
        suffix = "" if condition == "clean" else f" [{condition}]"
        return f"embed {encoder_facts(request.encoder).name} / {request.dataset.meta.name}:{request.split}{suffix}"


def default_cache_dir() -> Path:
    """$CRSBENCH_CACHE, else the user's cache folder: <XDG cache>/crsbench/embeddings."""
    base = os.environ.get("CRSBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "crsbench"
    )
    return Path(base) / "embeddings"


ORPHAN_AGE_S = 24 * 3600  # a temporary file of another host is removed only when this old


class EmbeddingCache:
    """One `.npy` plus a `.json` sidecar per key. The sidecar holds the matrix's content hash and the key
    material (`EmbeddingRequest.describe()`): a load checks both, so a file copied under another key, or
    truncated, is rejected (and recomputed), never served.

    Opening a cache removes the temporary files of writers that died mid-write (a pid of this host that
    is gone, or a file older than ORPHAN_AGE_S); a live writer's file is left alone.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.rejected: list[str] = []  # keys whose files were truncated, tampered with, or of another key
        self.orphans_removed = self._remove_orphans()

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.root / f"{key}.npy", self.root / f"{key}.json"

    def has(self, key: str) -> bool:
        """Both files are there (`load` still verifies them: a bad pair is recomputed then)."""
        return all(path.exists() for path in self._paths(key))

    def load(self, key: str, description: dict | None = None) -> Embedding | None:
        array_path, meta_path = self._paths(key)
        if not (array_path.exists() and meta_path.exists()):
            return None
        try:
            meta = json.loads(meta_path.read_text())
            # memory-mapped: a fit reads the rows it needs, and the pages stay the operating system's to evict
            matrix = np.load(array_path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError, json.JSONDecodeError):
            self.rejected.append(key)
            return None
        digest = content_hash(matrix)
        if digest != meta.get("content_hash") or list(matrix.shape) != meta.get("shape"):
            self.rejected.append(key)
            return None
        if description is not None and any(meta.get(name) != value for name, value in description.items()):
            self.rejected.append(key)  # a valid pair, but made for another request
            return None
        return Embedding(matrix, digest, from_cache=True)

    def save(self, key: str, embedding: Embedding, description: dict) -> None:
        array_path, meta_path = self._paths(key)
        # write-then-rename: a crash leaves either the old file or the new one, never half of one
        atomic_write(array_path, lambda f: np.save(f, embedding.matrix, allow_pickle=False))
        meta = {**description, "content_hash": embedding.content_hash, "shape": list(embedding.matrix.shape)}
        atomic_write(meta_path, lambda f: f.write(json.dumps(meta, indent=1).encode()))

    def _remove_orphans(self) -> int:
        removed = 0
        for tmp in self.root.glob("*.tmp"):
            if _orphaned(tmp):
                tmp.unlink(missing_ok=True)
                removed += 1
        return removed


def _orphaned(tmp: Path) -> bool:
    try:
        age = time.time() - tmp.stat().st_mtime
    except FileNotFoundError:
        return False  # its writer just renamed it
    parts = tmp.name.split(".")
    # <key>.<npy|json>.<host>.<pid>.<random>.tmp; a host name may hold dots
    pid = parts[-3] if len(parts) >= 6 else ""
    host = ".".join(parts[2:-3])
    if host == platform.node() and pid.isdigit():
        return not _pid_alive(int(pid))
    return age > ORPHAN_AGE_S


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CachedEmbedder:
    """Wraps an embedder: each request is computed once, then served from the verified cache."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache):
        self.embedder = embedder
        self.cache = cache

    def embed(self, request: EmbeddingRequest) -> Embedding:
        key = request.key()
        cached = self.cache.load(key, request.describe())
        if cached is not None:
            return cached
        embedding = self.embedder.embed(request)
        self.cache.save(key, embedding, request.describe())
        return embedding
