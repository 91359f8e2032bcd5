"""Weighted AUROC of many prediction vectors for every bootstrap draw at once.

The case bootstrap spends its time on one statistic: per prediction vector, per class, per draw,

    AUROC = sum over positives i of w_i * (negative weight below s_i + half the tied negative weight) / (W+ W-)

(metrics.weighted.BinaryAUROC). Its sufficient statistics do not depend on the draw: the negatives in
score order, the positives, and for each positive the number of negatives strictly below and below or
tied (two searchsorted indices). Given those, a draw is one cumulative sum of the negatives' weights and
two gathers at the positives. draw_aurocs takes the vectors of a test set a group at a time (their
statistics built once, used for all draws, dropped) and the draws a block at a time, so memory stays
bounded (MAX_CELLS) whatever the number of vectors and draws. On the CPU each column is one numpy
pass over a (cases, draws) block; on a GPU the columns of a group are stacked into padded index tensors
and evaluated together by torch (one gather, one cumulative sum, one reduction). The weights of a draw
are case counts (integers), so the sums are exact in float32 while they stay below 2**24 (float64
beyond, chosen per block); the final ratio is taken in float64 as BinaryAUROC takes it, so the result
equals the reference path bit for bit (tests/scoring/test_bootstrap_batched.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from crsbench.core import hardware
from crsbench.metrics.weighted import BinaryAUROC, WeightedMetrics, _nanmean_rows

MAX_CELLS = 24_000_000  # entries of one (draws, columns, cases) block: about 100 MB in float32
KERNELS = ("numpy", "torch")


class ColumnStack:
    """The rank statistics of several BinaryAUROC columns on one test set of n cases, padded.

    Index n is a sentinel case of weight 0: padding gathers it, so padded places add nothing.
    """

    def __init__(self, columns: Sequence[BinaryAUROC], n_cases: int, device):
        import torch

        self.n_cases, self.device = n_cases, device
        self.n_neg = max((len(c.negatives) for c in columns), default=0)
        self.n_pos = max((len(c.positives) for c in columns), default=0)
        q = len(columns)
        # each column's negatives after one sentinel: their cumulative sum starts at 0, so place k of it is
        # the weight of the first k negatives (the exclusive prefix sum the searchsorted indices address)
        negatives = np.full((q, self.n_neg + 1), n_cases, dtype=np.int64)
        positives = np.full((q, self.n_pos), n_cases, dtype=np.int64)
        below = np.zeros((q, self.n_pos), dtype=np.int64)
        tied = np.zeros((q, self.n_pos), dtype=np.int64)
        for j, column in enumerate(columns):
            negatives[j, 1: len(column.negatives) + 1] = column.negatives
            positives[j, : len(column.positives)] = column.positives
            below[j, : len(column.positives)] = column.below
            tied[j, : len(column.positives)] = column.below_or_tied
        # offsets into the flattened (column, negative + 1) cumulative table
        offset = (np.arange(q) * (self.n_neg + 1))[:, None]
        self.negatives = torch.from_numpy(negatives.reshape(-1)).to(device)
        self.positives = torch.from_numpy(positives.reshape(-1)).to(device)
        self.below = torch.from_numpy((below + offset).reshape(-1)).to(device)
        self.tied = torch.from_numpy((tied + offset).reshape(-1)).to(device)
        self.q = q
        self.ties = any(c.has_ties for c in columns)  # without ties one gather at the positives suffices

    def __call__(self, weights) -> np.ndarray:
        """AUROC (q, B) for draw-major weights (B, n + 1) with a zero last column; float64, NaN where a
        side weighs 0.

        weights are float32 when every partial sum and product is an integer below 2**24 (exact), float64
        otherwise (exact below 2**53); the sum over the positives runs in float64. Draw-major: the
        cumulative sums and the reductions run along contiguous memory."""
        import torch

        b = weights.shape[0]
        gathered = weights.index_select(1, self.negatives).view(b, self.q, self.n_neg + 1)
        cumulative = torch.cumsum(gathered, dim=2)  # (B, q, n_neg + 1), place 0 the sentinel's 0
        flat = cumulative.view(b, -1)
        w_pos = weights.index_select(1, self.positives).view(b, self.q, self.n_pos)
        ranks = flat.index_select(1, self.below).view(b, self.q, self.n_pos)
        if self.ties:
            ranks = ranks + flat.index_select(1, self.tied).view(b, self.q, self.n_pos)
        else:
            ranks = 2 * ranks
        # every product is an integer the weights' dtype holds exactly; their sum may not be: float64
        twice = (w_pos * ranks).sum(dim=2, dtype=torch.float64)
        total_pos = w_pos.sum(dim=2, dtype=torch.float64)
        total_neg = cumulative[:, :, -1].double()
        twice, total_pos, total_neg = (t.T.cpu().numpy() for t in (twice, total_pos, total_neg))
        with np.errstate(invalid="ignore", divide="ignore"):
            auroc = (twice / 2.0) / (total_pos * total_neg)
        return np.where((total_pos > 0) & (total_neg > 0), auroc, np.nan)


def _exact32(w: np.ndarray) -> bool:
    """Every sum the AUROC forms (at most 4 x total weight x largest weight) an integer below 2**24."""
    total = float(w.sum(axis=0).max()) if w.size else 0.0
    return 4.0 * total * max(float(w.max(initial=0)), 1.0) < 2**24


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def _numpy_column(column: BinaryAUROC, block: np.ndarray, sentinel: np.ndarray) -> np.ndarray:
    # the sentinel first: the cumulative sum starts at 0, place k is the first k negatives' weight
    cumulative = np.cumsum(block[np.concatenate([sentinel, column.negatives])], axis=0)
    w_pos = block[column.positives]
    ranks = cumulative[column.below]
    if column.has_ties:
        ranks += cumulative[column.below_or_tied]
    else:
        ranks *= 2
    twice = np.einsum("pb,pb->b", w_pos, ranks, dtype=np.float64)
    total_pos = w_pos.sum(axis=0, dtype=np.float64)
    total_neg = cumulative[-1].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((total_pos > 0) & (total_neg > 0), (twice / 2.0) / (total_pos * total_neg), np.nan)


def numpy_columns(columns: Sequence[BinaryAUROC], w: np.ndarray, threads: int | None = None) -> np.ndarray:
    """AUROC (q, B) of the columns for integer case weights (n, B) on the CPU: BinaryAUROC's computation,
    in float32 where it is exact (_exact32), the sum over the positives in float64. Case-major: each
    gather copies whole rows of draws and the cumulative sum adds rows. Columns are spread over
    `threads` threads (default: the CPUs this process may use); numpy releases the GIL in these loops."""
    dtype = np.float32 if _exact32(w) else np.float64
    block = np.zeros((w.shape[0] + 1, w.shape[1]), dtype=dtype)  # a zero sentinel row last
    block[:-1] = w
    sentinel = np.array([w.shape[0]])
    threads = min(threads or _threads(), len(columns))
    if threads <= 1:
        rows = [_numpy_column(c, block, sentinel) for c in columns]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:
            rows = list(pool.map(lambda c: _numpy_column(c, block, sentinel), columns))
    return np.stack(rows) if rows else np.empty((0, w.shape[1]))


def weight_block(w: np.ndarray, device):
    """Integer case weights (n, B) as a draw-major (B, n + 1) tensor with a zero sentinel column last:
    float32 where every sum the AUROC forms (at most 4 x total weight x largest weight) is an integer
    below 2**24, else float64."""
    import torch

    block = torch.zeros((w.shape[1], w.shape[0] + 1), dtype=torch.float32 if _exact32(w) else torch.float64)
    block[:, :-1] = torch.from_numpy(np.ascontiguousarray(w.T, dtype=np.float64))
    return block.to(device)


def resolve_kernel(kernel: str | None, device) -> tuple[str, object]:
    """(kernel, device) the draws run with: "numpy" (the default without a GPU) or "torch" (the default with
    one; on `device`, the CPU where none is given)."""
    if kernel is not None and kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel != "numpy" and device is None:
        device = hardware.scoring_device()
    kernel = kernel or ("numpy" if device is None or device.type == "cpu" else "torch")
    if kernel == "torch" and device is None:
        import torch

        device = torch.device("cpu")
    return kernel, device


def draw_aurocs(metrics_of, digests: Sequence[str], counts: np.ndarray, codes: np.ndarray, *,
                device=None, kernel: str | None = None, max_cells: int = MAX_CELLS
                ) -> dict[str, np.ndarray]:
    """Macro AUROC (n_draws,) of each prediction vector for every draw at once.

    metrics_of(digest) -> WeightedMetrics of that vector on this test set; counts (n_draws, n_clusters) are
    integer cluster counts and codes (n_cases,) each case's cluster, so draw b weighs case i counts[b,
    codes[i]] (what case_bootstrap.case_bootstrap gives WeightedMetrics row by row). Vectors are taken a group
    at a time (their rank statistics built, used for every draw, dropped), draws a block at a time, so
    one (columns, cases, draws) block stays under `max_cells`. kernel: "numpy" (the default without a
    GPU) or "torch" (the default with one; on `device`, the CPU where none is given).
    """
    kernel, device = resolve_kernel(kernel, device)
    digests = list(dict.fromkeys(digests))
    n, n_draws = len(codes), len(counts)
    if not digests:
        return {}
    if np.any(counts != np.round(counts)) or counts.min() < 0:
        raise ValueError("draw_aurocs needs integer case counts")
    first = metrics_of(digests[0])
    per_vector = len(first.auroc_columns)
    block_draws = int(min(n_draws, max(1, max_cells // ((n + 1) * per_vector))))
    group = max(1, max_cells // ((n + 1) * block_draws * per_vector))
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(digests), group):
        names = digests[start: start + group]
        vectors = [first if d == digests[0] else metrics_of(d) for d in names]
        columns = [c for v in vectors for c in v.auroc_columns]
        values = np.empty((len(columns), n_draws))
        if kernel == "numpy":  # numpy's row gathers and sums beat torch's on the CPU
            for b in range(0, n_draws, block_draws):
                part = slice(b, b + block_draws)
                values[:, part] = numpy_columns(columns, counts[part][:, codes].T)
            out.update(_macro(names, vectors, values))
            continue
        # tie-free columns apart from the others, so that their stack takes the one-gather path
        tied = np.array([c.has_ties for c in columns])
        stacks = [(np.flatnonzero(tied == flag), ColumnStack([columns[j] for j in np.flatnonzero(tied == flag)], n, device))
                  for flag in (False, True) if (tied == flag).any()]
        for b in range(0, n_draws, block_draws):
            part = slice(b, b + block_draws)
            block = weight_block(counts[part][:, codes].T, device)
            for rows, stack in stacks:
                values[rows, part] = stack(block)
        out.update(_macro(names, vectors, values))
    return out


def _macro(names: Sequence[str], vectors: Sequence[WeightedMetrics], values: np.ndarray) -> dict[str, np.ndarray]:
    """Per vector, WeightedMetrics.auroc from its columns' rows of `values`: the positive column's for two
    classes, else the mean over the classes defined in the draw."""
    out, position = {}, 0
    for name, vector in zip(names, vectors):
        k = len(vector.auroc_columns)
        out[name] = values[position] if vector.binary else _nanmean_rows(np.ascontiguousarray(values[position: position + k].T))
        position += k
    return out
