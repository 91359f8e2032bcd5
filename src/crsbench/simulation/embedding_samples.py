"""Embeddings drawn from a known population, so that a fresh training sample is a fresh draw of rows and a
probe refitted on it is the project's probe on those rows: the training-sample spread arises from the fits
themselves, not from a scalar model of it (`cohort.realise_refits`) that the refits would then estimate.

Per encoder, two classes: a row is N(0, I_d) plus, for the positive class, a mean shift of Mahalanobis
length `separation` spread evenly over the first `signal` coordinates, so the best linear probe's population
AUROC is Phi(separation / sqrt(2)). The perturbed copy of a row adds N(0, noise^2 I_d), which shrinks the
separation to separation / sqrt(1 + noise^2). benchmarks/pool_calibration.py (`--generated`) runs its pool
design on these rows in place of embedded images (docs/bootstrap.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class GeneratedEncoder:
    name: str
    dim: int
    separation: float
    signal: int = 8
    noise: float = 1.0  # sd of the perturbation added to each coordinate

    def population_auroc(self, perturbed: bool = False) -> float:
        """The AUROC of the population's best linear score (the class means' direction)."""
        separation = self.separation / np.sqrt(1 + self.noise**2) if perturbed else self.separation
        return float(norm.cdf(separation / np.sqrt(2)))


# three encoders of distinct strength, named so that the middle one sorts first (the reference)
ENCODERS = (GeneratedEncoder("gen-middle", 128, 1.8), GeneratedEncoder("gen-strong", 256, 2.2),
            GeneratedEncoder("gen-weak", 64, 1.4))
POSITIVE_SHARE = 0.73  # PneumoniaMNIST's


def draw_labels(rows: int, rng: np.random.Generator, positive_share: float = POSITIVE_SHARE) -> np.ndarray:
    return (rng.random(rows) < positive_share).astype(int)


def draw_rows(encoder: GeneratedEncoder, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n, dim) float32 rows of `encoder` for these labels (module docstring)."""
    shift = np.zeros(encoder.dim)
    shift[:encoder.signal] = encoder.separation / np.sqrt(encoder.signal)
    return (rng.standard_normal((len(labels), encoder.dim)) + labels[:, None] * shift).astype(np.float32)


def perturb_rows(encoder: GeneratedEncoder, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (rows + encoder.noise * rng.standard_normal(rows.shape)).astype(np.float32)
