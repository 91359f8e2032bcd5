"""Provenance of a report: where every number comes from (the runs, datasets and records of a
results database), read once from the store so the report can name it next to the numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from crsbench import __version__


@dataclass(frozen=True)
class Provenance:
    suites: list[dict]  # name, hash
    package_version: str  # the version that wrote this report
    record_versions: list[str]  # versions that wrote the records
    encoders: list[dict]  # name, revision ("not pinned" when none), fingerprint
    datasets: list[dict]  # task, role, dataset, fingerprint, dropped (text)
    seeds: list[int]
    fractions: list[float]
    tasks: list[str]
    first_record: str
    last_record: str
    runs: list[dict]  # run_id, started_at, finished_at, records_written, status
    record_count: int
    results: str
    notes: list[str] = field(default_factory=list)
    refit_count: int = 0  # refit records beside them (the training-sample term), not counted in record_count

    @property
    def counted(self) -> str:
        """The records, in words: the fitted probes' and, where there are any, the refits' beside them."""
        refits = f" and {self.refit_count} refit records" if self.refit_count else ""
        return f"{self.record_count} run records{refits}"


def _dropped_text(value) -> str:
    try:
        dropped = json.loads(value) if isinstance(value, str) else dict(value or {})
    except (TypeError, ValueError):
        return str(value)
    if not dropped:
        return "none"
    return ", ".join(f"{count} {reason}" for reason, count in sorted(dropped.items()))


def _store_tables(results: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    from crsbench.results.store import ResultsStore, database_path

    database = database_path(results)
    if not database.exists():
        return pd.DataFrame(), pd.DataFrame()
    with ResultsStore(database, read_only=True) as store:  # a report never writes the results
        return store.runs(), store.run_datasets()


def _unique(records: pd.DataFrame, column: str) -> list:
    return sorted(records[column].dropna().unique().tolist()) if column in records else []


def gather(results: str | Path | None, records: pd.DataFrame, refit_count: int = 0) -> Provenance:
    """The provenance of `records` (the scored ones), with the runs and datasets that wrote them, and the
    number of refit records scored beside them."""
    runs, datasets = _store_tables(Path(results)) if results is not None else (pd.DataFrame(), pd.DataFrame())
    notes: list[str] = []
    run_ids = set(records["run_id"].dropna()) if "run_id" in records else set()
    if len(runs):
        runs = runs[runs["run_id"].isin(run_ids) | runs["suite_hash"].isin(_unique(records, "suite_hash"))]
    hashes = _unique(records, "suite_hash")
    named = runs.dropna(subset=["suite_name"]) if len(runs) else runs
    names = dict(zip(named["suite_hash"], named["suite_name"])) if len(named) else {}  # the latest run wins
    suites = [{"name": names.get(h, "unknown (no run row)"), "hash": h} for h in hashes]
    encoders = []
    for encoder, group in records.groupby("encoder", sort=True):
        revisions = _unique(group, "encoder_revision")
        fingerprints = _unique(group, "encoder_fingerprint")
        encoders.append({"name": str(encoder), "revision": ", ".join(map(str, revisions)) or "not pinned",
                         "fingerprint": ", ".join(f[:12] for f in map(str, fingerprints)) or "-"})
    dataset_rows = []
    if len(datasets):
        datasets = datasets[datasets["run_id"].isin(run_ids)] if run_ids else datasets
        seen = datasets.drop_duplicates(["task", "role", "dataset", "fingerprint", "dropped"])
        for row in seen.sort_values(["task", "role"]).itertuples():
            dataset_rows.append({"task": row.task, "role": row.role, "dataset": row.dataset,
                                 "fingerprint": str(row.fingerprint)[:16], "dropped": _dropped_text(row.dropped)})
    else:
        for (task, dataset, fingerprint), _ in records.groupby(["task", "dataset", "dataset_fingerprint"], dropna=False):
            dataset_rows.append({"task": task, "role": "task", "dataset": dataset,
                                 "fingerprint": str(fingerprint)[:16], "dropped": "not recorded"})
        notes.append("no run_datasets rows for these records: dropped counts are not recorded")
    run_rows = []
    for row in runs.itertuples() if len(runs) else ():
        finished = row.finished_at if isinstance(row.finished_at, str) and row.finished_at else None
        status = getattr(row, "status", None) or ("finished" if finished else "did not finish")
        run_rows.append({"run_id": row.run_id, "started_at": row.started_at, "finished_at": finished or "-",
                         "records_written": "-" if pd.isna(row.records_written) else int(row.records_written),
                         "status": str(status)})
        if not finished:
            notes.append(f"run {row.run_id} started {row.started_at} did not finish: its grid may be partial")
    created = records["created_at"].dropna().astype(str) if "created_at" in records else pd.Series(dtype=str)
    return Provenance(
        suites=suites,
        package_version=__version__,
        record_versions=[str(v) for v in _unique(records, "crsbench_version")],
        encoders=encoders,
        datasets=dataset_rows,
        seeds=[int(s) for s in _unique(records, "seed")],
        fractions=[float(f) for f in _unique(records, "fraction")],
        tasks=sorted(str(t) for t in set(records["task"])),
        first_record=created.min() if len(created) else "-",
        last_record=created.max() if len(created) else "-",
        runs=run_rows,
        record_count=int(len(records)),
        results=str(results) if results is not None else "(records given directly)",
        notes=notes,
        refit_count=refit_count,
    )
