"""Cohorts with a known truth, to check the scoring's statistics against it: a design's simulated records and
predictions and its population values (`cohort`), a design fitted to real records (`fit`), the
training-sample arithmetic's repeated runs (`training_samples`), embeddings drawn from a known population
(`embedding_samples`) and the published-like cohort's measured training-sample spread
(`published_spread`). Tests and benchmarks use it; no product module imports it (tests/structure/test_layers.py)."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "Design": "cohort", "EncoderTruth": "cohort", "simulate": "cohort", "population_crs": "cohort",
    "design_from_records": "fit", "simulate_runs": "training_samples",
})
