"""Batched L2 logistic regression: every C of a grid (and every label of a multi-label task) solved as
one problem in torch, float32 BLAS on the GPU when there is one, the CPU otherwise.

The objective is scikit-learn's, problem by problem: with n the number of rows a problem sees,
    F(W, b) = (1/n) sum_i loss_i(z_i W + b) + ||W||^2 / (2 C n),
intercept unpenalised; softmax loss over the classes present (multinomial), or one sigmoid per
problem. Masked rows (NaN labels of a multi-label task) carry zero weight.

Solver: L-BFGS with
  - a preconditioner from the training rows' second moments: in the eigenbasis of z'z/n the
    Hessian is close to diagonal, c * eigenvalue + 1/(C n), so one eigendecomposition serves every C;
  - an exact line search: a linear model's logits move linearly along a search direction, so after
    one product z @ direction the line search is elementwise work, and it uses derivatives only,
    which float32 resolves where function differences would not;
  - converged problems leave the batch, so the weakly regularised ones do not pay for the rest.
When d > n the rows span at most n directions and the optimum lies in their span (representer
theorem), so the problem is solved in that basis: exact, and much smaller at low label fractions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

HISTORY = 10  # L-BFGS memory
COVARIANCE_ROWS = 4096  # rows used to estimate the preconditioner; it need not be exact
LINE_SEARCH_STEPS = 12
RELOGIT_EVERY = 10  # logits are updated along each step; recomputing them bounds float32 drift


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


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
    grad_norm: np.ndarray  # [P] max |gradient| of F, as the solver last saw it
    iterations: np.ndarray  # [P]
    gemm_flops: float  # floating-point operations spent in matrix products with the rows


def _softmax_terms(logits, targets):
    proba = torch.softmax(logits, dim=-1)
    return proba, proba - targets.unsqueeze(1)


def _sigmoid_terms(logits, targets):
    proba = torch.sigmoid(logits)
    return proba, proba - targets.unsqueeze(-1)


def _softmax_curvature(proba, delta):
    """delta' (diag p - p p') delta, per row and problem."""
    weighted = (proba * delta).sum(-1)
    return (proba * delta * delta).sum(-1) - weighted * weighted


def _sigmoid_curvature(proba, delta):
    return (proba * (1 - proba) * delta * delta).sum(-1)


def _softmax_scale(proba):
    # mean eigenvalue of diag p - p p' over its k - 1 non-trivial directions
    k = proba.shape[-1]
    return (1 - (proba * proba).sum(-1)) / max(k - 1, 1)


def _sigmoid_scale(proba):
    return (proba * (1 - proba)).sum(-1)


# link -> (probabilities and residuals, directional curvature, curvature scale for the preconditioner)
LINKS = {
    "softmax": (_softmax_terms, _softmax_curvature, _softmax_scale),
    "sigmoid": (_sigmoid_terms, _sigmoid_curvature, _sigmoid_scale),
}


class _Features:
    """The design matrix the solver multiplies by, and the map back to standardised features.

    `rows` is z itself, or z's coordinates in the orthonormal basis of its row span when d > n.
    `eigvecs`/`eigvals` diagonalise rows'rows/n (identity when rows are already principal coordinates).
    """

    def __init__(self, z: np.ndarray, device, dtype):
        n, d = z.shape
        self.to_features = None  # [d, r]: maps span coefficients back to standardised features
        if n < d:
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
            sample = self.rows
            if n > COVARIANCE_ROWS:  # evenly spaced rows: deterministic, and the estimate need not be exact
                sample = self.rows[torch.linspace(0, n - 1, COVARIANCE_ROWS, device=device).long()]
            moments = (sample.T @ sample).to(torch.float32) / len(sample)
            eigvals, eigvecs = torch.linalg.eigh(moments)
            self.eigvecs = eigvecs.to(dtype)
            self.eigvals = eigvals.clamp(min=0).to(dtype)

    @property
    def dim(self) -> int:
        return self.rows.shape[1]

    def rotate_in(self, w):  # [r, m] -> principal coordinates
        return w if self.eigvecs is None else self.eigvecs.T @ w

    def rotate_out(self, w):
        return w if self.eigvecs is None else self.eigvecs @ w

    def feature_gradient(self, grad_w):  # [r, m] in solver space -> standardised feature space
        return grad_w if self.to_features is None else self.to_features @ grad_w


class _State:
    """Per-problem L-BFGS state for the problems still in the batch."""

    def __init__(self, n_problems, dim, k, device, dtype):
        self.w = torch.zeros(n_problems, dim, k, device=device, dtype=dtype)
        self.b = torch.zeros(n_problems, k, device=device, dtype=dtype)
        self.s_w = torch.zeros(HISTORY, n_problems, dim, k, device=device, dtype=dtype)
        self.s_b = torch.zeros(HISTORY, n_problems, k, device=device, dtype=dtype)
        self.y_w = torch.zeros_like(self.s_w)
        self.y_b = torch.zeros_like(self.s_b)
        self.rho = torch.zeros(HISTORY, n_problems, device=device, dtype=dtype)
        self.filled = torch.zeros(HISTORY, n_problems, dtype=torch.bool, device=device)


def _gemm_layout(w):  # [P, r, k] -> [r, P*k]
    return w.permute(1, 0, 2).reshape(w.shape[1], -1)


def _from_gemm(m, n_problems, k):  # [r, P*k] -> [P, r, k]
    return m.reshape(m.shape[0], n_problems, k).permute(1, 0, 2)


def _dot(a_w, a_b, c_w, c_b):
    return (a_w * c_w).sum((-2, -1)) + (a_b * c_b).sum(-1)


def solve(z: np.ndarray, batch: Batch, max_iter: int, tol: float, device=None, dtype=torch.float32) -> Solution:
    """Minimise every problem of `batch` on standardised rows `z` [n, d]; stop each at max |grad| <= tol."""
    device = torch.device(device or default_device())
    terms, curvature, scale_of = LINKS[batch.link]
    features = _Features(z, device, dtype)
    rows, n_problems, k = features.rows, len(batch.l2), batch.n_outputs
    targets = torch.as_tensor(batch.targets, device=device, dtype=dtype)
    weights = torch.as_tensor(batch.row_weights, device=device, dtype=dtype)
    l2 = torch.as_tensor(batch.l2, device=device, dtype=dtype)
    state = _State(n_problems, features.dim, k, device, dtype)
    grad_norm = torch.full((n_problems,), float("inf"), dtype=torch.float64, device=device)
    iterations = torch.zeros(n_problems, dtype=torch.long, device=device)
    _initialise_intercepts(state, batch, targets, weights)

    active = torch.arange(n_problems, device=device)
    logits = previous = None
    step, flops = 0, 0.0
    while active.numel() and step <= max_iter:
        w, b = state.w[active], state.b[active]
        tw, wt = (targets, weights[:, active]) if batch.link == "softmax" else (targets[:, active], weights[:, active])
        if logits is None or step % RELOGIT_EVERY == 0:
            logits = _from_gemm(rows @ _gemm_layout(w), len(active), k).permute(1, 0, 2) + b
            flops += 2.0 * rows.numel() * len(active) * k
        proba, residual = terms(logits, tw)
        residual = residual * wt.unsqueeze(-1)
        grad_w = _from_gemm(rows.T @ residual.reshape(len(rows), -1), len(active), k) + l2[active, None, None] * w
        grad_b = residual.sum(0)
        flops += 2.0 * rows.numel() * len(active) * k
        if previous is not None:  # the batch shrinks only after this, so `previous` matches `active`
            _remember(state, active, previous, grad_w, grad_b)
        norm = _feature_grad_norm(features, grad_w, grad_b)
        grad_norm[active] = norm
        done = (norm <= tol) | (iterations[active] >= max_iter)
        if done.any():
            keep = ~done
            active, logits, proba, grad_w, grad_b, wt = (
                active[keep], logits[:, keep], proba[:, keep], grad_w[keep], grad_b[keep], wt[:, keep]
            )
            tw = tw if batch.link == "softmax" else tw[:, keep]
            if not active.numel():
                break
            w, b = state.w[active], state.b[active]
        scale = (scale_of(proba) * wt).sum(0)  # curvature per unit variance of a feature, per problem
        dir_w, dir_b = _direction(state, active, features, grad_w, grad_b, scale, l2[active])
        slope = _dot(dir_w, dir_b, grad_w, grad_b)
        uphill = slope >= 0  # float32 noise can spoil the quasi-Newton direction: fall back to gradient
        if uphill.any():
            state.filled[:, active[uphill]] = False
            dir_w[uphill], dir_b[uphill] = -grad_w[uphill], -grad_b[uphill]
            slope = _dot(dir_w, dir_b, grad_w, grad_b)
        delta = _from_gemm(rows @ _gemm_layout(dir_w), len(active), k).permute(1, 0, 2) + dir_b
        flops += 2.0 * rows.numel() * len(active) * k
        alpha = _line_search(logits, delta, tw, wt, terms, curvature, l2[active], w, dir_w, slope)
        step_w, step_b = alpha[:, None, None] * dir_w, alpha[:, None] * dir_b
        state.w[active] = w + step_w
        state.b[active] = b + step_b
        logits = logits + alpha[None, :, None] * delta
        previous = (step_w, step_b, grad_w, grad_b)
        iterations[active] += 1
        step += 1
    solution_w = state.w
    if features.to_features is not None:
        solution_w = torch.einsum("dr,prk->pdk", features.to_features, solution_w)
    return Solution(
        solution_w.double().cpu().numpy(), state.b.double().cpu().numpy(),
        grad_norm.cpu().numpy(), iterations.cpu().numpy(), flops,
    )


def _initialise_intercepts(state, batch, targets, weights):
    """Start from the weighted class frequencies: the optimum when every weight is zero."""
    if batch.link == "softmax":
        prior = (weights[:, :1] * targets).sum(0).clamp(min=1e-6)
        state.b[:] = (prior.log() - prior.log().mean())
    else:
        prior = (weights * targets).sum(0).clamp(1e-6, 1 - 1e-6)
        state.b[:, 0] = (prior / (1 - prior)).log()


def _feature_grad_norm(features, grad_w, grad_b):
    per_problem = _gemm_layout(grad_w)
    in_features = features.feature_gradient(per_problem)
    in_features = _from_gemm(in_features, grad_w.shape[0], grad_w.shape[2])
    return torch.maximum(in_features.abs().amax((-2, -1)), grad_b.abs().amax(-1)).double()


def _remember(state, active, previous, grad_w, grad_b):
    step_w, step_b, old_w, old_b = previous
    y_w, y_b = grad_w - old_w, grad_b - old_b
    curvature = _dot(step_w, step_b, y_w, y_b)
    good = curvature > 1e-30
    state.s_w[:, active] = torch.roll(state.s_w[:, active], 1, 0)
    state.s_b[:, active] = torch.roll(state.s_b[:, active], 1, 0)
    state.y_w[:, active] = torch.roll(state.y_w[:, active], 1, 0)
    state.y_b[:, active] = torch.roll(state.y_b[:, active], 1, 0)
    state.rho[:, active] = torch.roll(state.rho[:, active], 1, 0)
    state.filled[:, active] = torch.roll(state.filled[:, active], 1, 0)
    state.s_w[0, active], state.s_b[0, active] = step_w, step_b
    state.y_w[0, active], state.y_b[0, active] = y_w, y_b
    state.rho[0, active] = torch.where(good, 1 / curvature.clamp(min=1e-30), torch.zeros_like(curvature))
    state.filled[0, active] = good


def _precondition(features, vec_w, vec_b, scale, l2):
    """Approximate inverse Hessian: diagonal in the eigenbasis of the rows' second moments."""
    n_problems, _, k = vec_w.shape
    rotated = _from_gemm(features.rotate_in(_gemm_layout(vec_w)), n_problems, k)
    diagonal = scale[:, None] * features.eigvals[None, :] + l2[:, None]  # [P, r]
    rotated = rotated / diagonal[:, :, None]
    out_w = _from_gemm(features.rotate_out(_gemm_layout(rotated)), n_problems, k)
    return out_w, vec_b / scale.clamp(min=1e-12)[:, None]


def _direction(state, active, features, grad_w, grad_b, scale, l2):
    """L-BFGS two-loop recursion, batched over problems, with the preconditioner as initial inverse Hessian."""
    s_w, s_b, y_w, y_b = state.s_w[:, active], state.s_b[:, active], state.y_w[:, active], state.y_b[:, active]
    rho, filled = state.rho[:, active], state.filled[:, active]
    q_w, q_b = -grad_w, -grad_b
    alphas = []
    for i in range(HISTORY):
        a = torch.where(filled[i], rho[i] * _dot(s_w[i], s_b[i], q_w, q_b), torch.zeros_like(rho[i]))
        q_w, q_b = q_w - a[:, None, None] * y_w[i], q_b - a[:, None] * y_b[i]
        alphas.append(a)
    r_w, r_b = _precondition(features, q_w, q_b, scale, l2)
    if filled[0].any():
        # rescale the preconditioner by the latest secant pair, as plain L-BFGS does with the identity
        h_y_w, h_y_b = _precondition(features, y_w[0], y_b[0], scale, l2)
        gamma = _dot(s_w[0], s_b[0], y_w[0], y_b[0]) / _dot(y_w[0], y_b[0], h_y_w, h_y_b).clamp(min=1e-30)
        gamma = torch.where(filled[0], gamma, torch.ones_like(gamma))
        r_w, r_b = gamma[:, None, None] * r_w, gamma[:, None] * r_b
    for i in reversed(range(HISTORY)):
        beta = torch.where(filled[i], rho[i] * _dot(y_w[i], y_b[i], r_w, r_b), torch.zeros_like(rho[i]))
        coeff = alphas[i] - beta
        r_w, r_b = r_w + coeff[:, None, None] * s_w[i], r_b + coeff[:, None] * s_b[i]
    return r_w, r_b


def _line_search(logits, delta, targets, weights, terms, curvature, l2, w, dir_w, slope):
    """Newton's method on the derivative of F along the direction, safeguarded by a bracket.

    F is convex along any line, so its derivative is increasing: the bracket [low, high] always holds
    the minimiser. Only derivatives are used; float32 resolves them where it cannot resolve F's changes.
    """
    w_dot_d = (w * dir_w).sum((-2, -1))
    d_dot_d = (dir_w * dir_w).sum((-2, -1))
    alpha = torch.ones_like(slope)
    low, high = torch.zeros_like(slope), torch.full_like(slope, float("inf"))
    for _ in range(LINE_SEARCH_STEPS):
        moved = logits + alpha[None, :, None] * delta
        proba, residual = terms(moved, targets)
        derivative = ((residual * delta).sum(-1) * weights).sum(0) + l2 * (w_dot_d + alpha * d_dot_d)
        second = (curvature(proba, delta) * weights).sum(0) + l2 * d_dot_d
        if bool((derivative.abs() <= 1e-3 * slope.abs()).all()):
            break
        low = torch.where(derivative < 0, alpha, low)
        high = torch.where(derivative > 0, alpha, high)
        newton = alpha - derivative / second.clamp(min=1e-30)
        inside = (newton > low) & (newton < high)
        fallback = torch.where(torch.isinf(high), 2 * low.clamp(min=alpha), (low + high) / 2)
        finished = derivative.abs() <= 1e-3 * slope.abs()
        alpha = torch.where(finished, alpha, torch.where(inside, newton, fallback))
    return alpha
