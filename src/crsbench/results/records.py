"""The run record: one typed value, from which the store's columns, the metric list, the evaluation
key, the columns scoring needs and the schema table of docs/records.md are all derived.

Also the one seed aggregation (`aggregate_seeds`) and the one rule for records from different suites
(`one_grid`): pick a suite with `suite_hash`, or get a one-line error naming what differs; records of
different grids are never averaged together.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Optional, get_args, get_origin

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsbench.errors import DataError
from crsbench.core.vocabulary import CONDITION_KINDS, ConditionKind, TaskType

# 3: a refit's record carries its per-subgroup metrics (`subgroup_metrics`; null on a refit of schema 2, whose
# subgroup intervals then cover the fitted probes only); 2: binary Brier and AUROC are the positive column's
# (sklearn's values); 1 (null): written before versions, when binary Brier was summed over both columns (twice
# the standard) and AUROC averaged both columns.
RECORD_SCHEMA_VERSION = 3


class RecordsError(DataError, ValueError):
    """Records that cannot be read as one benchmark: incomparable suites, duplicates, missing columns."""


def _column(description: str, *, unit: str = "", role: str = "provenance", scored: bool = False) -> Any:
    """A record field with its one-line description, unit and role.

    role: identity (which evaluation), key (part of the evaluation key), metric (a number seed
    aggregation summarises), detail (per-class or per-split detail), provenance (how it was made).
    scored: the axes read it, so a records table must have the column to be scored.
    """
    return Field(description=description, json_schema_extra={"unit": unit, "role": role, "scored": scored})


class SubgroupMetrics(BaseModel):
    """One subgroup's metrics in a refit's record (scoring/subgroups.py computes them, on the refit's own
    predictions, which are not stored): AUROC in the subgroup and in the rest of the set, Brier skill against
    the refit's training prior (test set only). `values` is the digest of the attribute's value per case
    (`scoring.subgroups.attribute_digest`): attributes changed after the run no longer match and are not read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attribute: str = Field(min_length=1, max_length=200)
    subgroup: str = Field(max_length=200)
    values: str = Field(min_length=1, max_length=64)
    n_cases: int = Field(ge=0)
    auroc: Optional[float] = Field(None, ge=0.0, le=1.0)  # null: not defined (one class in the subgroup)
    rest_auroc: Optional[float] = Field(None, ge=0.0, le=1.0)
    brier_skill: Optional[float] = Field(None, le=1.0, allow_inf_nan=False)


class RunRecord(BaseModel):
    """One evaluation of a fitted probe: a row of the `records` table (docs/records.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record_key: str = Field(
        description="hash of (encoder fingerprint, task fingerprint, probe config, seed, fraction, condition, severity)",
        json_schema_extra={"unit": "", "role": "identity", "scored": False, "sql": "TEXT PRIMARY KEY"},
    )
    run_id: Optional[str] = _column("the session that wrote the record")
    suite_hash: Optional[str] = _column("hash of the validated suite", role="identity")
    encoder: str = _column("registry name or suite label, e.g. `efficientnet-lite0`", role="key", scored=True)
    encoder_revision: Optional[str] = _column("pinned weights revision (null when not pinned)")
    encoder_fingerprint: Optional[str] = _column(
        "`EncoderSpec.fingerprint()`: hash of what changes the vectors (weights, revision, preprocessing, output,"
        " adapter options, precision)", role="identity"
    )
    encoder_pixels: Optional[str] = _column(
        "how the encoder's input was made from each decoded image, e.g. `shorter-side 256 bicubic, centre-crop 224`"
    )
    task: str = _column("task name in the suite, e.g. `derm`", role="key", scored=True)
    dataset: Optional[str] = _column("dataset name")
    dataset_fingerprint: Optional[str] = _column("content hash of the dataset", role="identity")
    task_type: Optional[TaskType] = _column("`single_label`, `multi_label` or `ordinal`")
    seed: int = _column("probe seed (draws the label-fraction subset)", role="key", scored=True)
    fraction: float = _column("label fraction in (0, 1], e.g. 0.01 ... 1.0", unit="share of train", role="key", scored=True)
    condition_kind: ConditionKind = _column("`clean`, `perturbation` or `shift`", role="key", scored=True)
    condition: str = _column(
        "`clean`, a perturbation name (`gaussian_noise`), or `shift:<dataset>`", role="key", scored=True
    )
    severity: int = _column("0 for clean and shift, 1-5 for perturbations", role="key", scored=True)
    refit: Optional[int] = Field(
        0,
        description="0: the run's own probe; k >= 1: the k-th refit at 100 % labels on a bootstrap resample of"
        " the training split, the same resample for every encoder (null: written before refits existed, read as 0)",
        json_schema_extra={"unit": "", "role": "refit", "scored": False},
    )
    auroc: Optional[float] = _column("macro AUROC over the classes / labels it is defined for", role="metric", scored=True)
    auroc_per_class: Optional[list[Optional[float]]] = _column("per-class AUROC, null where undefined", role="detail")
    balanced_accuracy: Optional[float] = _column("mean per-class recall", role="metric")
    kappa_quadratic: Optional[float] = _column("quadratic weighted kappa, ordinal tasks only (else null)", role="metric")
    ece: Optional[float] = _column(
        "15 equal-width bins; top-label (single-label), per-label mean (multi-label)", role="metric", scored=True
    )
    ece_temperature_scaled: Optional[float] = _column(
        "ECE after dividing the logits by a temperature fitted on validation log-loss (shown beside the"
        " calibration axis; null in records written before it existed)", role="metric"
    )
    ece_adaptive: Optional[float] = _column("ECE with 15 equal-mass bins", role="metric")
    ece_classwise: Optional[float] = _column("class-wise ECE", role="metric")
    brier: Optional[float] = _column("Brier score", role="metric", scored=True)
    nll: Optional[float] = _column("negative log-likelihood", unit="nats per example", role="metric", scored=True)
    subgroup_metrics: Optional[list[SubgroupMetrics]] = Field(
        None,
        description="refits only, on a clean or shift set with attributes: per attribute and subgroup, AUROC in the"
        " subgroup and in the rest, Brier skill, cases, and a digest of the attribute's values (docs/subgroups.md);"
        " null elsewhere (the run's own probes store their predictions) and in records of schema 2 or before",
        json_schema_extra={"unit": "", "role": "detail", "scored": False},
    )
    n_train: Optional[int] = _column("training examples used by the probe", unit="examples", role="detail")
    n_eval: Optional[int] = _column("evaluated examples", unit="examples", role="detail")
    positives_train: Optional[list[int]] = _column("positives per class in the training subset", unit="examples", role="detail")
    positives_eval: Optional[list[int]] = _column("positives per class in the evaluation set", unit="examples", role="detail")
    probe_c: Optional[float] = _column("chosen inverse L2 strength")
    probe_val_nll: Optional[float] = _column("validation log-loss at the chosen strength", unit="nats per example")
    probe_temperature: Optional[float] = _column("temperature fitted on validation log-loss after the strength was chosen")
    probe_converged: Optional[bool] = _column(
        "the chosen fit's largest gradient entry is within the probe tolerance; false = not converged (see"
        " probe_grad_norm)"
    )
    probe_grad_norm: Optional[float] = _column(
        "largest absolute gradient entry of the chosen fit, recomputed from the standardised rows in the"
        " solver's precision (float32 at the default tol, float64 below 1e-5)"
    )
    probe_fingerprint: Optional[str] = _column(
        "hash of the probe settings (C grid, iterations, tolerance); null in records written before it existed",
        role="identity",
    )
    embedding_hash_train: Optional[str] = _column("content hash of the training embedding matrix")
    embedding_hash_eval: Optional[str] = _column("content hash of the evaluated embedding matrix")
    crsbench_version: Optional[str] = _column("package version")
    fit_seconds: Optional[float] = _column("probe fit time", unit="s")
    eval_seconds: Optional[float] = _column("evaluation time", unit="s")
    created_at: Optional[str] = _column("ISO-8601 UTC time the record was written")
    schema_version: Optional[int] = Field(
        RECORD_SCHEMA_VERSION,
        description="metric conventions the record was written with (see below); null: written before versions",
        json_schema_extra={"unit": "", "role": "provenance", "scored": False},
    )

    def as_row(self) -> dict[str, Any]:
        """The record as the store writes it: JSON text for list fields."""
        row = self.model_dump()
        for name in JSON_FIELDS:
            if row[name] is not None:
                row[name] = json.dumps(row[name])
        return row


# --------------------------------------------------------------------------- derived schema


def _base_type(annotation: Any) -> Any:
    """int, float, bool, str, list or a Literal's str, with Optional removed."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        return str
    if args and get_origin(annotation) is not list:  # Optional[X]
        return _base_type(args[0])
    return get_origin(annotation) or annotation


_SQL = {str: "TEXT", int: "INTEGER", float: "REAL", bool: "INTEGER", list: "TEXT"}
_DOC_TYPE = {str: "text", int: "int", float: "real", bool: "int (0/1)", list: "text (JSON list)"}


def _extra(name: str) -> dict[str, Any]:
    return RunRecord.model_fields[name].json_schema_extra  # type: ignore[return-value]


def _nullable(name: str) -> bool:
    return type(None) in get_args(RunRecord.model_fields[name].annotation)


RECORD_FIELDS: tuple[str, ...] = tuple(RunRecord.model_fields)
RECORD_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (name, _extra(name).get("sql", _SQL[_base_type(field.annotation)])) for name, field in RunRecord.model_fields.items()
)
JSON_FIELDS: tuple[str, ...] = tuple(n for n, f in RunRecord.model_fields.items() if _base_type(f.annotation) is list)
METRIC_FIELDS: tuple[str, ...] = tuple(n for n in RECORD_FIELDS if _extra(n)["role"] == "metric")
EVALUATION_KEY: tuple[str, ...] = tuple(n for n in RECORD_FIELDS if _extra(n)["role"] == "key")
AGGREGATE_KEY: tuple[str, ...] = tuple(n for n in EVALUATION_KEY if n != "seed")
REQUIRED_COLUMNS: tuple[str, ...] = tuple(n for n in RECORD_FIELDS if _extra(n)["scored"])
# what, beside the suite, decides a record's numbers for an (encoder, task): must agree to be compared
GRID_FINGERPRINTS: tuple[str, ...] = ("encoder_fingerprint", "dataset_fingerprint", "probe_fingerprint")


def schema_markdown() -> str:
    """The schema table of docs/records.md, generated from RunRecord (a test keeps the doc equal)."""
    lines = ["| column | type | unit | meaning |", "|---|---|---|---|"]
    for name, field in RunRecord.model_fields.items():
        kind = _DOC_TYPE[_base_type(field.annotation)]
        if name == "record_key":
            kind += ", primary key"
        elif _nullable(name):
            kind += ", null"
        lines.append(f"| {name} | {kind} | {_extra(name)['unit'] or '-'} | {field.description} |")
    return "\n".join(lines) + "\n"


def to_record(value: RunRecord | dict) -> RunRecord:
    """A RunRecord from a record or a dict; a bad dict fails naming the field."""
    if isinstance(value, RunRecord):
        return value
    clean = {k: _plain(v, k) for k, v in value.items()}
    try:
        return RunRecord.model_validate(clean)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(record)"
        extra = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise RecordsError(f"run record {value.get('record_key', '?')}: {where}: {first['msg']}{extra}") from None


def _plain(value: Any, name: str) -> Any:
    """numpy scalars as Python values, JSON text of list fields (as the store reads them) as lists."""
    if isinstance(value, np.generic):
        return value.item()
    if name in JSON_FIELDS and isinstance(value, str):
        return list_field(value)
    return value


def list_field(value: Any) -> list | None:
    """A list field of a record (JSON_FIELDS) as a list, whether it is the JSON text the store holds or a
    list already (a bundle's table, a record built in memory); None where the record has none. The one
    decoder of these fields, so every reader takes a stored `null` and a missing value alike."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, (list, tuple, np.ndarray)) else None


# --------------------------------------------------------------------------- older records


def with_lists(records: pd.DataFrame) -> pd.DataFrame:
    """A copy with the list fields (JSON_FIELDS) decoded: a list, or None where a record has none. Done
    once, where records are taken for scoring (`normalise_keys`), so no stage after decodes again."""
    out = records.copy()
    for name in JSON_FIELDS:
        if name in out.columns:
            out[name] = out[name].map(list_field).astype(object)
    return out


def upgrade_records(records: pd.DataFrame) -> pd.DataFrame:
    """A copy with records of schema 1 (null `schema_version`) read in today's conventions; the list
    fields already decoded (`with_lists`).

    Binary single-label and ordinal records: Brier halved (it was summed over both columns, twice
    sklearn's value); AUROC taken from the positive column of `auroc_per_class` (it was the mean of both
    columns). Multi-class and multi-label records are unchanged. The records themselves are never rewritten.
    """
    out = records.copy()
    version = out["schema_version"] if "schema_version" in out.columns else pd.Series(np.nan, index=out.index)
    old = pd.to_numeric(version, errors="coerce").fillna(1) < 2
    if not old.any() or "task_type" not in out.columns:
        return out
    per_class = out["auroc_per_class"] if "auroc_per_class" in out.columns else pd.Series(None, index=out.index)
    positives = out["positives_eval"] if "positives_eval" in out.columns else pd.Series(None, index=out.index)
    classes = [max(len(a or ()), len(p or ())) for a, p in zip(per_class, positives)]
    binary = old & out["task_type"].isin(["single_label", "ordinal"]) & (pd.Series(classes, index=out.index) == 2)
    if "brier" in out.columns:
        out.loc[binary, "brier"] = pd.to_numeric(out.loc[binary, "brier"], errors="coerce") / 2
    if "auroc" in out.columns:
        for index in out.index[binary]:
            values = per_class[index]
            if values is not None and len(values) == 2 and values[1] is not None:
                out.at[index, "auroc"] = float(values[1])
    # read in schema 2's conventions; schema 3 adds a refit field they cannot have, so they do not claim it
    out["schema_version"] = np.where(old, 2, version)
    return out


# --------------------------------------------------------------------------- one grid


def select_suite(records: pd.DataFrame, suite_hash: str) -> pd.DataFrame:
    """The records of one suite (a unique prefix of its hash is enough)."""
    if "suite_hash" not in records.columns:
        raise RecordsError("records have no suite_hash column: cannot select a suite")
    hashes = sorted(records["suite_hash"].dropna().astype(str).unique())
    matches = [h for h in hashes if h.startswith(suite_hash)]
    if len(matches) != 1:
        what = "matches no" if not matches else "matches more than one"
        raise RecordsError(f"suite hash {suite_hash!r} {what} suite in the records; present: {', '.join(hashes) or 'none'}")
    return records[records["suite_hash"] == matches[0]]


def newest_encoder_versions(records: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Where an encoder's weights or code changed between runs (several encoder fingerprints for one
    encoder and task), the records of its newest version, by the latest `created_at`; the older records
    stay in the store, never mixed in. Returns the records and one sentence per encoder and task superseded."""
    if records.empty or "encoder_fingerprint" not in records.columns or "created_at" not in records.columns:
        return records, ()
    known = records[records["encoder_fingerprint"].notna()]
    versions = known.groupby(["encoder", "task"])["encoder_fingerprint"].nunique()
    changed = versions[versions > 1]
    if changed.empty:
        return records, ()
    keep = pd.Series(True, index=records.index)
    notes = []
    for encoder, task in changed.index:
        mine = known[(known["encoder"] == encoder) & (known["task"] == task)]
        newest = mine.groupby("encoder_fingerprint")["created_at"].max().sort_values().index[-1]
        older = mine.index[mine["encoder_fingerprint"] != newest]
        keep[older] = False
        notes.append(f"{encoder} on {task}: its weights or code changed between runs; scored the "
                     f"{int((mine['encoder_fingerprint'] == newest).sum())} records of the newest version "
                     f"(fingerprint {newest}), {len(older)} older records kept in the store, not mixed in")
    return records[keep], tuple(notes)


def one_grid(records: pd.DataFrame) -> None:
    """Refuse records that mix suites whose grids differ, or that repeat an evaluation.

    Records of several suites are accepted only when every (encoder, task) has one encoder,
    dataset and probe fingerprint across them (a suite extended with an encoder or a seed); when a
    fingerprint is unknown (older records) they are refused too. The error names both suite hashes.
    """
    hashes = sorted(records["suite_hash"].dropna().astype(str).unique()) if "suite_hash" in records.columns else []
    if len(hashes) > 1:
        _same_fingerprints(records, hashes)
    key = [c for c in EVALUATION_KEY if c in records.columns]
    duplicated = records.duplicated(key, keep=False)
    if duplicated.any():
        first = records.loc[duplicated, key].iloc[0].to_dict()
        raise RecordsError(
            f"{int(duplicated.sum())} records share an evaluation key, e.g. {first}; "
            "filter the records to one suite and encoder revision (suite_hash, encoder_revision) first"
        )


def _same_fingerprints(records: pd.DataFrame, hashes: list[str]) -> None:
    advice = "pick one with --suite-hash (suite_hash= in the API)"
    for column in GRID_FINGERPRINTS:
        values = records[column] if column in records.columns else pd.Series(None, index=records.index)
        if values.isna().any():
            raise RecordsError(
                f"records come from suites {' and '.join(hashes[:2])} and do not all record a {column}, so "
                f"they may not be comparable; {advice}"
            )
        groups = records.groupby(["encoder", "task"])[column].unique()
        for (encoder, task), seen in groups.items():
            if len(seen) > 1:
                by = records[(records["encoder"] == encoder) & (records["task"] == task)]
                a, b = (by.loc[by[column] == v, "suite_hash"].iloc[0] for v in sorted(seen)[:2])
                raise RecordsError(
                    f"records of suites {a} and {b} differ in {column} for encoder {encoder!r}, task {task!r} "
                    f"({sorted(seen)[0]} vs {sorted(seen)[1]}): they are not one grid; {advice}"
                )


# --------------------------------------------------------------------------- seed aggregation


def is_refit(records: pd.DataFrame) -> pd.Series:
    """Rows that are refits (refit >= 1): the training-sample dimension, kept apart from the grid."""
    if "refit" not in records.columns:
        return pd.Series(False, index=records.index)
    return pd.to_numeric(records["refit"], errors="coerce").fillna(0) > 0


def normalise_keys(records: pd.DataFrame) -> pd.DataFrame:
    """Check the columns scoring needs and coerce their types; then `one_grid`. Refit records (refit >= 1)
    are left out: they are not cells of the grid (`normalise_refits` reads them)."""
    if not isinstance(records, pd.DataFrame):
        raise TypeError(f"records must be a pandas DataFrame, got {type(records).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in records.columns]
    if missing:
        raise RecordsError(f"records lack required column(s) {missing} (see docs/records.md)")
    records = records[~is_refit(records)]
    if records.empty:
        raise RecordsError("records table is empty: nothing to score")
    out = _coerced(records)
    one_grid(out)
    return out


def normalise_refits(records: pd.DataFrame) -> pd.DataFrame:
    """The refit records (refit >= 1) of `records`, their keys coerced as `normalise_keys` does; empty when none."""
    rows = records[is_refit(records)] if isinstance(records, pd.DataFrame) else pd.DataFrame()
    if rows.empty:
        return pd.DataFrame()
    out = _coerced(rows)
    out["refit"] = pd.to_numeric(out["refit"]).astype(np.int64)
    key = [c for c in (*EVALUATION_KEY, "refit") if c in out.columns]
    if out.duplicated(key).any():
        raise RecordsError("refit records share an evaluation key and refit index; filter the records to one suite first")
    return out


def _coerced(records: pd.DataFrame) -> pd.DataFrame:
    out = upgrade_records(with_lists(records))
    for column in ("encoder", "task", "condition_kind", "condition"):
        out[column] = out[column].astype(str)
    out["seed"] = pd.to_numeric(out["seed"]).astype(np.int64)
    out["severity"] = pd.to_numeric(out["severity"]).astype(np.int64)
    # rounding makes 0.1 written by two processes the same key
    out["fraction"] = pd.to_numeric(out["fraction"]).astype(float).round(9)
    for metric in METRIC_FIELDS:
        if metric in out.columns:
            out[metric] = pd.to_numeric(out[metric], errors="coerce").astype(float)
    unknown = sorted(set(out["condition_kind"]) - set(CONDITION_KINDS))
    if unknown:
        raise RecordsError(f"unknown condition_kind value(s) {unknown}; expected clean, perturbation or shift")
    return out


def aggregate_seeds(records: pd.DataFrame, suite_hash: str | None = None) -> pd.DataFrame:
    """One row per (encoder, task, fraction, condition_kind, condition, severity), sorted by that key.

    For each metric m present: `m_mean`, `m_std` (sample std, ddof=1; NaN with one seed) and `m_n`
    (seeds with a non-null value); `n_seeds` counts the seeds in the group. Records of several
    grids are refused (`one_grid`) unless `suite_hash` picks one suite.
    """
    if suite_hash is not None:
        records = select_suite(records, suite_hash)
    return seed_aggregate(normalise_keys(records))


def seed_aggregate(rec: pd.DataFrame) -> pd.DataFrame:
    """`aggregate_seeds` of records already validated (`normalise_keys`, or a `Records` value's frame)."""
    metrics = [m for m in METRIC_FIELDS if m in rec.columns]
    grouped = rec.groupby(list(AGGREGATE_KEY), sort=True, dropna=False)
    out = grouped.size().rename("n_seeds").to_frame()
    for metric in metrics:
        stats = grouped[metric].agg(["mean", "std", "count"])
        out[f"{metric}_mean"] = stats["mean"]
        out[f"{metric}_std"] = stats["std"]
        out[f"{metric}_n"] = stats["count"].astype(np.int64)
    return out.reset_index()


def clean_full_label(aggregate: pd.DataFrame) -> pd.DataFrame:
    """The rows of a seed aggregate at clean test, fraction 1.0: what `crsbench results` shows."""
    rows = aggregate[(aggregate["condition_kind"] == "clean") & (aggregate["fraction"] == 1.0)]
    return rows.reset_index(drop=True)

