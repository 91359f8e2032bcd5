"""A bundle's probability vectors read by streaming: one Parquet row group of a test set's vectors at a
time, straight from the zip member (stored, so seekable), each vector checked (its test set's shape,
finite probabilities in [0, 1], its hash) and passed to a check of the records that point at it before
the next group is read.

Where the vectors are kept (compare, leaderboard), those past a small budget go to an unnamed temporary
file and each is mapped when asked for, as a results folder's vector files are: what scoring holds is
the vectors it is using, never the whole bundle at once. `verify` keeps none.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from typing import Callable

import numpy as np
import pyarrow.parquet as pq

from crsbench.core.printable import printable
from crsbench.results.predictions import probability_hash

ROW_GROUP_BYTES = 16 << 20  # what the writer puts in one row group of vectors: the reader's unit of memory


class VectorSink:
    """Where verified vectors go: kept in memory, spilled to a memory-mapped temporary file past
    `memory_bytes`, or dropped (`keep=False`)."""

    def __init__(self, keep: bool = True, memory_bytes: int = 32 << 20):
        self.keep, self.memory_bytes = keep, memory_bytes
        self.memory: dict[str, np.ndarray] = {}
        self.spilled: dict[str, tuple[int, tuple[int, int]]] = {}  # digest -> (offset in floats, shape)
        self.file = None
        self.floats = 0
        self.held = 0

    def add(self, digest: str, array: np.ndarray) -> None:
        if not self.keep:
            return
        if self.file is None and self.held + array.nbytes <= self.memory_bytes:
            self.memory[digest] = array
            self.held += array.nbytes
            return
        if self.file is None:
            self.file = tempfile.TemporaryFile(prefix="crsbench-vectors-")  # unnamed: gone when closed
        self.file.write(np.ascontiguousarray(array, dtype=np.float32).tobytes())
        self.spilled[digest] = (self.floats, array.shape)
        self.floats += array.size

    def vectors(self) -> Mapping[str, np.ndarray]:
        if self.file is None or not self.floats:
            return dict(self.memory)
        self.file.flush()
        return SpilledVectors(self.memory, self.spilled, self.file)


class SpilledVectors(Mapping):
    """Vectors by digest: those held in memory, and the spilled ones each mapped afresh when asked for and
    unmapped when its array is dropped (as a results folder's vector files are), so the pages scoring has
    read do not stay resident for the whole session."""

    def __init__(self, memory: dict[str, np.ndarray], spilled: dict[str, tuple[int, tuple[int, int]]], file):
        self.memory, self.spilled, self.file = memory, spilled, file

    def __getitem__(self, digest: str) -> np.ndarray:
        if digest in self.memory:
            return self.memory[digest]
        offset, shape = self.spilled[digest]
        return np.memmap(self.file, dtype=np.float32, mode="r", offset=4 * offset, shape=shape)

    def __iter__(self) -> Iterator[str]:
        yield from self.memory
        yield from self.spilled

    def __len__(self) -> int:
        return len(self.memory) + len(self.spilled)


def stream_vectors(handle, name: str, where: str, n: int, error: type[Exception],
                   check: Callable[[dict[str, np.ndarray]], None], sink: VectorSink, classes: int = 1_000) -> list[str]:
    """Read the vectors of one test set's member (`handle`, a seekable file) group by group: each checked,
    then `check(vectors of the group)`, then given to `sink`; a vector of more than `classes` columns is
    refused. Returns the digests in the member."""
    try:
        parquet = pq.ParquetFile(handle)
        columns = set(parquet.schema_arrow.names)
    except Exception as exc:  # pyarrow raises many kinds for a damaged file; none is a bug of ours
        raise error(f"{where}: {name}: not a readable Parquet table ({exc.__class__.__name__})") from None
    if not {"probs", "k", "values"} <= columns:
        raise error(f"{where}: {name}: lacks the probs, k and values columns")
    seen = []
    for group in range(parquet.num_row_groups):
        try:
            table = parquet.read_row_group(group, columns=["probs", "k", "values"])
        except Exception as exc:
            raise error(f"{where}: {name}: row group {group} not readable ({exc.__class__.__name__})") from None
        vectors = {}
        digests, ks, values = table["probs"].to_pylist(), table["k"].to_pylist(), table["values"]
        for i, (digest, k) in enumerate(zip(digests, ks)):
            if not isinstance(k, int) or not 0 < k <= classes:
                raise error(f"{where}: {name}: vector {printable(str(digest))[:24]!r} says {k} classes, not 1 to {classes}")
            vectors[str(digest)] = vector(values[i].values.to_numpy(zero_copy_only=False), digest, k, n, name, where, error)
        check(vectors)
        for digest, array in vectors.items():
            sink.add(digest, array)
        seen += list(vectors)
    return seen


def vector_digests(handle, name: str, where: str, error: type[Exception]) -> list[str]:
    """The digests a test set's member names (its `probs` column alone is read)."""
    try:
        return [str(d) for d in pq.ParquetFile(handle).read(columns=["probs"])["probs"].to_pylist()]
    except Exception as exc:
        raise error(f"{where}: {name}: not a readable Parquet table ({exc.__class__.__name__})") from None


def vector(flat: np.ndarray, digest, k, n: int, name: str, where: str, error: type[Exception]) -> np.ndarray:
    """One stored vector as an n x k float32 array, refused unless it has its test set's shape, holds
    probabilities (finite, in [0, 1]: only labels may be NaN, where masked) and hashes to its name."""
    flat = flat.astype(np.float32, copy=False)
    if not k or flat.size != n * k:
        raise error(f"{where}: {name}: vector {printable(str(digest))[:24]!r} holds {flat.size} values, not {n} cases x {k}")
    array = flat.reshape(n, k)
    bad = ~np.isfinite(array) | (array < 0) | (array > 1)
    if bad.any():
        raise error(f"{where}: {name}: vector {printable(str(digest))[:24]!r} holds {array[bad][0]}, not a probability "
                    "in [0, 1] (only labels may be NaN, where masked)")
    if probability_hash(array) != digest:
        raise error(f"{where}: {name}: vector {printable(str(digest))[:24]!r} does not hash to its name (edited)")
    return array
