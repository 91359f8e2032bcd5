"""What a run leaves: one record per evaluation (`records`, the schema), the SQLite store (`store`), the
per-case predictions (`predictions`), and what is stored against what the suite asked for (`coverage`)."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "RunRecord": "records", "Records": "record_set", "ResultsStore": "store", "load_records": "store", "load_runs": "store",
    "Predictions": "predictions", "CaseSet": "predictions", "load_predictions": "predictions",
    "GridStatus": "coverage", "check_grid": "coverage",
})
