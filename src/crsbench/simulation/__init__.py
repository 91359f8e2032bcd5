"""Cohorts with a known truth, to check the scoring's statistics against it: a design's simulated records and
predictions and its population values (`cohort`), a design fitted to real records (`fit`), and the
training-sample acceptance's repeated runs (`training_samples`). Tests and benchmarks use it; no product
module imports it (tests/structure/test_layers.py)."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "Design": "cohort", "EncoderTruth": "cohort", "simulate": "cohort", "population_crs": "cohort",
    "design_from_records": "fit", "simulate_runs": "training_samples",
})
