"""The published-like cohort's training-sample spread, derived from what the pool design measures on real
images (benchmarks/pool_calibration.py; docs/bootstrap.md, "The published-like spread, measured") instead
of chosen by hand.

The rule: the sd of an encoder's CRS difference to the reference over training samples goes as n ** -b
in the training size n; b = 0.5 (1 / sqrt(n), a smooth fit's error) by default. Across the pool's two
measured sizes b was 0.48 for one encoder pair and 0.30 (s.e. 0.06) for the other, so the benchmark also
runs the slower decay, which extrapolates the larger spread. The
published-like tasks' training sizes follow from their test sets by the protocol's 70 / 10 / 20 split
(3.5 training images per test case). The simulator expresses the spread as `refit_sd`, the relative sd of
an encoder's separation between fits on fresh training samples (`cohort.realise_refits`), one value for
every task of a design; its per-task CRS-difference sd (`training_sample_covariance` of the encoder and of
the reference, fitted independently, through the CRS's linear weights) grows with it almost linearly.
`matching_refit_sd` finds the `refit_sd` whose RMS over encoders of that sd equals the target, and the
target is the RMS over the tasks of the extrapolated spreads, so the cross-task CRS (the tasks' mean, each
task's training sample its own) has the extrapolated spread of its difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from crsbench.crs.definition import CRSDefinition, crs_batch
from crsbench.scoring.axes import AXES
from crsbench.simulation.cohort import Design, training_sample_covariance

TRAINING_PER_TEST_CASE = 70 / 20  # the protocol's default split: 70 % training, 20 % test

# measured by the pool design (docs/bootstrap.md): the RMS over its two encoder pairs of the CRS
# difference's sd over training samples of POOL_SIZE images (Lite0 and raw-pixels against colour-texture)
POOL_SIZE = 280
POOL_CRS_SD = float(np.sqrt((5.32**2 + 2.48**2) / 2))  # 900 draws


def training_sizes(design: Design) -> tuple[int, ...]:
    """Each task's training size under the protocol's split of the task's test set."""
    return tuple(int(round(design.cases(task) * TRAINING_PER_TEST_CASE)) for task in design.tasks)


def extrapolated_sd(measured_sd: float, measured_n: int, n: float, exponent: float = 0.5) -> float:
    """The spread at training size n under the rule sd proportional to n ** -exponent."""
    return float(measured_sd * (measured_n / n) ** exponent)


def task_target(design: Design, measured_sd: float = POOL_CRS_SD, measured_n: int = POOL_SIZE,
                exponent: float = 0.5) -> float:
    """The per-task CRS-difference sd that gives the cross-task CRS its extrapolated spread: the RMS over the
    tasks of each task's extrapolated sd (the cross-task variance is the tasks' variances summed over T^2)."""
    spreads = [extrapolated_sd(measured_sd, measured_n, n, exponent) for n in training_sizes(design)]
    return float(np.sqrt(np.mean(np.square(spreads))))


def crs_weights(config: CRSDefinition, axes: Sequence[str] = AXES) -> np.ndarray:
    """(A,) the CRS's change per unit of each axis (the CRS is linear in the axes)."""
    unit = np.zeros((len(axes), 2, len(axes)))
    unit[np.arange(len(axes)), 1, np.arange(len(axes))] = 1.0
    return crs_batch(unit, 0, config, list(axes)).crs[:, 1]


def crs_spread(design: Design, reference: str, refit_sd: float, config: CRSDefinition) -> float:
    """The RMS over the other encoders of one task's CRS-difference sd over training samples, every encoder
    at this `refit_sd` (each probe fitted on its own, so the encoder's and the reference's variances add)."""
    weights = crs_weights(config)
    covariance = {t.name: training_sample_covariance(replace(t, refit_sd=refit_sd), design)
                  for t in design.encoders}
    variances = [weights @ (covariance[t.name] + covariance[reference]) @ weights
                 for t in design.encoders if t.name != reference]
    return float(np.sqrt(np.mean(variances)))


def matching_refit_sd(design: Design, reference: str, target: float, config: CRSDefinition,
                      start: float = 0.02, steps: int = 3) -> float:
    """The `refit_sd` whose `crs_spread` is `target`, by secant steps from the origin (the spread is 0 at
    0 and nearly linear in the refit sd)."""
    refit_sd = start
    for _ in range(steps):
        refit_sd *= target / crs_spread(design, reference, refit_sd, config)
    return float(refit_sd)
