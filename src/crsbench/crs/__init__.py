"""The Clinical Reliability Score's definition: axis skills (`axis_math`) and the score of an axis table
against a reference (`definition`). Pure numbers; applied to run records by `crsbench.scoring`."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "CRSConfig": "definition", "DEFAULT_CONFIG": "definition", "COMPONENTS": "definition",
    "crs_table": "definition", "crs_batch": "definition", "crs_scores": "definition",
})
