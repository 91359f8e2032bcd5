"""The embedding step as executor jobs: every matrix a run still lacks, cut into row shards.

A shard is one (encoder, dataset split, image condition) over rows [start, stop): small values that
travel to a worker, which resolves the suite itself (from the same files, on a shared filesystem),
extracts the rows and returns the matrix. The caller joins a matrix's shards in row order and writes
it to the cache (atomically, as the in-process engine does), so workers never write results.

Shard boundaries fall on multiples of the batch size, so a sharded matrix is encoded in exactly the
batches an unsharded extraction would use, and comes out with the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from crsbench.datasets.decoded import DecodedStore
from crsbench.embed.cache import Embedder, Embedding, EmbeddingCache, content_hash, default_cache_dir
from crsbench.errors import DataError
from crsbench.core.progress import Progress
from crsbench.run.resolve import Resolved, resolve
from crsbench.plan.suite import Suite
from crsbench.run.task_data import Needed, pair_needs


@dataclass(frozen=True)
class Shard:
    key: str  # the embedding cache key the caller computed; a worker checks it reads the same data
    needed: Needed
    start: int
    stop: int


@dataclass(frozen=True)
class ShardResult:
    matrix: np.ndarray
    forward_passes: int


def shard_bounds(n: int, shard_images: int | None, batch_size: int) -> list[tuple[int, int]]:
    """[start, stop) row ranges covering n rows; every start is a multiple of batch_size."""
    if n == 0:
        return [(0, 0)]
    step = n if shard_images is None else max(batch_size, shard_images // batch_size * batch_size)
    return [(start, min(start + step, n)) for start in range(0, n, step)]


# One suite's resolved data and engine per process: a worker resolves once and reuses it for every
# shard; the caller registers its own, so in-process jobs reuse what the run already built.
_CONTEXT: dict[str, tuple[Resolved, Embedder]] = {}


def register_context(suite: Suite, resolved: Resolved, embedder: Embedder) -> None:
    _CONTEXT.clear()
    _CONTEXT[suite.suite_hash()] = (resolved, embedder)


def release_context() -> None:
    _CONTEXT.clear()


def _context(suite: Suite) -> tuple[Resolved, Embedder]:
    name = suite.suite_hash()
    if name not in _CONTEXT:
        _CONTEXT.clear()  # one suite at a time: a worker does not keep old datasets alive
        # a worker on another node keeps decoded images on its own disk, beside its copy of the cache
        decoded = DecodedStore(Path(suite.cache or default_cache_dir()) / "decoded")
        embedder = Embedder(batch_size=suite.batch_size, num_workers=suite.num_workers, decoded=decoded)
        _CONTEXT[name] = (resolve(suite), embedder)
    return _CONTEXT[name]


class _Rows:
    """Rows [start, stop) of an image source, as an image source."""

    def __init__(self, images, start: int, stop: int):
        self.images, self.start, self.stop = images, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __getitem__(self, i: int) -> np.ndarray:
        return self.images[self.start + int(i)]

    def batch(self, indices) -> np.ndarray:
        from crsbench.datasets.base import images_batch

        return images_batch(self.images, self.start + np.asarray(indices))


def extract_shard(shard: Shard, suite: Suite) -> ShardResult:
    resolved, embedder = _context(suite)
    request = shard.needed.request(resolved)
    if request.key() != shard.key:
        raise DataError(
            f"{request.dataset.meta.name}:{request.split}: this worker resolved different data than the "
            "coordinator; every node must see the same dataset files and encoder weights"
        )
    split = request.dataset.split(request.split)
    rows = _Rows(embedder.through_store(split.images), shard.start, shard.stop)
    before = embedder.forward_passes
    label = f"{Embedder._label(request)} rows {shard.start}-{shard.stop}"
    matrix = embedder.extract(request.encoder, rows, split.ids[shard.start : shard.stop], request.condition, label)
    return ShardResult(matrix, embedder.forward_passes - before)


def missing_embeddings(todo: dict, resolved: Resolved, cache: EmbeddingCache) -> dict[str, Needed]:
    """Cache key -> what to extract, for every matrix the pending records read that the cache lacks."""
    wanted: dict[str, Needed] = {}
    for unit, conditions in todo.items():
        for needed in pair_needs(unit.encoder, unit.task, conditions):
            key = needed.request(resolved).key()
            if key not in wanted and not cache.has(key):
                wanted[key] = needed
    return wanted


def extract_missing(suite: Suite, todo: dict, resolved: Resolved, cache: EmbeddingCache, executor,
                    progress: Progress) -> int:
    """Fill the cache with every matrix `todo` reads; returns the encoder batches run."""
    wanted = missing_embeddings(todo, resolved, cache)
    shards, sizes = [], {}
    for key, needed in wanted.items():
        request = needed.request(resolved)
        n = len(request.dataset.split(request.split).ids)
        bounds = shard_bounds(n, executor.shard_images, suite.batch_size)
        sizes[key] = len(bounds)
        shards += [Shard(key, needed, start, stop) for start, stop in bounds]
    if not shards:
        return 0
    parts: dict[str, dict[int, np.ndarray]] = {key: {} for key in wanted}
    passes = 0
    work: Callable = partial(extract_shard, suite=suite)
    with progress.task(f"embed {len(wanted)} matrices", total=sum(s.stop - s.start for s in shards), unit="img") as bar:
        for shard, result in executor.map(work, shards, gpu=True):
            parts[shard.key][shard.start] = result.matrix
            passes += result.forward_passes
            bar.advance(shard.stop - shard.start)
            if len(parts[shard.key]) == sizes[shard.key]:
                _save(cache, shard.key, wanted[shard.key], resolved, parts.pop(shard.key))
    return passes


def _save(cache: EmbeddingCache, key: str, needed: Needed, resolved: Resolved, parts: dict[int, np.ndarray]) -> None:
    matrix = np.concatenate([parts[start] for start in sorted(parts)])
    cache.save(key, Embedding(matrix, content_hash(matrix), from_cache=False), needed.request(resolved).describe())
