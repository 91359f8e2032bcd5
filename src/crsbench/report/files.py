"""Files: records and seed means, and the CRS report, as CSV, Parquet and strict JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import pandas as pd

from crsbench.core.atomic import atomic_write
from crsbench.results.records import aggregate_seeds, select_suite

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score_report import ScoreReport

# through core.atomic: a reader never sees half a file, and an error names the file (pandas and pyarrow
# raise a full disk or a read-only folder without its name)
WRITERS: dict[str, Callable[[pd.DataFrame, Path], None]] = {
    "csv": lambda frame, path: atomic_write(path, lambda f: frame.to_csv(f, index=False)),
    "parquet": lambda frame, path: atomic_write(path, lambda f: frame.to_parquet(f, index=False)),
}


def export_records(
    records: pd.DataFrame, out_dir: str | Path, formats: Iterable[str] = ("parquet", "csv"), suite_hash: str | None = None
) -> list[Path]:
    """`records` and the seed means `records_by_seed_mean` (records.aggregate_seeds) in each format.

    With `suite_hash`, both files hold that suite's records only; records of several grids are
    refused otherwise, so the seed means never average two grids.
    """
    records = select_suite(records, suite_hash) if suite_hash else records
    means = aggregate_seeds(records)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in (("records", records), ("records_by_seed_mean", means)):
        for fmt in formats:
            path = out / f"{name}.{fmt}"
            WRITERS[fmt](frame, path)
            written.append(path)
    return written


def _flat(table: pd.DataFrame) -> pd.DataFrame:
    """Index as a column (when it is named) and string column names, as CSV and Parquet want."""
    out = table.reset_index() if table.index.name is not None else table.reset_index(drop=True)
    out.columns = [str(c) for c in out.columns]
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (tuple, set)):
        return list(value)
    return str(value)


def clean_json(value: Any) -> Any:
    """NaN and infinity become null, numpy scalars plain Python, so the JSON is strict."""
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA:
        return None
    return value


def write_json(value: Any, path: Path) -> Path:
    text = json.dumps(clean_json(value), indent=2, default=_json_default) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    return path


def write_score_report(report: ScoreReport, out_dir: str | Path) -> dict[str, Path]:
    """Write every table of a ScoreReport as CSV and Parquet, the scores also as JSON, and summary.json.

    Returns the written paths by name ("scores.csv", ...). Existing files of the same name are
    replaced; nothing else in `out_dir` is touched.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    partial = bool(report.settings.partial_view)
    departed = "; ".join(report.settings.departures)
    for stem, table in report.tables().items():
        flat = _flat(table)
        if partial:  # every file of a partial view says so, not only summary.json
            flat.insert(0, "view", "partial")
        if departed and len(flat.columns):  # and of a comparison that departed from like for like
            flat = flat.assign(departures=departed)
        for suffix, write in WRITERS.items():
            path = out / f"{stem}.{suffix}"
            write(flat, path)
            written[path.name] = path
    for path, value in (
        (out / "scores.json", _flat(report.point.scores).assign(**({"view": "partial"} if partial else {}))
         .to_dict(orient="records")),
        (out / "summary.json", report.summary()),
    ):
        written[path.name] = write_json(value, path)
    return written
