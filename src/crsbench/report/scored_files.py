"""The scored value on disk, so that `report` after `score` reads it instead of rescoring.

`score` writes it beside the results (`<results>/scored/`): every table of the ScoreReport's parts as
`<part>.<field>.parquet` with its index (exact round trip: dtypes, index and column names), and `value.json`
with the other fields, the settings, each table file's SHA-256 and `inputs_key`, the fingerprint of everything the
value was computed from (records, stored predictions, reference, floor baselines, class names, CRS
settings, package version, the scoring code's source; scoring.inputs.inputs_key). A reader takes it only when that key equals the
key of what it would score now, and every table file matches its hash; anything else (no folder, an
older or foreign schema, an edited file, other inputs) reads as None and the caller scores afresh; a
value of an older schema is never read as this one, and the fresh score says so (older_value_note).
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
    from crsbench.scoring.score_report import ScoreReport

# 2: the value in parts (ScoreReport.point, .intervals, ...), one tier rule; 3: a seventh part, subgroups; a value
# of an older schema is recomputed, with a note
SCHEMA = "crsbench.scored/3"
SCHEMA_FAMILY = "crsbench.scored/"
FOLDER = "scored"
VALUE_FILE = "value.json"
SETTINGS_TUPLES = ("baselines", "seeds", "tasks", "departures", "sources")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_scored(report: ScoreReport, folder: str | Path) -> Path:
    """Write the value under `folder`/scored; returns that folder. Tables as `<part>.<field>.parquet`."""
    from crsbench.scoring.score_report import PARTS

    out = Path(folder) / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    tables, facts, parts = {}, {}, {}
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        if field.name in PARTS:
            parts[field.name] = {}
            for inner in dataclasses.fields(value):
                item = getattr(value, inner.name)
                if isinstance(item, pd.DataFrame):
                    path = out / f"{field.name}.{inner.name}.parquet"
                    atomic_write(path, lambda f, v=item: v.to_parquet(f, index=True))
                    tables[f"{field.name}.{inner.name}"] = _sha256(path)
                else:
                    parts[field.name][inner.name] = item
        elif field.name == "settings":
            facts["settings"] = dataclasses.asdict(value)
        else:
            facts[field.name] = value
    document = {"schema": SCHEMA, "inputs_key": report.inputs_key, "tables": tables, "fields": facts, "parts": parts}
    atomic_write(out / VALUE_FILE, lambda f: f.write(json.dumps(document, allow_nan=True, default=_plain).encode()))
    for stale in out.glob("*.parquet"):  # an older value's tables: nothing reads them now
        if stale.stem not in tables:
            stale.unlink()
    return out


def _plain(value: Any):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not stored in a scored value")


def stored_schema(folder: str | Path) -> str | None:
    """The schema of the value stored under `folder`/scored, None when there is none (or it is unreadable)."""
    try:
        document = json.loads((Path(folder) / FOLDER / VALUE_FILE).read_text())
    except (OSError, ValueError):
        return None
    schema = document.get("schema") if isinstance(document, dict) else None
    return schema if isinstance(schema, str) else None


def older_value_note(folder: str | Path) -> str | None:
    """A note for a score that replaces a stored value of an older schema (never read as this one), else None."""
    schema = stored_schema(folder)
    if schema is None or schema == SCHEMA or not schema.startswith(SCHEMA_FAMILY):
        return None
    return f"the stored score value is of an older format ({schema}, now {SCHEMA}): recomputed, not read"


def _tier_tuples(fields: dict[str, Any]) -> dict[str, Any]:
    """JSON lists back to the tuples a tier holds (its members, across tasks and per task)."""
    return {**fields, "members": tuple(fields["members"]),
            "members_by_task": {task: tuple(m) for task, m in fields["members_by_task"].items()}}


def read_scored(folder: str | Path, inputs_key: str) -> ScoreReport | None:
    """The stored value when it was computed from `inputs_key`'s inputs and its files are intact, else None."""
    from crsbench.scoring.score_report import PART_TYPES, ScoreReport
    from crsbench.scoring.settings import ScoreSettings

    root = Path(folder) / FOLDER
    try:
        document = json.loads((root / VALUE_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA or not inputs_key \
            or document.get("inputs_key") != inputs_key:
        return None
    tables, facts, parts = document.get("tables"), document.get("fields"), document.get("parts")
    if not isinstance(tables, dict) or not isinstance(facts, dict) or not isinstance(parts, dict) \
            or set(parts) != set(PART_TYPES) or not all(isinstance(v, dict) for v in parts.values()):
        return None
    values: dict[str, dict[str, Any]] = {name: dict(fields) for name, fields in parts.items()}
    for name, digest in tables.items():
        part, _, inner = name.partition(".")
        path = root / f"{name}.parquet"
        if part not in values or not path.is_file() or _sha256(path) != digest:
            return None
        values[part][inner] = pd.read_parquet(path)
    try:
        values["tier"] = _tier_tuples(values["tier"])
        built = {name: PART_TYPES[name](**fields) for name, fields in values.items()}
        settings = ScoreSettings(**{k: tuple(v) if k in SETTINGS_TUPLES and v is not None else v
                                    for k, v in facts.pop("settings").items()})
        return ScoreReport(**{k: tuple(v) if k in ("axes_used", "baselines", "notes") else v
                              for k, v in facts.items()}, settings=settings, **built)
    except (TypeError, KeyError, AttributeError):  # a field missing or renamed: a value of another version
        return None
