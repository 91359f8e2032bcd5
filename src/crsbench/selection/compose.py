"""The ordinary suite a selection runs (a pure mapping, written beside the results)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import yaml

from crsbench.errors import DataError
from crsbench.selection.budget import REFITS, Protocol

SUITE_FILE = "suite.yaml"
TASK_NAME = "cohort"
SELECT_C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
SELECT_BATCH_SIZE = 32


def parse_encoders(text: str) -> list[dict[str, Any]]:
    """`a,b,c`; each a registry name or module:factory, with options as `name@key=value@key=value`."""
    entries = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, *settings = item.split("@")
        options = {}
        for setting in settings:
            key, sep, value = setting.partition("=")
            if not sep or not key:
                raise DataError(f"--encoders: {item!r}: options are written name@key=value")
            options[key] = yaml.safe_load(value)
        entries.append({"name": name, "options": options} if options else {"name": name})
    if not entries:
        raise DataError("--encoders: name at least one encoder, e.g. --encoders efficientnet-lite0,raw-pixels")
    return entries


def compose_suite(name: str, encoders: Sequence[dict], dataset: dict, protocol: Protocol, *,
                  shift: Optional[dict] = None, reference: Optional[str] = None, cache: Optional[str] = None,
                  crs: Optional[dict] = None, c_grid: Sequence[float] = SELECT_C_GRID) -> dict[str, Any]:
    """A suite mapping: one task (the cohort, with its shift set), the planned seeds, fractions and
    perturbations; its results go to the folder holding the suite file."""
    task: dict[str, Any] = {"name": TASK_NAME, "dataset": dict(dataset)}
    if shift is not None:
        task["shift"] = dict(shift)
    suite: dict[str, Any] = {
        "name": name,
        "output": ".",
        "reference": reference,
        "encoders": [with_import_root(e) for e in encoders],
        "tasks": [task],
        "seeds": list(range(protocol.seeds)),
        "fractions": list(protocol.fractions),
        "refits": REFITS,
        "probe": {"c_grid": list(c_grid)},
        "batch_size": SELECT_BATCH_SIZE,
        "crs": dict(crs) if crs else None,  # the score's settings: they change no record
    }
    if protocol.perturbations:
        suite["perturbations"] = {"select": list(protocol.perturbations), "severities": list(protocol.severities)}
    if cache is not None:
        suite["cache"] = cache
    return {k: v for k, v in suite.items() if v is not None}


def with_import_root(entry: dict) -> dict:
    """A `module:factory` entry with the folder its module was imported from (`python_path`), so the
    written suite runs from a shell without PYTHONPATH; an installed module needs none."""
    from crsbench.encoders.registry import import_root

    entry = dict(entry)
    name = entry.get("name")
    if isinstance(name, str) and ":" in name and "python_path" not in entry:
        root = import_root(name)
        if root is not None:
            entry["python_path"] = root
    return entry


def suite_text(suite: dict[str, Any], header: str) -> str:
    lines = "".join(f"# {line}\n" for line in header.splitlines())
    return lines + yaml.safe_dump(suite, sort_keys=False)
