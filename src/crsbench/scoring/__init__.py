"""The read side's arithmetic: records -> axes (`axes`) -> CRS with the paired case-and-seed bootstrap or
the seed-only one (`case_bootstrap`, `statistics`), summarised alike (`bootstrap_summary`) -> one
`ScoreReport` (`score_report`, built by `score`). `simulation` draws cohorts with a known
truth to check those statistics. Records in, tables out; no I/O."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "ScoreReport": "score_report", "score_records": "score", "AxisScores": "axes", "compute_axes": "axes",
})
