"""The content of a results bundle as one value, and how it is gathered from a results folder.

A `Bundle` holds what scoring and the leaderboard need and nothing that identifies the machine it came
from: the run records, the per-case predictions (case ids, clusters, labels, probabilities), the suites
with their path fields blanked, the runs without host or pid, the datasets read, and each encoder's
spec and revision. No image, no embedding. `write.py` turns it into bytes, `read.py` back, and a local
results folder enters a comparison through `from_results`, the same value a bundle of it reads as.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from crsbench import __version__
from crsbench.errors import DataError
from crsbench.results.predictions import CaseSet, Predictions, load_predictions
from crsbench.results.records import RECORD_FIELDS, RECORD_SCHEMA_VERSION, select_suite
from crsbench.bundles.manifest import PROTOCOL_VERSION
from crsbench.results.store import ResultsStore, database_path
from crsbench.results.stored_suites import stored_suites, suite_file_spelling

KEY_COLUMNS = ("encoder", "task", "seed", "fraction", "condition_kind", "condition", "severity")
RUN_FIELDS = ("run_id", "started_at", "finished_at", "suite_hash", "suite_name", "crsbench_version",
              "records_written", "status", "numerics")  # host and pid stay behind
LOCAL = "(local path)"
_ABSOLUTE = re.compile(r"^(/|~|\\\\|[A-Za-z]:[\\/])")


@dataclass
class Bundle:
    records: pd.DataFrame  # RECORD_FIELDS, list fields as JSON text (as the store reads them)
    index: pd.DataFrame  # record_key, test_set, probs
    test_sets: pd.DataFrame  # test_set, task, role, n_cases, n_clusters
    cases: dict[str, CaseSet]
    probabilities: Mapping[str, np.ndarray]  # probability hash -> float32 [n, k] (a bundle's may be mapped lazily)
    runs: list[dict]
    datasets: list[dict]  # task, role, dataset, fingerprint, dropped
    suites: list[dict]  # suite_hash, name, suite (the mapping, path fields blanked)
    encoders: list[dict]  # label, revision, fingerprint, pixels, choice, spec
    facts: dict[str, Any]  # protocol_version, solver, versions
    source: str = ""  # how outputs name it: the bundle's file name, or the results folder's name
    bundle_id: str | None = None
    notes: list[str] = field(default_factory=list)
    # test_set -> case_id and one text column per attribute: only when written with --with-subgroups
    subgroups: dict[str, pd.DataFrame] = field(default_factory=dict)

    def predictions(self) -> Predictions | None:
        if self.index.empty:
            return None
        keys = self.records[["record_key", *KEY_COLUMNS]]
        index = self.index.merge(keys, on="record_key", how="inner")
        order = {k: i for i, k in enumerate(self.records["record_key"])}
        index = index.sort_values("record_key", key=lambda s: s.map(order)).reset_index(drop=True)
        stored = Predictions.in_memory(index, self.cases, self.probabilities)
        stored.subgroups = {k: v for k, v in self.subgroups.items() if k in self.cases}
        return stored

    def suite_settings(self) -> tuple[str | None, dict, list[str]]:
        """(reference, the `crs:` block, baseline labels) of the latest suite in the bundle."""
        if not self.suites:
            return None, {}, []
        suite = self.suites[-1]["suite"]
        baselines = [e.get("label") or e.get("name") for e in suite.get("encoders", [])
                     if isinstance(e, dict) and e.get("baseline")]
        return suite.get("reference"), dict(suite.get("crs") or {}), [b for b in baselines if b]


def scrub(value: Any, key: str = "") -> Any:
    """A suite or spec mapping with every path of this machine blanked: the suite's own path fields
    (output and cache dropped; dataset path/root/csv and encoder weights blanked) and any other string
    that reads as an absolute path."""
    from crsbench.plan.suite import ENCODER_PATH_OPTIONS, PATH_OPTIONS, SUITE_PATHS

    if isinstance(value, dict):
        return {k: scrub(v, k) for k, v in value.items() if k not in SUITE_PATHS and k != "written_options"}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str) and (key in PATH_OPTIONS + ENCODER_PATH_OPTIONS or _ABSOLUTE.match(value)):
        return LOCAL
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return _plain(value)


def _store_tables(results: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with ResultsStore(database_path(results), read_only=True) as store:
        return store.runs(), store.run_datasets()


def _suites(runs: pd.DataFrame) -> list[dict]:
    by_hash: dict[str, dict] = {}
    for stored in stored_suites(runs):
        suite = scrub(stored.mapping())
        suite["encoders"] = [suite_file_spelling(e) for e in suite.get("encoders", [])]
        by_hash[stored.suite_hash] = {"suite_hash": stored.suite_hash, "name": stored.name, "suite": suite}
    return list(by_hash.values())  # oldest first: the last is the latest suite


def _solver(records: pd.DataFrame, suites: list[dict]) -> dict[str, Any]:
    """The probe solver: this package's solver where a suite's probe settings reproduce the records'
    probe fingerprint with it, else unknown (records written by another version)."""
    from crsbench.probe.linear import SOLVER, ProbeConfig
    from crsbench.plan.suite import ProbeSpec

    fingerprints = sorted(records["probe_fingerprint"].dropna().astype(str).unique())
    known = set()
    for suite in suites:
        spec = ProbeSpec.model_validate(suite["suite"].get("probe") or {})
        known.add(ProbeConfig(tuple(spec.c_grid), spec.max_iter, spec.tol).fingerprint())
    name = SOLVER if fingerprints and set(fingerprints) <= known else "unknown"
    return {"name": name, "probe_fingerprints": fingerprints}


def _encoders(records: pd.DataFrame, suites: list[dict]) -> list[dict]:
    from crsbench.encoders.registry import encoder_spec
    from crsbench.plan.suite import EncoderChoice

    choices: dict[str, dict] = {}
    for suite in suites:
        for entry in suite["suite"].get("encoders", []):
            entry = {"name": entry} if isinstance(entry, str) else dict(entry)
            label = entry.get("label") or entry.get("name")
            try:
                label = EncoderChoice.model_validate(entry).label
            except Exception:  # an encoder this version does not know: the suite's own words stand
                pass
            choices[str(label)] = entry
    out = []
    for label, group in records.groupby("encoder", sort=True):
        choice = choices.get(str(label), {})
        spec: dict[str, Any] = {}
        if choice.get("spec"):
            spec = dict(choice["spec"])
        elif choice.get("name"):
            try:
                spec = encoder_spec(str(choice["name"])).as_dict()
            except Exception:  # not in this registry: provenance says unknown rather than guessing
                spec = {}
        out.append({
            "label": str(label),
            "revision": sorted(group["encoder_revision"].dropna().astype(str).unique()),
            "fingerprint": sorted(group["encoder_fingerprint"].dropna().astype(str).unique()),
            "pixels": sorted(group["encoder_pixels"].dropna().astype(str).unique()),
            "choice": scrub(choice),
            "spec": scrub(spec),
        })
    return out


def from_results(results: str | Path, suite_hash: str | None = None, with_subgroups: bool = False) -> Bundle:
    """The bundle value of a results folder (or its results.sqlite), one suite's with `suite_hash`;
    `with_subgroups`: with each test set's per-case subgroup attributes (quasi-identifiers: left out unless
    asked, docs/bundles.md)."""
    from crsbench.results.store import load_records

    results = Path(results)
    records = load_records(results)
    if suite_hash:
        records = select_suite(records, suite_hash)
    if records.empty:
        raise DataError(f"{results}: no run records to bundle")
    records = records.reset_index(drop=True)[list(RECORD_FIELDS)]
    runs, datasets = _store_tables(results)
    run_ids = set(records["run_id"].dropna())
    runs = runs[runs["run_id"].isin(run_ids) | runs["suite_hash"].isin(set(records["suite_hash"].dropna()))]
    suites = _suites(runs)
    stored = load_predictions(results)
    if stored is not None:
        index = stored.index[stored.index["record_key"].isin(set(records["record_key"]))]
        index = index[["record_key", "test_set", "probs"]].reset_index(drop=True)
        test_sets = stored.test_sets[stored.test_sets["test_set"].isin(set(index["test_set"]))]
        test_sets = test_sets.sort_values("test_set").reset_index(drop=True)
        cases = {t: stored.case_set(t) for t in test_sets["test_set"]}
        probabilities = {d: stored.probabilities(d) for d in sorted(set(index["probs"]))}
    else:
        index = pd.DataFrame(columns=["record_key", "test_set", "probs"])
        test_sets = pd.DataFrame(columns=["test_set", "task", "role", "n_cases", "n_clusters"])
        cases, probabilities = {}, {}
    subgroups = {t: stored.subgroups[t] for t in sorted(cases) if t in stored.subgroups} if with_subgroups and stored is not None else {}
    dataset_rows = datasets[datasets["run_id"].isin(run_ids)] if len(datasets) else datasets
    seen = {}
    for row in dataset_rows.itertuples() if len(dataset_rows) else ():
        entry = {"task": str(row.task), "role": str(row.role), "dataset": str(row.dataset),
                 "fingerprint": str(row.fingerprint), "dropped": _json_or_text(row.dropped)}
        seen[json.dumps(entry, sort_keys=True)] = entry
    run_rows = [{name: _json_or_text(getattr(row, name)) if name == "numerics" else _plain(getattr(row, name))
                 for name in RUN_FIELDS} for row in runs.sort_values("started_at", kind="stable").itertuples()]
    facts = {
        "protocol_version": PROTOCOL_VERSION,
        "solver": _solver(records, suites),
        "written_by": f"crsbench {__version__}",
        "record_schema_versions": sorted({int(v) if pd.notna(v) else 1 for v in records["schema_version"]}),
        "record_crsbench_versions": sorted(records["crsbench_version"].dropna().astype(str).unique()),
        "current_record_schema": RECORD_SCHEMA_VERSION,
    }
    return Bundle(records, index, test_sets, cases, probabilities, run_rows, sorted(seen.values(), key=lambda d: (
        d["task"], d["role"], d["fingerprint"])), suites, _encoders(records, suites), facts, source=results.name,
        subgroups=subgroups)
