"""The read side's arithmetic: records -> axes (`axes`) -> CRS with the paired case-and-seed bootstrap or
the seed-only one (`case_bootstrap`, `statistics`), summarised alike (`bootstrap_summary`) -> one
`ScoreReport` (`score_report`, built by `score`). Records in, tables out; no I/O. The cohorts with a known
truth that check these statistics are drawn by `crsbench.simulation`, which no product module imports."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "ScoreReport": "score_report", "score_records": "score", "AxisScores": "axes", "compute_axes": "axes",
})
