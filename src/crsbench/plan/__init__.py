"""The plan stage: a suite file (`suite`), the test-set conditions it asks for (`conditions`,
`perturbation_choice`), the label-fraction subsets (`subsets`) and the grid of fit units (`fit_units`).
Reads no data."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "Suite": "suite", "load_suite": "suite", "parse_suite": "suite", "Condition": "conditions",
    "FitUnit": "fit_units", "plan": "fit_units", "record_key": "fit_units",
})
