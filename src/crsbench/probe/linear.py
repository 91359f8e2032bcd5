"""Linear probes on frozen embeddings: standardise on the training subset, L2 logistic regression,
regularisation chosen on validation log-loss (a proper scoring rule, so calibration is not traded
for AUROC). Multinomial for single-label and ordinal tasks, one sigmoid per label for multi-label.

The objective is scikit-learn's LogisticRegression (lbfgs) objective, problem by problem; every C of
the grid, and every label of a multi-label task, is solved at once by `solver`. The chosen
fit's gradient is then rechecked from the standardised rows: a fit that did not converge says so (`converged`).

`fit_probe` is a pure function of arrays, so fits can be batched or moved to another executor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import torch

from crsbench.probe import solver
from crsbench.core.hashing import sha256_of

DEFAULT_C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
# The solver stops this far inside the tolerance. A max-gradient of 1e-4 still leaves probabilities
# ~1e-2 from the optimum at weak regularisation (0.4 on weak-signal synthetic features at C = 10); 1e-6
# brings them within 1e-3 on the real embeddings of the tests, though not on that synthetic worst case
# (~2e-2), where each further factor of 10 in probability costs about half again the iterations.
SOLVER_MARGIN = 0.01
# float32 resolves the gradient of a mean loss to about 1e-8; a tighter stopping point needs float64
FLOAT32_GRADIENT_FLOOR = 1e-7
# Part of the probe fingerprint, so record keys change with the solver: the batched float32 engine's
# probabilities differ slightly from those of the former float64 scikit-learn probe, and from version to
# version (3: the feature basis, not the row span, from three quarters of d training rows up; 4: softmax
# weights in k - 1 sum-zero coordinates, which round differently; 5: the bfloat16 warm-up where it is native).
SOLVER = "batched-lbfgs-5"


@dataclass(frozen=True)
class ProbeConfig:
    c_grid: tuple[float, ...] = DEFAULT_C_GRID
    max_iter: int = 1000
    tol: float = 1e-4

    def fingerprint(self) -> str:
        return sha256_of("probe", json.dumps([list(self.c_grid), self.max_iter, self.tol, SOLVER]))[:16]


@dataclass
class Standardiser:
    """Standardises on the training subset; a feature constant there is left unscaled."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> "Standardiser":
        mean = x.mean(axis=0, dtype=np.float64)
        scale = x.std(axis=0, dtype=np.float64)
        # a feature constant on the training subset carries no signal; leave it unscaled
        return cls(mean, np.where(scale > 1e-8, scale, 1.0))

    @classmethod
    def fit_transform_float32(cls, x: np.ndarray) -> tuple["Standardiser", np.ndarray]:
        """The fit and the solver's float32 input in two passes, with no float64 copy of x: the mean
        and the variance accumulate in float64, the centred rows are float32."""
        mean = x.mean(axis=0, dtype=np.float64)
        z = np.subtract(x, mean.astype(np.float32), dtype=np.float32)
        scale = np.sqrt(np.einsum("ij,ij->j", z, z, dtype=np.float64) / max(len(z), 1))
        standardiser = cls(mean, np.where(scale > 1e-8, scale, 1.0))
        return standardiser, np.multiply(z, (1 / standardiser.scale).astype(np.float32), out=z)

    def transform(self, x: np.ndarray, dtype=np.float64) -> np.ndarray:
        return ((x - self.mean) / self.scale).astype(dtype, copy=False)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _sigmoid(logits: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(0.5 * logits))  # overflow-free logistic


def _multinomial_proba(logits, classes, constants, n_classes):
    proba = np.zeros((len(logits), n_classes))
    proba[:, classes] = _softmax(logits)
    return proba


def _binary_proba(logits, classes, constants, n_classes):
    proba = np.zeros((len(logits), n_classes))
    positive = _sigmoid(logits[:, 0])
    proba[:, classes[0]], proba[:, classes[1]] = 1 - positive, positive
    return proba


def _multi_label_proba(logits, classes, constants, n_classes):
    proba = np.tile(constants, (len(logits), 1))  # labels with one class in training: their prevalence
    proba[:, classes] = _sigmoid(logits)
    return proba


# head -> (probabilities from logits, link the engine fits)
HEADS = {
    "multinomial": (_multinomial_proba, "softmax"),
    "binary": (_binary_proba, "sigmoid"),
    "multi_label": (_multi_label_proba, "sigmoid"),
}


@dataclass
class FittedProbe:
    task_type: str
    n_classes: int
    standardiser: Standardiser
    head: str  # a key of HEADS
    coef: np.ndarray  # [d, m] on standardised features, float64
    intercept: np.ndarray  # [m]
    classes: np.ndarray  # output column of each model column (multi-label: the fitted labels)
    constants: np.ndarray  # multi-label: prevalence of each label (used where a label was not fitted)
    chosen_c: list[float]
    val_nll: float
    converged: bool = True
    grad_norm: float = 0.0  # max |gradient| of the objective at the chosen fits, as rechecked
    gemm_flops: float = 0.0  # work the solver did in matrix products (for throughput figures)
    temperature: float = 1.0  # fitted on validation log-loss after C is chosen; shown beside, never used to score

    # the standardiser folded into the weights (coef / scale, intercept - mean / scale @ coef), made on first
    # use: a condition's logits are then one product of its raw rows, a quarter of the time of standardising
    # them first; in float64 the two agree to about 1e-13
    _folded: tuple | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def summary_c(self) -> float:
        return float(np.nanmedian(self.chosen_c)) if np.isfinite(self.chosen_c).any() else float("nan")

    def logits(self, x: np.ndarray) -> np.ndarray:
        """float64 [n, m] logits of the raw embeddings `x` [n, d]."""
        if self._folded is None:
            coef = self.coef / self.standardiser.scale[:, None]
            # the offset summed elementwise, not by a BLAS product, whose split of the sum can depend on
            # threads and alignment: the same probe gives the same bits in every process
            shift = ((self.standardiser.mean / self.standardiser.scale)[:, None] * self.coef).sum(0)
            self._folded = (coef, self.intercept - shift)
        coef, intercept = self._folded
        return np.asarray(x, dtype=np.float64) @ coef + intercept

    def proba_from_logits(self, logits: np.ndarray, tempered: bool = False) -> np.ndarray:
        """The probabilities of `logits(x)`; `tempered`: with the logits divided by the validation
        temperature (the standard deployment fix for miscalibration), for the ECE shown beside the
        calibration axis."""
        if tempered:
            logits = logits / self.temperature
        return HEADS[self.head][0](logits, self.classes, self.constants, self.n_classes)

    def predict_proba(self, x: np.ndarray, tempered: bool = False) -> np.ndarray:
        """The probe's probabilities of the raw embeddings `x` (see `proba_from_logits`)."""
        return self.proba_from_logits(self.logits(x), tempered)


TEMPERATURE_BOUNDS = (0.05, 20.0)


def fit_temperature(val_loss) -> float:
    """The temperature T minimising `val_loss(T)` (validation log-loss of logits / T), on a log scale.

    One scalar per probe (per task for multi-label), bounded so that a separable validation split
    cannot send it to 0. Bounded Brent search in log T.
    """
    from scipy.optimize import minimize_scalar

    low, high = np.log(TEMPERATURE_BOUNDS)
    result = minimize_scalar(lambda log_t: val_loss(float(np.exp(log_t))), bounds=(low, high), method="bounded",
                             options={"xatol": 1e-4})
    return float(np.exp(result.x))


def _log_loss(y: np.ndarray, proba: np.ndarray) -> float:
    p = np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def _binary_log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def _pick(losses: list[float], c_values: list[float]) -> int:
    """The first C (from strong to weak regularisation) whose loss no later C beats by over 1e-12."""
    best = 0
    for i in range(1, len(losses)):
        if losses[i] < losses[best] - 1e-12:
            best = i
    return best


def _solver_dtype(config: ProbeConfig):
    return torch.float64 if config.tol * SOLVER_MARGIN < FLOAT32_GRADIENT_FLOOR else torch.float32


def _solve(z, batch, config: ProbeConfig, device):
    return solver.solve(z, batch, config.max_iter, config.tol * SOLVER_MARGIN, device, _solver_dtype(config))


CHECK_ROWS = 4096  # rows per chunk of the gradient check: no converted copy of the whole training matrix


def _checked_gradient(z: np.ndarray, targets, weights, l2, coef, intercept, link: str, dtype=torch.float64) -> float:
    """max |gradient| of the objective at the solution, recomputed from the standardised rows (not the
    solver's basis or its running logits): one softmax problem, or independent sigmoid problems side by
    side (one column of targets, weights, l2 and coef each). The products run in `dtype`, the solver's
    precision, chunk by chunk; the chunks' sums accumulate in float64. In float32 the result is within
    about 1e-7 of the float64 one (a test bounds it), far inside the tolerances that use float32."""
    coef_t, intercept_t = torch.as_tensor(coef, dtype=dtype), torch.as_tensor(intercept, dtype=dtype)
    targets_t = torch.as_tensor(targets, dtype=dtype)
    weights_t = torch.as_tensor(weights, dtype=dtype).reshape(len(z), -1)
    gradient = torch.as_tensor(l2) * torch.as_tensor(coef, dtype=torch.float64)
    intercept_gradient = torch.zeros(len(intercept), dtype=torch.float64)
    for start in range(0, len(z), CHECK_ROWS):
        rows = slice(start, start + CHECK_ROWS)
        chunk = torch.as_tensor(z[rows]).to(dtype)  # a view when z is already in the solver's precision
        logits = chunk @ coef_t + intercept_t
        proba = torch.softmax(logits, 1) if link == "softmax" else torch.sigmoid(logits)
        residual = (proba - targets_t[rows]) * weights_t[rows]
        gradient += (residual.T @ chunk).T.double()  # z'r as (r'z)': a far faster product
        intercept_gradient += residual.sum(0).double()
    return float(max(gradient.abs().max(), intercept_gradient.abs().max()))


def _validation_logits(z_val: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> np.ndarray:
    """[P, n_val, k] logits of every problem's fit, from one matrix product."""
    n_problems, d, k = coef.shape
    stacked = coef.transpose(1, 0, 2).reshape(d, n_problems * k)
    return (z_val @ stacked).reshape(len(z_val), n_problems, k).transpose(1, 0, 2) + intercept[:, None, :]


def fit_probe(
    task_type: str,
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    n_classes: int,
    config: ProbeConfig = ProbeConfig(),
    device: str | None = None,
) -> FittedProbe:
    """`device`: a torch device for the solver; the GPU when there is one, else the CPU, by default."""
    standardiser, z = Standardiser.fit_transform_float32(x_train)
    z_val = standardiser.transform(x_val)
    c_values = sorted(config.c_grid)
    if task_type == "multi_label":
        return _fit_multi_label(z, y_train, z_val, y_val, n_classes, standardiser, c_values, config, device)
    return _fit_single_label(task_type, z, y_train.astype(int), z_val, y_val.astype(int), n_classes, standardiser, c_values, config, device)


def _fit_single_label(task_type, z, y, z_val, y_val, n_classes, standardiser, c_values, config, device):
    classes = np.unique(y)
    if len(classes) < 2:
        raise ValueError(f"the probe needs at least two classes in the training subset; it has only class {classes[0]}")
    n, grid = len(y), len(c_values)
    head = "binary" if len(classes) == 2 else "multinomial"
    if head == "binary":
        targets = np.repeat((y == classes[1]).astype(np.float32)[:, None], grid, axis=1)
        check_targets = targets[:, :1]
    else:
        targets = (y[:, None] == classes[None, :]).astype(np.float32)
        check_targets = targets
    l2 = np.array([1.0 / (c * n) for c in c_values])
    batch = solver.Batch(HEADS[head][1], targets, np.full((n, grid), 1.0 / n, np.float32), l2, 1 if head == "binary" else len(classes))
    solution = _solve(z, batch, config, device)
    predict = HEADS[head][0]
    logits = _validation_logits(z_val, solution.coef, solution.intercept)
    losses = [_log_loss(y_val, predict(logits[g], classes, None, n_classes)) for g in range(grid)]
    best = _pick(losses, c_values)
    coef, intercept = solution.coef[best], solution.intercept[best]
    grad = _checked_gradient(z, check_targets, np.full(n, 1.0 / n), l2[best], coef, intercept, batch.link, _solver_dtype(config))
    temperature = fit_temperature(lambda t: _log_loss(y_val, predict(logits[best] / t, classes, None, n_classes)))
    return FittedProbe(
        task_type, n_classes, standardiser, head, coef, intercept, classes, np.zeros(0), [c_values[best]],
        losses[best], converged=grad <= config.tol, grad_norm=grad, gemm_flops=solution.gemm_flops,
        temperature=temperature,
    )


def _fit_multi_label(z, y, z_val, y_val, n_classes, standardiser, c_values, config, device):
    seen = ~np.isnan(y)
    counts = seen.sum(0)
    positives = np.nansum(y, axis=0)
    constants = np.where(counts > 0, positives / np.maximum(counts, 1), 0.5)
    fitted = [j for j in range(n_classes) if 0 < positives[j] < counts[j]]  # both classes seen
    grid = len(c_values)
    chosen = [float("nan")] * n_classes
    if not fitted:
        d = z.shape[1]
        return FittedProbe("multi_label", n_classes, standardiser, "multi_label", np.zeros((d, 0)), np.zeros(0),
                           np.zeros(0, int), constants, chosen, float("nan"))
    # problem p = (label fitted[p // grid], C c_values[p % grid])
    labels = np.repeat(fitted, grid)
    c_of = np.tile(c_values, len(fitted))
    targets = np.nan_to_num(y[:, labels], nan=0.0).astype(np.float32)
    weights = (seen[:, labels] / counts[labels]).astype(np.float32)
    l2 = 1.0 / (c_of * counts[labels])
    solution = _solve(z, solver.Batch("sigmoid", targets, weights, l2, 1), config, device)
    val_logits = _validation_logits(z_val, solution.coef, solution.intercept)[:, :, 0]  # [P, n_val]
    val_proba = _sigmoid(val_logits)
    picked, losses = [], []
    for i, j in enumerate(fitted):
        observed = ~np.isnan(y_val[:, j])
        problems = range(i * grid, (i + 1) * grid)
        label_losses = [_binary_log_loss(y_val[observed, j], val_proba[p, observed]) for p in problems]
        best = _pick(label_losses, c_values)
        picked.append(problems[best])
        chosen[j] = c_values[best]
        losses.append(label_losses[best])
    coef, intercept = solution.coef[picked, :, 0].T, solution.intercept[picked, 0]
    grad = _checked_gradient(z, targets[:, picked], weights[:, picked], l2[picked], coef, intercept, "sigmoid", _solver_dtype(config))
    chosen_logits = val_logits[picked]  # [labels, n_val]

    def tempered_loss(t: float) -> float:
        return float(np.mean([_binary_log_loss(y_val[~np.isnan(y_val[:, j]), j],
                                               _sigmoid(chosen_logits[i, ~np.isnan(y_val[:, j])] / t))
                              for i, j in enumerate(fitted)]))

    return FittedProbe(
        "multi_label", n_classes, standardiser, "multi_label", coef, intercept,
        np.array(fitted), constants, chosen, float(np.mean(losses)), converged=grad <= config.tol, grad_norm=grad,
        gemm_flops=solution.gemm_flops, temperature=fit_temperature(tempered_loss),
    )
