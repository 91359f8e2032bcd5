"""What `crsbench verify` says of a bundle: every check of `read_bundle` passed (the content hashes, the
id it was published under), and what the bundle holds, as plain values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crsbench.bundles.content import Bundle
from crsbench.scoring.refits import ADD_REFITS


def summary(bundle: Bundle, path: str | Path) -> dict[str, Any]:
    """The facts a reader checks a published bundle against: its id, versions, suites, encoders, tasks
    and counts."""
    records = bundle.records
    return {
        "bundle": str(path),
        "bundle_id": bundle.bundle_id,
        "bytes": Path(path).stat().st_size,
        "written_by": bundle.facts.get("written_by", "unknown"),
        "protocol_version": bundle.facts.get("protocol_version"),
        "solver": (bundle.facts.get("solver") or {}).get("name", "unknown"),
        "suites": [f"{s.get('name')} ({str(s.get('suite_hash'))[:12]})" for s in bundle.suites],
        "encoders": sorted(records["encoder"].astype(str).unique()),
        "tasks": sorted(records["task"].astype(str).unique()),
        "records": int(len(records)),
        "predictions": int(len(bundle.index)),
        "test_sets": int(len(bundle.test_sets)),
        "vectors": int(bundle.index["probs"].nunique()) if len(bundle.index) else 0,
        "record_versions": list(bundle.facts.get("record_crsbench_versions") or []),
        "refits": _refits_per_task(records),
        "subgroups": _attributes_per_task(bundle),
        "notes": list(bundle.notes),  # a limit this reader applied to a setting the bundle carries, or names accepted
    }


def _refits_per_task(records) -> dict[str, int]:
    """task -> the refit records' largest index (K), for the tasks that hold refits (docs/bootstrap.md)."""
    if "refit" not in records:
        return {}
    refit = records["refit"].fillna(0).astype(int)
    return {str(task): int(k) for task, k in refit[refit > 0].groupby(records["task"].astype(str)).max().items()}


def _attributes_per_task(bundle: Bundle) -> dict[str, list[str]]:
    """task (and `task shift` for a shift set) -> the attributes its subgroup member carries."""
    out = {}
    for row in bundle.test_sets.itertuples():
        table = bundle.subgroups.get(row.test_set)
        if table is not None:
            key = str(row.task) if row.role == "test" else f"{row.task} {row.role}"
            out[key] = [str(c) for c in table.columns[1:]]
    return dict(sorted(out.items()))


def subgroups_line(attributes: dict[str, list[str]]) -> str:
    """Whether the bundle carries per-case subgroup labels, and so whether scores from it have subgroup results."""
    if not attributes:
        return ("subgroup labels: none (a bundle carries per-case subgroup labels only when written with "
                "`crsbench bundle --with-subgroups`), so no subgroup results are scored from it")
    per_set = "; ".join(f"{key} {', '.join(names)}" for key, names in attributes.items())
    return (f"subgroup labels: carried per case ({per_set}): quasi-identifiers, to be shared only where the "
            "datasets' terms allow")


def training_samples_line(refits: dict[str, int]) -> str:
    """What an interval scored from the bundle will cover: with refits, training samples too."""
    if not refits:
        return ("training samples: no refit records, so intervals scored from this bundle cover these fitted probes "
                f"only; to include training variability, {ADD_REFITS}, and bundle it again")
    per_task = ", ".join(f"{task} {k}" for task, k in sorted(refits.items()))
    return (f"training samples: paired refits per task ({per_task}), so intervals scored from this bundle cover "
            "each encoder's CRS expected over training samples")


def summary_lines(facts: dict[str, Any]) -> list[str]:
    def listed(values) -> str:
        return ", ".join(map(str, values)) or "none"

    return [
        f"verified {facts['bundle']} ({facts['bytes'] / 1024:.1f} KiB): content hashes, counts, test sets, "
        "probability vectors and every record's AUROC check out",
        f"bundle id {facts['bundle_id']}",
        f"written by {facts['written_by']}; protocol {facts['protocol_version']}; solver {facts['solver']}; "
        f"records written by crsbench {listed(facts['record_versions'])}",
        f"suites: {listed(facts['suites'])}",
        f"encoders ({len(facts['encoders'])}): {listed(facts['encoders'])}",
        f"tasks ({len(facts['tasks'])}): {listed(facts['tasks'])}",
        f"{facts['records']} records, {facts['predictions']} with predictions, {facts['test_sets']} test sets, "
        f"{facts['vectors']} probability vectors",
        training_samples_line(facts.get("refits") or {}),
        subgroups_line(facts.get("subgroups") or {}),
        *facts.get("notes", ()),
    ]
