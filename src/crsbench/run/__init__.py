"""The run stage: build the suite's encoders and datasets (`resolve`), embed, fit and evaluate each unit
(`embedding_jobs`, `evaluate`), and stream one record per evaluation into the store (`runner`), with the
run's provenance and an output lock. Resumable: a rerun skips every stored record."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {"SuiteRun": "runner", "RunSummary": "runner"})
