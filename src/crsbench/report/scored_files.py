"""The scored value on disk, so that `report` after `score` reads it instead of rescoring.

`score` writes it beside the results (`<results>/scored/`): every table of the ScoreReport as Parquet
with its index (exact round trip: dtypes, index and column names), and `value.json` with the other
fields, the settings, each table file's SHA-256 and `inputs_key`, the fingerprint of everything the
value was computed from (records, stored predictions, reference, floor baselines, class names, CRS
settings, package version, the scoring code's source; scoring.inputs.inputs_key). A reader takes it only when that key equals the
key of what it would score now, and every table file matches its hash; anything else (no folder, an
older or foreign schema, an edited file, other inputs) reads as None and the caller scores afresh.
Nothing in it is executed: Parquet and JSON only, field names checked against ScoreReport's.
value.json is written last, so a write cut short leaves the previous value's hashes unmatched.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from crsbench.core.atomic import atomic_write

if TYPE_CHECKING:  # annotations only
    from crsbench.scoring.score import ScoreReport

SCHEMA = "crsbench.scored/1"
FOLDER = "scored"
VALUE_FILE = "value.json"
TUPLE_FIELDS = ("axes_used", "leading_tier", "baselines", "notes")
SETTINGS_TUPLES = ("baselines", "seeds", "tasks", "departures", "sources")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_scored(report: ScoreReport, folder: str | Path) -> Path:
    """Write the value under `folder`/scored; returns that folder."""
    out = Path(folder) / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    tables, fields = {}, {}
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        if isinstance(value, pd.DataFrame):
            path = out / f"{field.name}.parquet"
            atomic_write(path, lambda f, v=value: v.to_parquet(f, index=True))
            tables[field.name] = _sha256(path)
        elif field.name == "settings":
            fields["settings"] = None if value is None else dataclasses.asdict(value)
        else:
            fields[field.name] = value
    document = {"schema": SCHEMA, "inputs_key": report.inputs_key, "tables": tables, "fields": fields}
    atomic_write(out / VALUE_FILE, lambda f: f.write(json.dumps(document, allow_nan=True, default=_plain).encode()))
    return out


def _plain(value: Any):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not stored in a scored value")


def read_scored(folder: str | Path, inputs_key: str) -> ScoreReport | None:
    """The stored value when it was computed from `inputs_key`'s inputs and its files are intact, else None."""
    from crsbench.scoring.score import ScoreReport
    from crsbench.scoring.settings import ScoreSettings

    root = Path(folder) / FOLDER
    try:
        document = json.loads((root / VALUE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA or not inputs_key \
            or document.get("inputs_key") != inputs_key:
        return None
    known = {f.name for f in dataclasses.fields(ScoreReport)}
    tables, fields = document.get("tables"), document.get("fields")
    if not isinstance(tables, dict) or not isinstance(fields, dict) or not set(tables) | set(fields) <= known:
        return None
    values: dict[str, Any] = {}
    for name, digest in tables.items():
        path = root / f"{name}.parquet"
        if not path.is_file() or _sha256(path) != digest:
            return None
        values[name] = pd.read_parquet(path)
    for name, value in fields.items():
        if name == "settings" and value is not None:
            value = ScoreSettings(**{k: tuple(v) if k in SETTINGS_TUPLES and v is not None else v
                                     for k, v in value.items()})
        elif name in TUPLE_FIELDS:
            value = tuple(value)
        elif name == "leading_tier_by_task":
            value = {task: tuple(tier) for task, tier in value.items()}
        values[name] = value
    try:
        return ScoreReport(**values)
    except TypeError:  # a field missing or renamed: a value of another version
        return None
