"""Bundles and local results as one scored cohort, only where their numbers can stand side by side.

Comparable means: the same protocol version, the same probe solver (its name and the probe fingerprints,
which hash the C grid, iterations, tolerance and solver), the same tasks, and per task the same dataset
fingerprints (the content of the images, labels and split files, and the split options), the same test
cases (case ids, clusters and labels of each test set: the split assignment the paired bootstrap needs),
the same seeds, label fractions and conditions, and the same `crs:` settings. Anything else is refused
with one line naming the field; `allow` names fields to score anyway, each departure stated in every
output (the notes, settings.departures, the leaderboard).

Because the CRS of an encoder is fixed by its own axes and the reference's (docs/crs.md), merging the
records of separately run encoders scores each exactly as one joint run would.
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import pandas as pd

from crsbench.bundles.content import Bundle
from crsbench.errors import DataError
from crsbench.results.predictions import Predictions
from crsbench.results.records import list_field

FIELDS = ("protocol", "solver", "tasks", "classes", "dataset", "split", "seeds", "fractions", "conditions", "crs")
# departures that leave no common test set to pair cases on: intervals fall back to the seed-only bootstrap
UNPAIRED = ("dataset", "split")
# departures scored on the part every source shares
SHARED = ("tasks", "seeds", "fractions", "conditions")


class NotComparable(DataError):
    """Sources whose numbers cannot be scored together; the message names the field that differs."""


def _text(values) -> str:
    values = list(values)
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) or "none"


def _per_task(bundle: Bundle, column: str | Sequence[str]) -> dict[str, tuple]:
    records = bundle.records
    out = {}
    for task, group in records.groupby("task", sort=True):
        if isinstance(column, str):
            values = pd.to_numeric(group[column]) if column in ("seed", "fraction") else group[column]
            out[str(task)] = tuple(sorted(set(values.round(9) if column == "fraction" else values)))
        else:
            out[str(task)] = tuple(sorted({(str(k), str(c), int(s)) for k, c, s in group[list(column)].itertuples(index=False)}))
    return out


def _datasets(bundle: Bundle) -> dict[str, tuple]:
    out = {task: tuple(sorted(map(str, group["dataset_fingerprint"].dropna().unique())))
           for task, group in bundle.records.groupby("task", sort=True)}
    for entry in bundle.datasets:
        if entry.get("role") == "shift" and entry.get("task") in out:
            out[entry["task"]] = out[entry["task"]] + (f"shift {entry['fingerprint']}",)
    return out


def _classes(bundle: Bundle) -> dict[str, tuple]:
    """Per task, its type and number of classes (or labels): what a task's records are scored as."""
    def count(row) -> int:
        lengths = [len(list_field(v) or ()) for v in (row.auroc_per_class, row.positives_eval)]
        return max(lengths)

    out: dict[str, set] = {}
    for row in bundle.records[["task", "task_type", "auroc_per_class", "positives_eval"]].itertuples():
        out.setdefault(str(row.task), set()).add(f"{row.task_type} of {count(row)} classes")
    return {task: tuple(sorted(values)) for task, values in out.items()}


def _splits(bundle: Bundle) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for row in bundle.test_sets.sort_values(["task", "role"]).itertuples():
        out[str(row.task)] = out.get(str(row.task), ()) + (f"{row.role} {row.test_set}",)
    return out


FACTS: dict[str, Callable[[Bundle], Any]] = {
    "protocol": lambda b: b.facts.get("protocol_version"),
    "solver": lambda b: (b.facts.get("solver", {}).get("name"), tuple(b.facts.get("solver", {}).get("probe_fingerprints", ()))),
    "tasks": lambda b: tuple(sorted(map(str, b.records["task"].unique()))),
    "classes": _classes,
    "dataset": _datasets,
    "split": _splits,
    "seeds": lambda b: _per_task(b, "seed"),
    "fractions": lambda b: _per_task(b, "fraction"),
    "conditions": lambda b: _per_task(b, ("condition_kind", "condition", "severity")),
    "crs": lambda b: b.suite_settings()[1],
}


def _describe(name: str, value: Any) -> str:
    if name == "solver":
        return f"solver {value[0]}, probe fingerprint(s) {_text(value[1])}"
    if name == "conditions":
        return _text(c if k != "perturbation" else f"{c}@{s}" for k, c, s in value)
    if name == "classes":
        return _text(value)
    if name == "crs":
        return _text(f"{k}={v}" for k, v in sorted(value.items())) if value else "defaults"
    if isinstance(value, tuple):
        return _text(v[:16] if isinstance(v, str) and len(v) > 24 else v for v in value)
    return str(value)


def _case_difference(sources: list[Bundle], task: str) -> str:
    """How many case ids of a task's test set are in one source and not another."""
    def ids(b: Bundle) -> set:
        rows = b.test_sets[(b.test_sets["task"] == task) & (b.test_sets["role"] == "test")]
        return set(b.cases[rows["test_set"].iloc[0]].case_id) if len(rows) else set()

    sets = [ids(b) for b in sources]
    apart = set.union(*sets) - set.intersection(*sets)
    return f"; {len(apart)} case id(s) not in every source" if apart else "; same case ids, other clusters or labels"


def difference(sources: list[Bundle], name: str) -> str | None:
    """One phrase saying how `name` differs between the sources, or None when it agrees."""
    values = [FACTS[name](b) for b in sources]
    if all(v == values[0] for v in values):
        return None
    if isinstance(values[0], dict) and name != "crs":
        shared = sorted(set.intersection(*(set(v) for v in values)))
        for task in shared:
            column = [v[task] for v in values]
            if any(c != column[0] for c in column):
                said = "; ".join(f"{b.source} has {_describe(name, c)}" for b, c in zip(sources, column))
                extra = _case_difference(sources, task) if name == "split" else ""
                return f"{name} differ{'s' if name in ('dataset', 'split') else ''} on task {task}: {said}{extra}"
        return None  # differs only on tasks some source lacks: the tasks field says so
    return f"{name} differ{'s' if name in ('protocol', 'solver', 'crs') else ''}: " + "; ".join(
        f"{b.source} has {_describe(name, v)}" for b, v in zip(sources, values))


@dataclass
class Cohort:
    """The merged records and predictions of comparable sources, and what a reader must be told."""

    records: pd.DataFrame
    predictions: Predictions | None
    sources: list[Bundle]
    departures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reference: str | None = None
    crs: dict = field(default_factory=dict)
    baselines: list[str] = field(default_factory=list)
    paired: bool = True  # False: no common test sets, the seed-only bootstrap is used
    encoder_source: dict[str, str] = field(default_factory=dict)


def _check_encoders(sources: list[Bundle]) -> dict[str, str]:
    """Each encoder label belongs to one encoder: the same label with another fingerprint is refused."""
    owner: dict[str, tuple[str, tuple]] = {}
    for bundle in sources:
        for label, group in bundle.records.groupby("encoder", sort=True):
            prints = tuple(sorted(map(str, group["encoder_fingerprint"].dropna().unique())))
            if label in owner and owner[label][1] != prints:
                raise NotComparable(f"encoder {label!r} is in {owner[label][0]} and {bundle.source} with different "
                                    "fingerprints (another encoder under the same name); relabel one in its suite")
            owner.setdefault(str(label), (bundle.source, prints))
    return {label: source for label, (source, _) in owner.items()}


def _check_names(sources: list[Bundle]) -> None:
    """No two encoders or tasks of the sources alike up to confusables (each bundle was checked alone when
    read); accepted under the reader's limits, the note then rides with the last source."""
    from crsbench.bundles.manifest import reader_limits
    from crsbench.bundles.record_checks import check_names

    if len(sources) < 2:
        return
    names = {kind: sorted({str(v) for b in sources for v in b.records[kind].unique()}) for kind in ("encoder", "task")}
    try:
        notes = check_names(names, reader_limits())
    except ValueError as exc:
        raise NotComparable(f"not comparable: {exc}") from None
    sources[-1].notes += [n for n in notes if n not in sources[-1].notes]


def _shared_cells(records: pd.DataFrame, per_source: list[pd.DataFrame]) -> pd.Series:
    """Records whose (task, seed, fraction, condition) every source has."""
    key = ["task", "seed", "fraction", "condition_kind", "condition", "severity"]

    def cells(frame):
        f = frame[key].copy()
        f["fraction"] = pd.to_numeric(f["fraction"]).round(9)
        return set(map(tuple, f.astype(str).itertuples(index=False)))

    shared = set.intersection(*(cells(f) for f in per_source))
    here = records[key].copy()
    here["fraction"] = pd.to_numeric(here["fraction"]).round(9)
    return pd.Series([tuple(r) in shared for r in here.astype(str).itertuples(index=False)], index=records.index)


def comparable(sources: Sequence[Bundle], allow: Sequence[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """(each encoder label's source, field -> the departure `allow` permits); NotComparable names the first field
    that differs and is not allowed, and the sources on each side."""
    from crsbench.bundles.manifest import LIMITS_VARIABLE, reader_limits

    sources = list(sources)
    owners = _check_encoders(sources)
    bound = reader_limits().cohort_encoders
    if len(owners) > bound:  # each bundle is bounded alone; the scoring's arrays grow with the cohort's encoders
        raise NotComparable(f"the sources hold {len(owners)} encoder labels together, over this reader's limit of "
                            f"{bound} for one comparison (raise it for trusted sources: cohort_encoders=N in "
                            f"{LIMITS_VARIABLE})")
    _check_names(sources)
    departures = {}
    for name in FIELDS:
        said = difference(sources, name) if len(sources) > 1 else None
        if said is None:
            continue
        if name not in allow:
            raise NotComparable(f"not comparable: {said} (--allow {name} scores them anyway, stating the departure)")
        how = ("scored on the part every source shares" if name in SHARED else
               "intervals from the seed-only bootstrap (no common test cases to pair)" if name in UNPAIRED else
               "scored as if it agreed")
        departures[name] = f"departure (--allow {name}): {said}; {how}"
    return owners, departures


def merge(sources: Sequence[Bundle], allow: Sequence[str] = ()) -> Cohort:
    """One cohort of comparable sources; NotComparable names the first field that differs and is not allowed."""
    sources = list(sources)
    if not sources:
        raise DataError("nothing to compare: give at least one bundle or results folder")
    unknown = sorted(set(allow) - set(FIELDS))
    if unknown:
        raise DataError(f"--allow: unknown field(s) {unknown}; one of {', '.join(FIELDS)}")
    names = [b.source for b in sources]
    for i, b in enumerate(sources):  # outputs name sources by file name: make each one unique
        if names.count(b.source) > 1:
            b.source = f"{b.source} #{i + 1}"
    owners, departures = comparable(sources, allow)
    paired = not any(name in UNPAIRED for name in departures)
    departures = list(departures.values())
    frames, seen, notes = [], set(), [note for b in sources for note in b.notes]
    for bundle in sources:
        fresh = ~bundle.records["record_key"].isin(seen)
        if (~fresh).any():
            twice = sorted(bundle.records.loc[~fresh, "encoder"].astype(str).unique())
            notes.append(f"{int((~fresh).sum())} record(s) of {', '.join(twice)} in {bundle.source} are also in an "
                         "earlier source (same record keys): read once")
        frames.append(bundle.records[fresh])
        seen |= set(bundle.records["record_key"])
    records = pd.concat(frames, ignore_index=True)
    if any(name in allow for name in SHARED) and len(sources) > 1:
        keep = _shared_cells(records, [b.records for b in sources])
        records = records[keep].reset_index(drop=True)
    predictions = _merged_predictions(sources, records) if paired else None
    notes += _subgroup_notes(sources, predictions)
    reference, crs, _ = sources[0].suite_settings()
    baselines = sorted({b for s in sources for b in s.suite_settings()[2]})
    return Cohort(records, predictions, sources, departures, notes, reference, crs, baselines, paired, owners)


def _merged_predictions(sources: list[Bundle], records: pd.DataFrame) -> Predictions | None:
    held = [b for b in sources if not b.index.empty]
    if not held:
        return None
    index = pd.concat([b.index for b in held], ignore_index=True).drop_duplicates("record_key")
    cases = {k: v for b in held for k, v in b.cases.items()}
    probabilities = ChainMap(*(b.probabilities for b in held))  # looked up when used: spilled vectors stay unmapped
    keys = records[["record_key", "encoder", "task", "seed", "fraction", "condition_kind", "condition", "severity"]]
    index = keys.merge(index, on="record_key", how="inner")[["record_key", "test_set", "probs", *keys.columns[1:]]]
    stored = Predictions.in_memory(index, cases, probabilities)
    # a test set's attributes from the first source that carries them: they describe its cases, whoever scored them
    stored.subgroups = {t: table for b in reversed(held) for t, table in b.subgroups.items() if t in cases}
    return stored


def _subgroup_notes(sources: list[Bundle], predictions: Predictions | None) -> list[str]:
    """One line where no subgroup result can be scored, or where two sources label a test set's cases differently."""
    if predictions is None and any(b.subgroups for b in sources):
        return ["subgroups: not scored, the sources share no test set to pair them on"]
    if predictions is None or not predictions.subgroups:
        return ["subgroups: absent, no source carries per-case subgroup labels (a bundle carries them only when "
                "written with `crsbench bundle --with-subgroups`)"]
    notes = []
    for test_set, table in sorted(predictions.subgroups.items()):
        others = [b.source for b in sources if test_set in b.subgroups and not b.subgroups[test_set].equals(table)]
        if others:
            notes.append(f"subgroups: {', '.join(others)} label the cases of test set {test_set[:12]} otherwise than an "
                         "earlier source; the earlier source's labels are used")
    return notes


def cohort_inputs(cohort: Cohort, reference: str | None = None, **settings):
    """The first half of scoring a cohort of bundles (scoring.inputs): its records, predictions (where the
    comparison is paired), reference, floor baselines and CRS settings (the bundles' `crs:` block, these by
    name over it), with their key."""
    from crsbench.crs.definition import CRSConfig
    from crsbench.results.record_set import Records
    from crsbench.scoring.inputs import ScoringInputs, inputs_key
    from crsbench.scoring.settings import ScoreContext

    config = CRSConfig(**{**cohort.crs, **settings})
    if not cohort.paired and config.resample == "cases":
        config = config.model_copy(update={"resample": "seeds"})
    records = Records.of(cohort.records)
    encoders = set(records.frame["encoder"].astype(str))
    chosen = reference or (cohort.reference if cohort.reference in encoders else None)
    stored = cohort.predictions if config.resample == "cases" else None
    key = inputs_key(records.frame, stored, chosen, tuple(cohort.baselines), {}, config, records.refits)
    sources = [{"source": b.source, "bundle_id": b.bundle_id, "records": int(len(b.records)),
                "encoders": sorted(b.records["encoder"].astype(str).unique())} for b in cohort.sources]
    context = ScoreContext(lead_notes=(*cohort.departures, *cohort.notes), departures=tuple(cohort.departures),
                           sources=tuple(sources))
    return ScoringInputs(records, stored, chosen, tuple(cohort.baselines), {}, config, key, context=context)


def score_cohort(cohort: Cohort, reference: str | None = None, **settings):
    """The ScoreReport of a cohort (scoring.score_records), with the departures first among its notes and
    in settings.departures, and the sources in settings.sources."""
    from crsbench.scoring.inputs import score_inputs

    return score_inputs(cohort_inputs(cohort, reference, **settings))


__all__ = ["FIELDS", "Cohort", "NotComparable", "cohort_inputs", "comparable", "merge", "score_cohort", "difference"]
