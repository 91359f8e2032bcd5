"""CRS-Bench: which frozen image encoder should a medical imaging team use?

The verbs and values a user needs, imported on first use (so `import crsbench` stays cheap):

    import crsbench
    suite = crsbench.open_suite("demo")
    crsbench.run_suite(suite)
    scored = crsbench.score(suite.output)
    crsbench.write_report(suite.output)
"""

from crsbench.core.faces import lazy_face

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    # verbs
    "open_suite": "api", "demo_suite": "api", "run_suite": "api:run", "score": "api", "select": "api",
    "write_report": "api", "load_results": "api", "load_records": "api:records", "load_predictions": "api:predictions",
    "check_data": "api", "check_encoders": "api", "register_encoder": "encoders.registry",
    # values
    "Suite": "plan.suite", "EncoderSpec": "encoders.spec", "RunRecord": "results.records", "Records": "results.record_set",
    "ScoreReport": "scoring.score_report", "CRSConfig": "crs.definition", "SelectionRequest": "selection.workflow",
})
