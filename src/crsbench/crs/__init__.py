"""The Clinical Reliability Score's definition: axis skills (`axis_math`), the score of an axis table
against a reference (`definition`: `CRSDefinition`, and `CRSConfig`, a suite's `crs:` block), and the
settings of its statistics (`statistics_settings`). Pure numbers; applied to run records by `crsbench.scoring`."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "CRSConfig": "definition", "CRSDefinition": "definition", "StatisticsSettings": "statistics_settings",
    "DEFAULT_CONFIG": "definition", "COMPONENTS": "definition",
    "crs_table": "definition", "crs_batch": "definition", "crs_scores": "definition",
})
