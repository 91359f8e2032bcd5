"""The metrics of `classification` and `calibration` under case weights, vectorised over bootstrap draws.

A case-level bootstrap draw is a vector of case weights (how often each case was drawn); every
metric of a draw is the metric of the test set with each case repeated that often. Each class is
built once per prediction vector (one sort, bin indices, per-case losses) and then evaluated on a
(B, n) weight matrix: AUROC in O(n) per draw (cumulative sums along the sorted order), ECE, the
debiased calibration error, Brier and NLL as matrix products. At unit weights they equal
metrics/classification.py and metrics/calibration.py: AUROC bit for bit (the weighted Mann-Whitney count is integer arithmetic, exact in
float64), the others up to the order of floating-point summation (tests/metrics/test_weighted_metrics.py).
"""

from __future__ import annotations

import numpy as np

from crsbench.metrics.calibration import debiased_squared_calibration_error, equal_width_bin_index, root_of_debiased
from crsbench.metrics.classification import NLL_CLIP_EPS
from crsbench.metrics.validation import validate_inputs

DEFAULT_BINS = 15


def case_major(weights) -> np.ndarray:
    """Weights as a C-contiguous float64 (n_cases, B) array: gathers by case are row copies and
    cumulative sums along cases run over contiguous draws. Accepts (B, n) weights or an array
    already in this layout (marked by the CaseMajor subclass)."""
    if isinstance(weights, CaseMajor):
        return weights
    return np.ascontiguousarray(np.atleast_2d(weights).T, dtype=np.float64).view(CaseMajor)


class CaseMajor(np.ndarray):
    """A (n_cases, B) weight array prepared by case_major."""


def _nanmean_rows(values: np.ndarray) -> np.ndarray:
    """Mean over the last axis of the defined (non-NaN) entries; NaN where none is defined."""
    defined = ~np.isnan(values)
    count = defined.sum(axis=-1)
    total = np.where(defined, values, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


class BinaryAUROC:
    """AUROC of one score column against 0/1 outcomes on the observed cases, for weight rows.

    sum over positives i of w_i * (negative weight strictly below s_i + half the negative weight
    tied with s_i), divided by (positive weight) * (negative weight): the Mann-Whitney statistic
    with each case counted w_i times, ties counted 1/2 as in metrics.classification.auroc_per_class. The
    negatives are sorted once; per draw it is one cumulative sum over them and one gather at the
    positives' places (all counts are integers, so float64 sums are exact).
    """

    def __init__(self, scores: np.ndarray, positive: np.ndarray, observed: np.ndarray | None = None):
        cases = np.arange(len(scores)) if observed is None else np.flatnonzero(observed)
        is_positive = positive[cases] == 1
        negatives = cases[~is_positive]
        order = np.argsort(scores[negatives], kind="stable")
        self.negatives = negatives[order]
        self.positives = cases[is_positive]
        negative_scores = scores[self.negatives]
        self.below = np.searchsorted(negative_scores, scores[self.positives], side="left")
        self.below_or_tied = np.searchsorted(negative_scores, scores[self.positives], side="right")
        self.has_ties = bool((self.below != self.below_or_tied).any())

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(case_major(weights))  # (n, B)
        cumulative = np.zeros((len(self.negatives) + 1, w.shape[1]))
        np.add.accumulate(w[self.negatives], axis=0, out=cumulative[1:])
        w_pos = w[self.positives]
        if self.has_ties:
            twice = (w_pos * (cumulative[self.below] + cumulative[self.below_or_tied])).sum(axis=0)
        else:
            twice = 2.0 * (w_pos * cumulative[self.below]).sum(axis=0)
        total_pos, total_neg = w_pos.sum(axis=0), cumulative[-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            auroc = (twice / 2.0) / (total_pos * total_neg)
        return np.where((total_pos > 0) & (total_neg > 0), auroc, np.nan)


class BinnedCalibration:
    """Equal-width binned calibration error of (confidence, outcome) on some cases, for weight rows."""

    def __init__(self, confidence: np.ndarray, outcome: np.ndarray, cases: np.ndarray, n_bins: int = DEFAULT_BINS):
        self.cases = cases
        bins = equal_width_bin_index(confidence[cases], n_bins)
        self._bins = bins
        rows = np.arange(len(cases))
        self.outcome = np.zeros((len(cases), n_bins))
        self.confidence = np.zeros((len(cases), n_bins))
        self.outcome[rows, bins] = outcome[cases]
        self.confidence[rows, bins] = confidence[cases]
        self._member: np.ndarray | None = None  # (cases, n_bins) bin indicator, built for the debiased error

    def _draw_weights(self, weights: np.ndarray) -> np.ndarray:
        return np.asarray(case_major(weights))[self.cases].T  # (B, cases)

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        w = self._draw_weights(weights)
        gap = np.abs(w @ self.outcome - w @ self.confidence).sum(axis=1)
        total = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, gap / total, np.nan)


    def debiased_square(self, weights: np.ndarray) -> np.ndarray:
        """metrics.calibration.debiased_squared_calibration_error per weight row: a case drawn k times counts k
        times in its bin's size, hit rate and variance term (the estimator applied to the resample)."""
        if self._member is None:
            self._member = np.zeros_like(self.outcome)
            self._member[np.arange(len(self.cases)), self._bins] = 1.0
        w = self._draw_weights(weights)
        return debiased_squared_calibration_error(w @ self._member, w @ self.outcome, w @ self.confidence)


class WeightedMetrics:
    """AUROC (macro), ECE, Brier and NLL of one prediction vector, for rows of case weights.

    The definitions are those of metrics/classification.py and metrics/calibration.py (one-vs-rest macro AUROC over the classes defined in
    the draw, the positive column's for two classes; top-label ECE for single-label, per-label for
    multi-label; the positive column's Brier for two classes, the multi-class sum otherwise; NLL
    clipped at float64 epsilon). Build once per vector; call with (B, n) weights.
    """

    def __init__(self, task_type: str, y_true, proba, n_bins: int = DEFAULT_BINS):
        y, proba = validate_inputs(task_type, y_true, proba)
        self.task_type = task_type
        self.multi_label = task_type == "multi_label"
        n, k = proba.shape
        self.binary = not self.multi_label and k == 2
        if self.multi_label:
            observed = ~np.isnan(y)
            targets = np.where(observed, y, 0.0)
        else:
            observed = np.ones((n, k), dtype=bool)
            targets = np.zeros((n, k))
            targets[np.arange(n), y] = 1.0
        self._auroc = [BinaryAUROC(proba[:, c], targets[:, c], observed[:, c]) for c in range(k)]
        self._n_bins = n_bins
        self._proba, self._y, self._targets, self._observed = proba, y, targets, observed
        self._calibration: list[BinnedCalibration] | None = None
        self._losses: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ AUROC

    @property
    def auroc_columns(self) -> list[BinaryAUROC]:
        """The rank statistics `auroc` reads: the positive column's for two classes, every class's otherwise
        (averaged by _nanmean_rows)."""
        return [self._auroc[1]] if self.binary else list(self._auroc)

    def auroc_per_class(self, weights: np.ndarray) -> np.ndarray:
        weights = case_major(weights)
        return np.stack([column(weights) for column in self._auroc], axis=-1)

    def auroc(self, weights: np.ndarray) -> np.ndarray:
        if self.binary:  # the standard binary AUROC: the positive column's (metrics.classification._summary_auroc)
            return self._auroc[1](case_major(weights))
        return _nanmean_rows(self.auroc_per_class(weights))

    # ------------------------------------------------------------------ calibration

    def _calibrations(self) -> list[BinnedCalibration]:
        if self._calibration is None:
            proba, n = self._proba, self._proba.shape[0]
            if self.multi_label:
                self._calibration = [
                    BinnedCalibration(proba[:, c], self._targets[:, c], np.flatnonzero(self._observed[:, c]), self._n_bins)
                    for c in range(proba.shape[1])
                    if self._observed[:, c].any()
                ]
            else:
                confidence = proba.max(axis=1)
                correct = (proba.argmax(axis=1) == self._y).astype(np.float64)
                self._calibration = [BinnedCalibration(confidence, correct, np.arange(n), self._n_bins)]
        return self._calibration

    def ece(self, weights: np.ndarray) -> np.ndarray:
        weights = case_major(weights)
        return _nanmean_rows(np.stack([c(weights) for c in self._calibrations()], axis=-1))

    def calibration_error_debiased_squared(self, weights: np.ndarray) -> np.ndarray:
        """metrics.calibration.calibration_error_debiased_squared per weight row (the labels' squares averaged)."""
        weights = case_major(weights)
        return _nanmean_rows(np.stack([c.debiased_square(weights) for c in self._calibrations()], axis=-1))

    def calibration_error_debiased(self, weights: np.ndarray) -> np.ndarray:
        """metrics.calibration.calibration_error_debiased per weight row: the debiased square floored at 0, rooted."""
        return root_of_debiased(self.calibration_error_debiased_squared(weights))

    # ------------------------------------------------------------------ proper scores

    def _loss(self, name: str) -> np.ndarray:
        """Per-case loss (n,) for single-label, per-case-and-label (n, L) with 0 where masked."""
        if name not in self._losses:
            proba, targets, observed = self._proba, self._targets, self._observed
            if name == "brier":
                loss = (proba - targets) ** 2
                if self.binary:  # the standard binary Brier score: the positive column's (metrics.classification.brier)
                    loss = loss[:, 1]
                else:
                    loss = loss.sum(axis=1) if not self.multi_label else np.where(observed, loss, 0.0)
            elif not self.multi_label:
                loss = -np.log(np.clip(proba[np.arange(len(proba)), self._y], NLL_CLIP_EPS, 1.0 - NLL_CLIP_EPS))
            else:
                likelihood = targets * np.log(np.clip(proba, NLL_CLIP_EPS, 1.0 - NLL_CLIP_EPS)) + (1.0 - targets) * np.log(
                    np.clip(1.0 - proba, NLL_CLIP_EPS, 1.0 - NLL_CLIP_EPS)
                )
                loss = np.where(observed, -likelihood, 0.0)
            self._losses[name] = loss
        return self._losses[name]

    def _weighted_mean_loss(self, name: str, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(case_major(weights)).T
        loss = self._loss(name)
        with np.errstate(invalid="ignore", divide="ignore"):
            if not self.multi_label:
                total = w.sum(axis=1)
                return np.where(total > 0, (w @ loss) / total, np.nan)
            counts = w @ self._observed.astype(np.float64)
            per_label = np.where(counts > 0, (w @ loss) / counts, np.nan)
        return _nanmean_rows(per_label)

    def brier(self, weights: np.ndarray) -> np.ndarray:
        return self._weighted_mean_loss("brier", weights)

    def nll(self, weights: np.ndarray) -> np.ndarray:
        return self._weighted_mean_loss("nll", weights)


def weighted_auroc(task_type: str, y_true, proba, weights) -> np.ndarray:
    return WeightedMetrics(task_type, y_true, proba).auroc(weights)
