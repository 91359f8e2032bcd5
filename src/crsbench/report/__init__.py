"""Every output of CRS-Bench: files (CSV, Parquet, JSON), terminal tables and prose.

Computation lives elsewhere and returns values; this package only renders them. The CLI is one
call per command plus one render from here. The HTML and Markdown report is report.page.write_report
(imported on use: it loads matplotlib).
"""

from crsbench.report.files import export_records, write_score_report
from crsbench.report.terminal import (
    perturbations_table,
    results_table,
    run_summary_line,
    score_lines,
    scores_table,
    task_tables,
)

__all__ = [
    "export_records",
    "perturbations_table",
    "results_table",
    "run_summary_line",
    "score_lines",
    "scores_table",
    "task_tables",
    "write_score_report",
]
