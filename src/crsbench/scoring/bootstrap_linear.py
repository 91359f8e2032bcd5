"""The bootstrap AUROC draws by a matrix product: the weighted Mann-Whitney statistic, linearised only where
it is degenerate.

The exact draws (bootstrap_batched) cost O(cases) per column per draw, a gather and a cumulative sum that
no product can batch. Here a column's draw is split into the parts that are sums over cases of a fixed
value times the case's weight, which for every column and draw at once is one matrix product of the
cluster counts with per-cluster sums, and one part that is not. With positives I, negatives J, the
comparison h_ij (1 if s_i > s_j, 1/2 if tied, else 0), unit-weight quantities

    F_i = (1/|J|) sum_j h_ij            (each positive's place among the negatives, in [0, 1])
    c_j = sum_i h_ij - A |I|            (each negative's share of the comparisons, minus its fair share)

and P(w) = sum_I w_i, Q(w) = sum_J w_j, the weighted AUROC of a draw w is

    A(w) = [ sum_I w_i F_i + sum_J w_j c_j / Q(w) + R(w) ] / P(w),
    R(w) = sum_ij (w_i - 1) w_j (h_ij - F_i) / Q(w).

Everything but R is a weighted sum over cases (computed exactly, per draw, by the product); R is the
degenerate second-order part of the U-statistic (its standard deviation is about 1/sqrt(|J|) of the
first-order part's), and it is the one term dropped. The result is exact at unit weights (draw 0 is the
point estimate), exact to first order in the weights (the influence function of the AUROC, DeLong's
placement values), and keeps the exact ratio to the positives' total weight, which is what a pure
first-order (delta-method) draw would lose for a small class. Values are clipped to [0, 1], the range
of the exact statistic; a draw where a side weighs 0 is NaN, as exactly. A column with fewer than
EXACT_BELOW cases on one side is drawn exactly instead.

The product runs in numpy on the CPU and in torch on a GPU (bootstrap_batched.resolve_kernel decides, as
for the exact engine); the rest of a draw is elementwise and stays in numpy. The two products agree to
float32 rounding (both sum float32 terms, in different orders).

tests/scoring/test_bootstrap_linear.py checks the unit-weight value against scikit-learn, the draws
against the exact engine (the error is small beside the bootstrap spread and shrinks with the cases), the
torch product against numpy's on CPU tensors, and the intervals' coverage by simulation against a known
truth.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from crsbench.metrics.weighted import BinaryAUROC
from crsbench.scoring.bootstrap_batched import _macro, numpy_columns, resolve_kernel

MAX_CELLS = 24_000_000  # entries of one (draws, clusters) or (clusters, products) block: about 100 MB in float32
# A column with fewer cases than this on one side is drawn exactly: the dropped term's share of the spread
# grows as that side shrinks (with 3 positives it is 10-50 % of it; from 10 on, at most about 2.6/sqrt(cases)).
EXACT_BELOW = 30


def placement_values(column: BinaryAUROC) -> tuple[np.ndarray, np.ndarray, float]:
    """(F per positive, c per negative in the column's negatives order, the unit-weight AUROC).

    From the column's rank statistics alone: positive i has `below_i` negatives strictly below it and
    `below_or_tied_i - below_i` tied, so the negative at sorted place r lies strictly below
    #{i: below_i > r} positives and ties with #{i: below_i <= r < below_or_tied_i}."""
    n_pos, n_neg = len(column.positives), len(column.negatives)
    if n_pos == 0 or n_neg == 0:
        return np.zeros(n_pos), np.zeros(n_neg), float("nan")
    twice_place = (column.below + column.below_or_tied).astype(np.float64)  # 2 x sum_j h_ij per positive
    auroc = float(twice_place.sum() / 2.0 / (n_pos * n_neg))
    at_most_below = np.cumsum(np.bincount(column.below, minlength=n_neg + 1))[:n_neg]  # #{i: below_i <= r}
    at_most_tied = np.cumsum(np.bincount(column.below_or_tied, minlength=n_neg + 1))[:n_neg]
    twice_share = 2.0 * (n_pos - at_most_below) + (at_most_below - at_most_tied)  # 2 x sum_i h_ij per negative
    return twice_place / (2.0 * n_neg), twice_share / 2.0 - auroc * n_pos, auroc


def _cluster_sums(codes: np.ndarray, cases: np.ndarray, values: np.ndarray | None, n_clusters: int) -> np.ndarray:
    return np.bincount(codes[cases], weights=values, minlength=n_clusters)


class _Sums:
    """The per-cluster sums of a group of columns, one matrix column per product, and per AUROC column the
    places of its four products: positives' and negatives' weight (shared by every column with the same
    labels, so stored once), the positives' places and the negatives' shares. Only these are kept: a
    column's rank statistics are dropped once its sums are taken, so memory is the sums alone."""

    def __init__(self, codes: np.ndarray, n_clusters: int):
        self.codes, self.n_clusters = codes, n_clusters
        self.columns: list[np.ndarray] = []
        self.base: list[float] = []
        self.places: list[tuple[int, int, int, int]] = []
        self.points: list[float] = []
        self._shared: dict[bytes, int] = {}

    def _add(self, sums: np.ndarray, base: float) -> int:
        self.columns.append(sums)
        self.base.append(base)
        return len(self.columns) - 1

    def _side(self, tag: bytes, key: bytes, cases: np.ndarray) -> int:
        if tag + key not in self._shared:
            self._shared[tag + key] = self._add(_cluster_sums(self.codes, cases, None, self.n_clusters), float(len(cases)))
        return self._shared[tag + key]

    def add(self, column: BinaryAUROC) -> None:
        f, c, auroc = placement_values(column)
        key = hashlib.blake2b(column.positives.tobytes() + b"|" + np.sort(column.negatives).tobytes(),
                              digest_size=16).digest()
        self.places.append((
            self._side(b"P", key, column.positives), self._side(b"Q", key, column.negatives),
            self._add(_cluster_sums(self.codes, column.positives, f, self.n_clusters), float(f.sum())),
            self._add(_cluster_sums(self.codes, column.negatives, c, self.n_clusters), 0.0)))
        self.points.append(auroc)

    def evaluate(self, counts: np.ndarray, device=None) -> np.ndarray:
        """AUROC (columns, n_draws): base + (counts - 1) @ sums a block of draws at a time, the product in
        float32 on centred counts (small integers, so only the product's rounding enters; by torch on
        `device` where one is given, else numpy), the rest in float64; then the module docstring's
        formula for every column of the block at once."""
        sums = np.stack(self.columns, axis=1).astype(np.float32)  # (clusters, products)
        product = _product_on(device, sums)
        base = np.asarray(self.base)
        p, q, sf, sc = (np.array(i) for i in zip(*self.places))
        out = np.empty((len(self.places), len(counts)))
        block = max(1, MAX_CELLS // max(self.n_clusters, sums.shape[1], 1))
        for start in range(0, len(counts), block):
            part = slice(start, start + block)
            value = product((counts[part] - 1).astype(np.float32)).astype(np.float64) + base
            total_pos, total_neg = value[:, p], value[:, q]
            with np.errstate(invalid="ignore", divide="ignore"):
                draw = np.clip((value[:, sf] + value[:, sc] / total_neg) / total_pos, 0.0, 1.0)
            out[:, part] = np.where((total_pos > 0.5) & (total_neg > 0.5), draw, np.nan).T
        if len(counts) and np.all(counts[0] == 1):  # draw 0 the point estimate: its value exactly, not rounded
            out[:, 0] = self.points
        return out


def _product_on(device, sums: np.ndarray):
    """centred counts (draws, clusters) -> (draws, products) float32: numpy's product, or torch's on `device`
    with the sums moved there once."""
    if device is None:
        return lambda centred: centred @ sums
    import torch

    on_device = torch.from_numpy(sums).to(device)
    return lambda centred: (torch.from_numpy(centred).to(device) @ on_device).cpu().numpy()


def linear_columns(columns: Sequence[BinaryAUROC], counts: np.ndarray, codes: np.ndarray,
                   exact_below: int = EXACT_BELOW, device=None, kernel: str | None = None) -> np.ndarray:
    """AUROC (q, n_draws) of the columns under case weights counts[:, codes], by the decomposition in the
    module docstring; a column with fewer than `exact_below` cases on one side is drawn exactly
    (bootstrap_batched.numpy_columns), since there the dropped term is no longer small. kernel and device
    as bootstrap_batched.draw_aurocs's, for the product."""
    kernel, device = resolve_kernel(kernel, device)
    device = None if kernel == "numpy" else device  # the product in numpy
    out = np.empty((len(columns), len(counts)))
    rare = [j for j, c in enumerate(columns) if _rare(c, exact_below)]
    if rare:
        out[rare] = _exact(columns, rare, counts, codes)
    common = [j for j in range(len(columns)) if j not in set(rare)]
    if common:
        sums = _Sums(codes, counts.shape[1])
        for j in common:
            sums.add(columns[j])
        out[common] = sums.evaluate(counts, device)
    return out


def _rare(column: BinaryAUROC, exact_below: int) -> bool:
    return min(len(column.positives), len(column.negatives)) < exact_below


def _exact(columns: Sequence[BinaryAUROC], rows: Sequence[int], counts: np.ndarray, codes: np.ndarray) -> np.ndarray:
    chosen = [columns[j] for j in rows]
    out = np.empty((len(chosen), len(counts)))
    block = max(1, MAX_CELLS // (len(codes) * len(chosen)))
    for start in range(0, len(counts), block):
        part = slice(start, start + block)
        out[:, part] = numpy_columns(chosen, counts[part][:, codes].T)
    return out


def draw_aurocs_linear(metrics_of, digests: Sequence[str], counts: np.ndarray, codes: np.ndarray, *,
                       max_columns: int | None = None, exact_below: int = EXACT_BELOW, device=None,
                       kernel: str | None = None) -> dict[str, np.ndarray]:
    """bootstrap_batched.draw_aurocs's result (macro AUROC (n_draws,) per vector), linearised.

    Vectors are built one at a time and only their per-cluster sums kept (a rare class's column, drawn
    exactly, keeps its rank statistics); a group's sums stay under MAX_CELLS (or `max_columns` AUROC
    columns), so memory does not grow with the number of vectors. kernel and device as draw_aurocs's, for
    the product."""
    kernel, device = resolve_kernel(kernel, device)
    device = None if kernel == "numpy" else device  # the product in numpy
    digests = list(dict.fromkeys(digests))
    if not digests:
        return {}
    if np.any(counts != np.round(counts)) or counts.min() < 0:
        raise ValueError("draw_aurocs_linear needs integer case counts")
    n_clusters = counts.shape[1]
    group = max_columns or max(1, MAX_CELLS // (2 * max(n_clusters, 1)))  # about two products per column
    out: dict[str, np.ndarray] = {}
    shapes, sums, owners = [], _Sums(codes, n_clusters), []

    def flush():
        nonlocal sums, owners, shapes
        values = np.empty((len(owners), len(counts)))
        common = [i for i, (_, exact) in enumerate(owners) if exact is None]
        if common:
            values[common] = sums.evaluate(counts, device)
        exact_rows = [i for i, (_, exact) in enumerate(owners) if exact is not None]
        if exact_rows:
            values[exact_rows] = _exact([owners[i][1] for i in exact_rows], range(len(exact_rows)), counts, codes)
        out.update(_macro([name for name, _ in shapes], [shape for _, shape in shapes], values))
        shapes, sums, owners = [], _Sums(codes, n_clusters), []

    for digest in digests:
        metrics = metrics_of(digest)
        columns = metrics.auroc_columns
        for column in columns:
            if _rare(column, exact_below):
                owners.append((digest, column))
            else:
                sums.add(column)
                owners.append((digest, None))
        # what _macro reads of a vector: binary or not, and how many columns it has
        shapes.append((digest, SimpleNamespace(binary=metrics.binary, auroc_columns=[None] * len(columns))))
        del metrics, columns
        if len(owners) >= group:
            flush()
    if owners:
        flush()
    return out
