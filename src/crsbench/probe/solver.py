"""Batched L2 logistic regression: every C of a grid (and every label of a multi-label task) solved as
one problem in torch, float32 BLAS on the GPU when there is one, the CPU otherwise.

The objective is scikit-learn's, problem by problem: with n the number of rows a problem sees,
    F(W, b) = (1/n) sum_i loss_i(z_i W + b) + ||W||^2 / (2 C n),
intercept unpenalised; softmax loss over the classes present (multinomial), or one sigmoid per
problem. Masked rows (NaN labels of a multi-label task) carry zero weight.

Solver: L-BFGS with
  - a preconditioner from the training rows' second moments: in the eigenbasis of z'z/n the
    Hessian is close to diagonal, c * eigenvalue + 1/(C n), so one eigendecomposition serves every C;
  - a line search on the derivative: a linear model's logits move linearly along a search direction,
    so after one product z @ direction the search is elementwise work; it uses derivatives only, which
    float32 resolves where function differences would not, and hands its last probabilities to the
    next gradient;
  - the layout [problem, class, row], so the class axis is never the innermost one that the
    softmax reduces over, and every problem's logits come from one product with the rows;
  - converged problems leave the batch, so the weakly regularised ones do not pay for the rest.
  - where bfloat16 products are native (CPUs with AVX512-BF16, GPUs of compute capability 8.0 and above)
    and the rows many, the first iterations
    run with bfloat16 rows, about 3x faster, until the gradient nears bfloat16's rounding floor; the
    float32 descent then finishes from there with the secant pairs gathered so far.
When d > n the rows span at most n directions and the optimum lies in their span (representer
theorem), so the problem is solved in that basis when n is well below d: exact, and much smaller at low
label fractions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from crsbench.core.hardware import bfloat16_is_native, choose_device

HISTORY = 10  # L-BFGS memory
# rows used for the preconditioner's second moments: all of them up to this many (a subsample of 4,096 rows
# cost a quarter more iterations on 5,000 rows; the estimate need not be exact beyond that)
COVARIANCE_ROWS = 16384
LINE_SEARCH_STEPS = 12
LINE_SEARCH_TOLERANCE = 0.1  # stop the search once |F'(step)| <= this * |F'(0)|: an exact search costs more than it saves
RELOGIT_EVERY = 10  # logits are updated along each step; recomputing them bounds float32 drift
# The row-span basis costs a float64 n x n eigendecomposition, the feature basis a float32 d x d one (about half
# the time at the same size) plus the n x d x d moments; measured, the span pays below about three quarters of d.
SPAN_BELOW = 0.75
# Below this many rows per feature the rows are rotated once into the preconditioner's eigenbasis (2 n d^2 flops)
# instead of every gradient and direction (4 d^2 per problem-iteration); measured about a tenth faster at 1,000
# rows of d = 768-1,024.
ROTATE_BELOW = 1.5
# The warm-up descent (bfloat16 rows, see `warm_up_rows`) runs from this many rows (below, products are a small
# part of a fit and the rounding floor is high; measured slower at 500-2,500 rows). It stops at the tolerance,
WARM_UP_ROWS = 4096
# or at its rounding floor: where the max |gradient| falls to ROUNDING_FLOOR x precision x ||weighted residual||
# (measured on the benchmark's 8-class task at 20,000 rows, its bfloat16 gradient wanders between 5 and 18 such
# units once there; 8 and 16 measured alike, 4 a fifth slower), or after WARM_UP_STALL iterations without a
# smaller gradient.
ROUNDING_FLOOR = 16.0
WARM_UP_STALL = 5


@dataclass(frozen=True)
class Batch:
    """P problems sharing the rows: targets, row weights and L2 strength per problem."""

    link: str  # "softmax" (targets one-hot [n, k], every problem the same) or "sigmoid" ([n, P])
    targets: np.ndarray
    row_weights: np.ndarray  # [n, P], each column sums to 1 (1/n on the rows a problem sees)
    l2: np.ndarray  # [P], 1 / (C n)
    n_outputs: int  # k for softmax, 1 for sigmoid


@dataclass
class Solution:
    coef: np.ndarray  # [P, d, k] float64, on the standardised features
    intercept: np.ndarray  # [P, k]
    grad_norm: np.ndarray  # [P] max |gradient| of F as the solver last saw it (an upper bound where far above tol)
    iterations: np.ndarray  # [P]
    gemm_flops: float  # floating-point operations spent in matrix products with the rows


def _softmax_proba(logits):  # [P, k, n]: over the class axis, in one fused kernel
    return torch.softmax(logits, 1)


def _softmax_scale(proba):
    # mean eigenvalue of diag p - p p' over its k - 1 non-trivial directions
    k = proba.shape[1]
    return (1 - (proba * proba).sum(1)) / max(k - 1, 1)


def _sigmoid_scale(proba):
    return (proba * (1 - proba)).sum(1)


# link -> (probabilities from logits, curvature scale for the preconditioner)
LINKS = {
    "softmax": (_softmax_proba, _softmax_scale),
    "sigmoid": (torch.sigmoid, _sigmoid_scale),
}


def sum_zero_basis(k: int, device, dtype):
    """[k, k - 1] orthonormal columns orthogonal to the all-ones vector.

    A multinomial fit with an L2 penalty has weights summing to zero over the classes at its optimum
    (the loss's gradient sums to zero over the classes, so stationarity leaves l2 * sum_c w_c = 0), and
    the solver's iterates never leave that subspace. Solving in its k - 1 coordinates is therefore exact,
    and every product with the rows has one column fewer per problem."""
    centring = np.eye(k) - 1.0 / k
    basis = np.linalg.qr(centring)[0][:, : k - 1]
    return torch.as_tensor(basis, device=device, dtype=dtype)


def _gram_of_columns(a):
    """a'a from three products of half the columns instead of one whole one: the lower-left block is
    the upper-right one transposed (about a quarter less work, the same numbers)."""
    half = a.shape[1] // 2
    left, right = a[:, :half], a[:, half:]
    corner = left.T @ right
    return torch.cat([torch.cat([left.T @ left, corner], 1), torch.cat([corner.T, right.T @ right], 1)], 0)


def _upper_gram(a):
    """a'a with its upper triangle filled (what eigh reads with UPLO="U"). On the CPU a symmetric
    rank-k update computes only that triangle: half the work of the whole product, about a third less
    time than the three half-products; elsewhere (a GPU) the half-products."""
    if a.device.type != "cpu":
        return _gram_of_columns(a)
    from scipy.linalg import blas

    syrk = blas.ssyrk if a.dtype == torch.float32 else blas.dsyrk
    # a's transpose in Fortran order is a itself in C order: no copy when a is contiguous
    upper = syrk(1.0, np.asfortranarray(a.numpy().T), trans=0, lower=0)
    return torch.from_numpy(upper)


def _upper_eigh(upper):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix from its upper triangle. On the CPU
    LAPACK's divide-and-conquer driver through scipy, about a tenth faster than torch's at d = 768-1024
    (one thread, measured), without a copy (the matrix is the product's own scratch)."""
    if upper.device.type != "cpu":
        return torch.linalg.eigh(upper, UPLO="U")
    from scipy.linalg import eigh

    eigvals, eigvecs = eigh(upper.numpy(), lower=False, driver="evd", overwrite_a=True, check_finite=False)
    return torch.from_numpy(eigvals), torch.from_numpy(eigvecs)


class _Features:
    """The design matrix the solver multiplies by, and the map back to standardised features.

    `rows` is z itself, or z's coordinates in the orthonormal basis of its row span when d > n.
    `eigvecs`/`eigvals` diagonalise rows'rows/n (identity when rows are already principal coordinates).
    """

    def __init__(self, z: np.ndarray, device, dtype):
        n, d = z.shape
        self.to_features = None  # [d, r]: maps span coefficients back to standardised features
        self.in_span = n < SPAN_BELOW * d
        if self.in_span:
            z64 = torch.as_tensor(z, dtype=torch.float64, device=device)
            eigvals, eigvecs = torch.linalg.eigh(z64 @ z64.T)
            keep = eigvals > eigvals[-1].clamp(min=0) * 1e-12 if len(eigvals) else eigvals > 0
            eigvals, eigvecs = eigvals[keep].clamp(min=0), eigvecs[:, keep]
            if eigvals.numel() == 0:  # all rows identical after standardising: no direction to fit
                eigvals, eigvecs = torch.ones(1, dtype=torch.float64, device=device), torch.zeros(n, 1, dtype=torch.float64, device=device)
            root = eigvals.sqrt()
            self.rows = (eigvecs * root).to(dtype)
            self.to_features = (z64.T @ (eigvecs / root)).to(dtype)
            self.eigvecs = None
            self.eigvals = (eigvals / n).to(dtype)
        else:
            self.rows = torch.as_tensor(z, device=device).to(dtype)
            # evenly spaced rows past COVARIANCE_ROWS: deterministic, the estimate need not be exact, and a
            # strided view goes to the matrix product uncopied
            sample = self.rows[:: -(-n // COVARIANCE_ROWS)]
            moments = _upper_gram(sample.to(torch.float32)) / len(sample)
            eigvals, eigvecs = _upper_eigh(moments)
            self.eigvecs = eigvecs.to(dtype)
            self.eigvals = eigvals.clamp(min=0).to(dtype)
            if n < ROTATE_BELOW * d:
                # few rows: rotate them once into principal coordinates rather than every gradient and
                # direction twice per iteration; the basis is orthonormal, as the row span's is
                self.rows, self.to_features, self.eigvecs = self.rows @ self.eigvecs, self.eigvecs, None

    @property
    def dim(self) -> int:
        return self.rows.shape[1]

    def rotate_in(self, w):  # [m, r] -> principal coordinates
        return w if self.eigvecs is None else w @ self.eigvecs

    def rotate_out(self, v):
        return v if self.eigvecs is None else v @ self.eigvecs.T

    def feature_max_gradient(self, grad_w, tol):
        """max |gradient| per row of grad_w [m, r], in standardised feature space. The span basis is
        orthonormal, so the feature gradient's Euclidean norm equals the span gradient's and bounds its
        largest entry from both sides (within sqrt(d)); the product back to features is paid only
        where that bound cannot settle the comparison with tol."""
        if self.to_features is None:
            return grad_w.abs().amax(-1)
        euclidean = torch.linalg.vector_norm(grad_w, dim=-1)
        undecided = (euclidean > tol) & (euclidean <= tol * self.to_features.shape[0] ** 0.5)
        largest = euclidean.clone()  # above tol either way where settled: only the comparison is used then
        if bool(undecided.any()):
            largest[undecided] = (grad_w[undecided] @ self.to_features.T).abs().amax(-1)
        return largest


class _History:
    """L-BFGS secant pairs per problem, in principal coordinates, flattened to [P, k r + k].

    A ring buffer: slot `newest` holds the latest pair; an unfilled or rejected pair has rho 0 and
    so drops out of the two-loop recursion without a mask.
    """

    def __init__(self, n_problems, size, device, dtype):
        self.s = torch.zeros(HISTORY, n_problems, size, device=device, dtype=dtype)
        self.y = torch.zeros_like(self.s)
        self.rho = torch.zeros(HISTORY, n_problems, device=device, dtype=dtype)
        self.newest = -1
        self.filled = 0

    def add(self, step, change):
        curvature = torch.linalg.vecdot(step, change)
        self.newest = (self.newest + 1) % HISTORY
        self.filled = min(self.filled + 1, HISTORY)
        self.s[self.newest], self.y[self.newest] = step, change
        self.rho[self.newest] = torch.where(curvature > 1e-30, 1 / curvature.clamp(min=1e-30), torch.zeros_like(curvature))

    def order(self):  # newest first; slots never filled are skipped rather than run with rho 0
        return [(self.newest - i) % HISTORY for i in range(self.filled)]

    def keep(self, mask):
        self.s, self.y, self.rho = self.s[:, mask], self.y[:, mask], self.rho[:, mask]

    def hand_over(self, into, problems, mask):
        """Copy the pairs of the problems selected by `mask` to slots `problems` of `into`, whose ring
        has its newest pair in the last slot (a history that collects problems finishing at different
        steps, for the next descent to start from)."""
        shift = HISTORY - 1 - self.newest
        into.s[:, problems] = torch.roll(self.s[:, mask], shift, 0)
        into.y[:, problems] = torch.roll(self.y[:, mask], shift, 0)
        into.rho[:, problems] = torch.roll(self.rho[:, mask], shift, 0)

    @classmethod
    def collecting(cls, n_problems, size, device, dtype):
        history = cls(n_problems, size, device, dtype)
        history.newest, history.filled = HISTORY - 1, HISTORY  # unfilled slots keep rho 0 and drop out
        return history

    def direction(self, gradient, inverse_diagonal):
        """-H g by the two-loop recursion, the diagonal preconditioner as initial inverse Hessian."""
        q = -gradient
        alphas = {}
        for i in self.order():
            alphas[i] = self.rho[i] * torch.linalg.vecdot(self.s[i], q)
            q = torch.addcmul(q, alphas[i][:, None], self.y[i], value=-1)
        r = q * inverse_diagonal
        if self.newest >= 0:
            # rescale the preconditioner by the latest secant pair, as plain L-BFGS does with the identity
            s0, y0 = self.s[self.newest], self.y[self.newest]
            gamma = torch.linalg.vecdot(s0, y0) / torch.linalg.vecdot(y0, y0 * inverse_diagonal).clamp(min=1e-30)
            gamma = torch.where(self.rho[self.newest] > 0, gamma, torch.ones_like(gamma))
            r = r * gamma[:, None]
        for i in reversed(self.order()):
            beta = self.rho[i] * torch.linalg.vecdot(self.y[i], r)
            r = torch.addcmul(r, (alphas[i] - beta)[:, None], self.s[i])
        return r


def _as_problem_major(array, device, dtype):  # [n, P] -> [P, 1, n]
    return torch.as_tensor(np.ascontiguousarray(np.asarray(array).T), device=device, dtype=dtype)[:, None, :]


class _ClassBasis:
    """Maps the fitted weight rows to the classes: identity for sigmoid problems, the sum-zero basis
    [k, k - 1] for softmax ones (so a softmax problem has k - 1 weight rows, k logits)."""

    def __init__(self, link, k, device, dtype):
        self.basis = sum_zero_basis(k, device, dtype) if link == "softmax" else None
        self.fitted = k - 1 if link == "softmax" else k

    def to_classes(self, a):  # [P, fitted, m] -> [P, k, m]
        return a if self.basis is None else torch.matmul(self.basis, a)

    def from_classes(self, a):  # [P, k, m] -> [P, fitted, m]
        return a if self.basis is None else torch.matmul(self.basis.T, a)


def solve(z: np.ndarray, batch: Batch, max_iter: int, tol: float, device=None, dtype=torch.float32) -> Solution:
    """Minimise every problem of `batch` on standardised rows `z` [n, d]; stop each at max |grad| <= tol.

    Layout: weights [P, m, r] (m = k - 1 sum-zero coordinates for softmax, 1 for sigmoid), logits
    [P, k, n], so the class axis never sits innermost and the logits of every problem come from one
    matrix product with the rows. Where bfloat16 products are native and the rows many, a warm-up
    descent with bfloat16 rows comes first (see `warm_up_rows`); the answer, its gradient norm and the
    stopping test are always the `dtype` descent's, started where the warm-up stopped, with its secant
    pairs. `max_iter` counts the iterations of both; `gemm_flops` counts the warm-up's products too.
    """
    device = torch.device(device or choose_device(mps=False))
    features = _Features(z, device, dtype)
    descent = _Descent(features, batch, device, dtype)
    n_problems = len(batch.l2)
    w = torch.zeros(n_problems, descent.classes.fitted, features.dim, device=device, dtype=dtype)
    b = _initial_intercepts(batch, descent.targets, descent.weights)
    iterations = np.zeros(n_problems, dtype=np.int64)
    fast_rows = warm_up_rows(features.rows, dtype)
    if fast_rows is not None:
        w, b, _, history = descent.run(fast_rows, w, b, iterations, tol, max_iter, rounding=torch.finfo(torch.bfloat16).eps, collect_history=True)
    else:
        history = None
    w, b, grad_norm, _ = descent.run(features.rows, w, b, iterations, tol, max_iter, history)
    solution_w = descent.classes.to_classes(w).permute(0, 2, 1)  # [P, r, k]
    if features.to_features is not None:
        solution_w = torch.einsum("dr,prk->pdk", features.to_features, solution_w)
    return Solution(solution_w.double().cpu().numpy(), b.double().cpu().numpy(), grad_norm, iterations, descent.flops)


def warm_up_rows(rows, dtype):
    """The rows in bfloat16 for the warm-up descent, or None where it does not pay: a float64 solve,
    fewer than WARM_UP_ROWS rows, or no native bfloat16.

    Far from the optimum a descent direction need not come from an exact gradient: with bfloat16 rows the
    two products of an iteration run about 3x faster, and the iterates match the float32 descent's until
    the gradient nears bfloat16's rounding floor, which scales with the residuals: about 1e-4 for the
    strongly regularised problems at 20,000 rows, below the tolerance of 1e-6 for many weakly regularised
    ones. There the warm-up stops (see ROUNDING_FLOOR) and float32 takes over with the secant pairs; where
    the warm-up met the tolerance, float32 recomputes the gradient and goes on only if it is not met.
    Measured on the benchmark's tasks at 20,000 rows: a quarter to a third less time per fit."""
    if dtype != torch.float32 or rows.shape[0] < WARM_UP_ROWS or not bfloat16_is_native(rows.device):
        return None
    return rows.to(torch.bfloat16)


class _Descent:
    """L-BFGS over the batch's problems from a given start, with the rows of a given precision; the
    problems' data and the preconditioner's spectrum are shared by every descent of one solve."""

    def __init__(self, features, batch, device, dtype):
        self.features, self.link, self.device, self.dtype = features, batch.link, device, dtype
        self.proba_of, self.scale_of = LINKS[batch.link]
        self.k = batch.n_outputs
        self.classes = _ClassBasis(batch.link, self.k, device, dtype)
        if batch.link == "softmax":
            self.targets = torch.as_tensor(np.ascontiguousarray(batch.targets.T), device=device, dtype=dtype)[None]  # [1, k, n]
        else:
            self.targets = _as_problem_major(batch.targets, device, dtype)  # [P, 1, n]
        self.weights = _as_problem_major(batch.row_weights, device, dtype)
        self.l2 = torch.as_tensor(batch.l2, device=device, dtype=dtype)
        self.flops = 0.0

    def run(self, rows, w, b, iterations, tol, max_iter, history=None, rounding=None, collect_history=False):
        """Descend from (w, b) until max |grad| <= tol or max_iter iterations in all (`iterations` is
        updated in place), from a previous descent's secant pairs when given. Returns the weights,
        intercepts, the last gradient norms seen and, with `collect_history`, the secant pairs (else
        None). With `rounding` (the rows' relative precision, for a warm-up), a problem also stops at the
        gradient that rounding cannot resolve, or once its gradient has not shrunk for WARM_UP_STALL
        iterations."""
        features, classes, device, k = self.features, self.classes, self.device, self.k
        proba_of, scale_of, eigvals = self.proba_of, self.scale_of, features.eigvals
        targets, weights, l2 = self.targets, self.weights, self.l2
        m, (n, r), dtype = classes.fitted, rows.shape, self.dtype
        n_problems = len(l2)

        def times_rows(a):  # [q, n] @ rows in the rows' precision
            return (a.to(rows.dtype) @ rows).to(dtype)

        def logits_along(direction_w, p):  # rows times [P, m, r] weights, in class coordinates: [P, k, n]
            products = (direction_w.reshape(p * m, r).to(rows.dtype) @ rows.T).to(dtype)
            return classes.to_classes(products.reshape(p, m, n))

        out_w, out_b = w.clone(), b.clone()
        grad_norm = np.full(n_problems, np.inf)
        active = np.arange(n_problems)
        if history is None:
            history = _History(n_problems, m * r + k, device, dtype)
        out_history = _History.collecting(n_problems, m * r + k, device, dtype) if collect_history else None
        if bool(w.any()):
            logits = logits_along(w, n_problems) + b[:, :, None]
            self.flops += 2.0 * n * r * n_problems * m
        else:  # from zero weights the logits are the intercepts: no product
            logits = b[:, :, None].expand(n_problems, k, n).contiguous()
        proba = proba_of(logits)
        previous_gradient = step_v = None
        step = 0
        best_norm, since_best = np.full(n_problems, np.inf), np.zeros(n_problems, dtype=np.int64)
        while True:
            residual = (proba - targets) * weights  # [P, k, n]
            p = len(active)
            grad_w = times_rows(classes.from_classes(residual).reshape(p * m, n)).reshape(p, m, r) + l2[:, None, None] * w
            grad_b = residual.sum(-1)
            self.flops += 2.0 * n * r * p * m
            gradient = torch.cat([features.rotate_in(grad_w.reshape(p * m, r)).reshape(p, m * r), grad_b], 1)
            if previous_gradient is not None:
                history.add(step_v, gradient - previous_gradient)
            # the stopping test on the k classes' gradient, as scikit-learn's parametrisation has it
            class_gradient = classes.to_classes(grad_w).reshape(p * k, r)
            in_features = features.feature_max_gradient(class_gradient, tol).reshape(p, k).amax(-1)
            norm = torch.maximum(in_features, grad_b.abs().amax(-1)).double().cpu().numpy()
            grad_norm[active] = norm
            done = (norm <= tol) | (iterations[active] >= max_iter)
            if rounding is not None:
                # each residual entry is rounded (relative error `rounding`) before the product, so a gradient
                # entry errs by about rounding * ||residual|| (the rows are standardised); the rows' own
                # rounding adds about as much, and the largest of the d k entries is several times the typical one
                resolvable = ROUNDING_FLOOR * rounding * torch.linalg.vector_norm(residual.flatten(1), dim=1)
                done |= norm <= resolvable.double().cpu().numpy()
                improved = norm < best_norm[active]
                best_norm[active] = np.minimum(best_norm[active], norm)
                since_best[active] = np.where(improved, 0, since_best[active] + 1)
                done |= since_best[active] >= WARM_UP_STALL
            if done.any():
                finished, keep = torch.as_tensor(done, device=device), torch.as_tensor(~done, device=device)
                out_w[active[done]], out_b[active[done]] = w[finished], b[finished]
                if out_history is not None:
                    history.hand_over(out_history, active[done], finished)
                active = active[~done]
                if not len(active):
                    return out_w, out_b, grad_norm, out_history
                w, b, l2 = w[keep], b[keep], l2[keep]
                logits, proba, residual, gradient = logits[keep], proba[keep], residual[keep], gradient[keep]
                weights = weights[keep]
                targets = targets if self.link == "softmax" else targets[keep]
                history.keep(keep)
                p = len(active)
            # preconditioner: curvature per unit variance of a feature, per problem, times the rows' spectrum
            scale = (scale_of(proba) * weights[:, 0]).sum(-1)
            diag_w = (scale[:, None] * eigvals[None, :] + l2[:, None])[:, None, :].expand(p, m, r).reshape(p, m * r)
            diag_b = scale.clamp(min=1e-12)[:, None].expand(p, k)
            direction = history.direction(gradient, 1 / torch.cat([diag_w, diag_b], 1))
            slope = torch.linalg.vecdot(direction, gradient)
            uphill = slope >= 0  # float32 noise can spoil the quasi-Newton direction: fall back to gradient
            if bool(uphill.any()):
                history.rho[:, uphill] = 0
                direction[uphill] = -gradient[uphill]
                slope = torch.linalg.vecdot(direction, gradient)
            dir_w = features.rotate_out(direction[:, : m * r].reshape(p * m, r)).reshape(p, m, r)
            if rows.dtype != dtype:
                # the weights move along the direction the rows' precision can hold, so their logits stay the
                # product of the rows and the weights (no drift between relogits)
                dir_w = dir_w.to(rows.dtype).to(dtype)
            dir_b = direction[:, m * r :]
            delta = logits_along(dir_w, p) + dir_b[:, :, None]
            self.flops += 2.0 * n * r * p * m
            alpha, logits, proba = _line_search(logits, delta, targets, weights, proba_of, l2, w, dir_w, slope)
            w = w + alpha[:, None, None] * dir_w
            b = b + alpha[:, None] * dir_b
            step_v = alpha[:, None] * direction
            previous_gradient = gradient
            iterations[active] += 1
            step += 1
            if step % RELOGIT_EVERY == 0:
                logits = logits_along(w, p) + b[:, :, None]
                proba = proba_of(logits)
                self.flops += 2.0 * n * r * p * m


def _initial_intercepts(batch, targets, weights):
    """The weighted class frequencies: the optimum when every weight is zero."""
    if batch.link == "softmax":
        prior = (weights[:, 0, None, :] * targets).sum(-1).clamp(min=1e-6)  # [P, k]
        return prior.log() - prior.log().mean(1, keepdim=True)
    prior = (weights[:, 0] * targets[:, 0]).sum(-1).clamp(1e-6, 1 - 1e-6)
    return (prior / (1 - prior)).log()[:, None]


def _line_search(logits, delta, targets, weights, proba_of, l2, w, dir_w, slope):
    """Newton's method on the derivative of F along the direction, safeguarded by a bracket.

    F is convex along any line, so its derivative is increasing: the bracket [low, high] always holds
    the minimiser. Only derivatives are used; float32 resolves them where it cannot resolve F's changes.
    Per row, with q = sum_k p_k delta_k: the loss's derivative is q - sum_k t_k delta_k (the target term
    is fixed along the line, so it is summed once) and its second derivative sum_k p_k delta_k^2 - q^2
    (for softmax and sigmoid alike). After the first trial only the problems still searching are carried
    on, sliced once each time the set shrinks (usually one or two of the batch). Returns the step and
    the logits and probabilities there, which the next gradient reuses.
    """
    row_weights = weights[:, 0]
    alpha = torch.ones_like(slope)
    moved = torch.addcmul(logits, alpha[:, None, None], delta)
    proba = proba_of(moved)
    # the searching problems' slices; at first the whole batch, uncopied
    searching = None
    part = {
        "logits": logits, "delta": delta, "squared": delta * delta, "proba": proba, "weights": row_weights, "l2": l2,
        "target_term": ((targets * delta).sum(1) * row_weights).sum(-1),
        "w_dot_d": torch.linalg.vecdot(w.flatten(1), dir_w.flatten(1)),
        "d_dot_d": torch.linalg.vecdot(dir_w.flatten(1), dir_w.flatten(1)),
        "slope": slope, "alpha": alpha, "low": torch.zeros_like(slope), "high": torch.full_like(slope, float("inf")),
    }
    for attempt in range(LINE_SEARCH_STEPS - 1):
        along = (part["proba"] * part["delta"]).sum(1)  # [P, n]
        derivative = (along * part["weights"]).sum(-1) - part["target_term"]
        derivative = derivative + part["l2"] * (part["w_dot_d"] + part["alpha"] * part["d_dot_d"])
        unfinished = derivative.abs() > LINE_SEARCH_TOLERANCE * part["slope"].abs()
        if not bool(unfinished.any()):
            break
        if not bool(unfinished.all()):
            searching = (torch.arange(len(slope), device=slope.device) if searching is None else searching)[unfinished]
            part = {name: value[unfinished] for name, value in part.items()}
            derivative, along = derivative[unfinished], along[unfinished]
        curvature = (part["proba"] * part["squared"]).sum(1) - along * along
        second = (curvature * part["weights"]).sum(-1) + part["l2"] * part["d_dot_d"]
        step, low, high = part["alpha"], part["low"], part["high"]
        low = torch.where(derivative < 0, step, low)
        high = torch.where(derivative > 0, step, high)
        newton = step - derivative / second.clamp(min=1e-30)
        inside = (newton > low) & (newton < high)
        fallback = torch.where(torch.isinf(high), 2 * low.clamp(min=step), (low + high) / 2)
        step = torch.where(inside, newton, fallback)
        part_moved = torch.addcmul(part["logits"], step[:, None, None], part["delta"])
        part.update(alpha=step, low=low, high=high, proba=proba_of(part_moved))
        if searching is None:
            alpha, moved, proba = step, part_moved, part["proba"]
        else:
            alpha[searching], moved[searching], proba[searching] = step, part_moved, part["proba"]
    return alpha, moved, proba
