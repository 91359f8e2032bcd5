"""The generated embeddings' population (simulation/embedding_samples.py): the AUROC of the best linear score
on many drawn rows against the stated population AUROC, clean and perturbed, checked with scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.simulation.embedding_samples import ENCODERS, draw_labels, draw_rows, perturb_rows

ROWS = 20_000


def _auroc_se(auroc: float, positives: int, negatives: int) -> float:
    """Hanley and McNeil's standard error of an AUROC estimate."""
    q1, q2 = auroc / (2 - auroc), 2 * auroc**2 / (1 + auroc)
    variance = (auroc * (1 - auroc) + (positives - 1) * (q1 - auroc**2) + (negatives - 1) * (q2 - auroc**2))
    return float(np.sqrt(variance / (positives * negatives)))


@pytest.mark.parametrize("encoder", ENCODERS, ids=[e.name for e in ENCODERS])
def test_the_best_linear_scores_auroc_is_the_stated_population_auroc(encoder):
    rng = np.random.default_rng(7)
    labels = draw_labels(ROWS, rng)
    rows = draw_rows(encoder, labels, rng)
    positives, negatives = int(labels.sum()), int((1 - labels).sum())
    for perturbed, x in ((False, rows), (True, perturb_rows(encoder, rows, rng))):
        score = x[:, :encoder.signal].sum(axis=1)  # the class means differ along these coordinates only
        expected = encoder.population_auroc(perturbed)
        # within 4 s.e. (0.006-0.014): a separation off by a tenth moves the AUROC by 0.015-0.03
        assert abs(roc_auc_score(labels, score) - expected) <= 4 * _auroc_se(expected, positives, negatives)


def test_the_encoders_differ_in_strength_and_the_perturbation_weakens_each():
    aurocs = [e.population_auroc() for e in ENCODERS]
    assert len(set(np.round(aurocs, 3))) == len(ENCODERS)
    assert all(e.population_auroc(perturbed=True) < e.population_auroc() for e in ENCODERS)
    assert abs(np.mean(draw_labels(ROWS, np.random.default_rng(0))) - 0.73) < 0.01
