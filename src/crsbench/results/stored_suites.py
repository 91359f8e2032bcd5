"""The suites that wrote a results folder, as each run stored them (the runs table's YAML): the one reader
of that table's suites, for the grid a folder should cover, a bundle's suites, and the settings, reference
and class names a score takes from the latest suite."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from crsbench.errors import CRSBenchError


@dataclass(frozen=True)
class StoredSuite:
    """One run's suite: its hash, its name and the YAML text the run stored."""

    suite_hash: str
    name: str
    text: str

    def mapping(self) -> dict:
        """The suite as the run stored it (encoder entries keep the stored spelling, `label_`)."""
        return yaml.safe_load(self.text) or {}


def stored_suites(runs: pd.DataFrame, suite_hash: str | None = None) -> list[StoredSuite]:
    """One entry per run that stored its suite, oldest first (the runs of one suite with `suite_hash`, a
    unique prefix of its hash)."""
    if runs is None or runs.empty or "suite_yaml" not in runs.columns:
        return []
    if "started_at" in runs.columns:
        runs = runs.sort_values("started_at", kind="stable")
    if suite_hash:
        runs = runs[runs["suite_hash"].astype(str).str.startswith(suite_hash)]
    names = runs["suite_name"] if "suite_name" in runs.columns else pd.Series("", index=runs.index)
    return [StoredSuite(str(h), str(n), text)
            for h, n, text in zip(runs["suite_hash"], names, runs["suite_yaml"])
            if isinstance(text, str) and text]


def read_stored_suites(results: str | Path, suite_hash: str | None = None) -> list[StoredSuite]:
    """`stored_suites` of a results folder (or its database); none where it holds no database."""
    from crsbench.results.store import ResultsStore, database_path

    path = database_path(results)
    if not path.exists():
        return []
    with ResultsStore(path, read_only=True) as store:
        return stored_suites(store.runs(), suite_hash)


def suite_file_spelling(entry: Any) -> Any:
    """A stored encoder entry as a suite file writes it: the run stores the label by its field name,
    `label_`, and a suite file (and the parser) spells it `label`."""
    if not isinstance(entry, dict) or "label_" not in entry:
        return entry
    label = entry["label_"]
    entry = {k: v for k, v in entry.items() if k != "label_"}
    return {**entry, "label": label} if label else entry


def _latest_first(results: str | Path, suite_hash: str | None) -> list[dict]:
    return [suite.mapping() for suite in reversed(read_stored_suites(results, suite_hash))]


def suite_reference(results: str | Path, suite_hash: str | None = None) -> str | None:
    """The reference named by the latest suite (or the suite `suite_hash`) that wrote to these results, if any."""
    return next((s["reference"] for s in _latest_first(results, suite_hash) if s.get("reference")), None)


def _encoder_label(entry) -> str | None:
    from crsbench.plan.suite import EncoderChoice

    entry = {"name": entry} if isinstance(entry, str) else entry
    try:
        return EncoderChoice.model_validate(entry).label
    except Exception:  # an encoder no longer registered: fall back to what the suite wrote
        return entry.get("label") or entry.get("name")


def suite_score_settings(results: str | Path, suite_hash: str | None = None) -> tuple[dict, list[str]]:
    """(the `crs:` block, the labels marked `baseline: true`) of the latest suite that wrote these results."""
    suites = _latest_first(results, suite_hash)
    if not suites:
        return {}, []
    latest = suites[0]
    baselines = [_encoder_label(e) for e in latest.get("encoders", []) if isinstance(e, dict) and e.get("baseline")]
    return dict(latest.get("crs") or {}), [b for b in baselines if b]


def suite_class_names(results: str | Path, suite_hash: str | None = None) -> dict[str, tuple[str, ...]]:
    """task -> its classes' names, where the latest suite that wrote these results declares them (from the
    dataset's options alone, no data read); tasks whose kind reads them from the data are left out."""
    from crsbench.datasets.registry import info_for

    suites = _latest_first(results, suite_hash)
    out: dict[str, tuple[str, ...]] = {}
    for task in (suites[0].get("tasks") or []) if suites else []:
        dataset = task.get("dataset") if isinstance(task, dict) else None
        if not isinstance(dataset, dict) or "kind" not in dataset or "name" not in task:
            continue
        try:  # a suite from another version or machine may no longer validate: its names are optional
            names = info_for(dataset["kind"], {k: v for k, v in dataset.items() if k != "kind"}).class_names
        except (CRSBenchError, ValueError):
            names = None
        if names:
            out[str(task["name"])] = tuple(str(n) for n in names)
    return out
