"""What each axis value rests on, from the run records: the test cases per class, the label fractions,
the perturbations and severities actually run, the shift set's size and cases per class.

Pure: records in, two tables out. Every encoder of a scored cohort shares one grid (scoring refuses
any other), so the evidence is per task, read from the records of any encoder. An axis resting on
fewer than the stated minimum is `thin`, with the reason in words; the advice and the report then
say so instead of quoting the value as a strength.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.results.record_set import Records
from crsbench.scoring.axes import AXES

# Below this many cases in a class, its one-vs-rest AUROC and its share of the Brier score rest on a
# handful of patients: one case moves the class's AUROC by 1/n of its range.
MIN_CASES_PER_CLASS = 10
# Below this many shift cases in all, the shift half of robustness is a small-sample anecdote.
MIN_SHIFT_CASES = 50
FULL_LABELS = 1.0

EVIDENCE_COLUMNS = ("task", "axis", "n_cases", "smallest_class", "smallest_class_cases", "n_fractions",
                    "n_perturbations", "n_severities", "perturbations", "n_shift", "smallest_shift_class",
                    "smallest_shift_class_cases", "rests_on", "thin", "why")
CLASS_COLUMNS = ("task", "set", "class", "name", "cases")


def _counts(value) -> list[int]:
    return [int(v) for v in value or ()]  # a list or None: decoded where the records were loaded


def class_name(index: int, names=None) -> str:
    """A class as the reader knows it: its declared name, else its index."""
    if names is not None and 0 <= index < len(names):
        return str(names[index])
    return f"class {index}"


@dataclass(frozen=True)
class SetCounts:
    n: int
    per_class: tuple[int, ...]

    def smallest(self) -> tuple[int, int]:
        """(class index, cases) of the smallest class; (-1, n) when the per-class counts are unknown."""
        if not self.per_class:
            return -1, self.n
        k = int(np.argmin(self.per_class))
        return k, int(self.per_class[k])


def _set_counts(rows: pd.DataFrame) -> SetCounts | None:
    if rows.empty:
        return None
    row = rows.iloc[0]
    n = int(row["n_eval"]) if "n_eval" in rows and pd.notna(row.get("n_eval")) else 0
    # cases per class (single-label, ordinal), positives per label (multi-label)
    per_class = _counts(row.get("positives_eval")) if "positives_eval" in rows else []
    return SetCounts(n, tuple(per_class))


def _names_of(class_names, task: str):
    """The names of one task's classes from a mapping task -> names or one tuple for every task."""
    return class_names.get(task) if isinstance(class_names, Mapping) else class_names


def class_table(records: Records, class_names=None) -> pd.DataFrame:
    """Cases per class in each task's test set and each shift set (one encoder's, seed's records); `name`
    is the class as the reader knows it (class_name: its declared name, else "class k")."""
    rows = []
    for task, frame in records.frame.groupby("task", sort=False):
        names = _names_of(class_names, str(task))
        full = frame[frame["fraction"].astype(float) == FULL_LABELS]
        first = full[(full["encoder"] == full["encoder"].iloc[0]) & (full["seed"] == full["seed"].min())] \
            if len(full) else full
        sets = [("test", first[first["condition_kind"] == "clean"])]
        sets += [(str(c), g) for c, g in first[first["condition_kind"] == "shift"].groupby("condition", sort=True)]
        for name, part in sets:
            counts = _set_counts(part)
            if counts is None:
                continue
            for k, n in enumerate(counts.per_class):
                rows.append({"task": str(task), "set": name, "class": k, "name": class_name(k, names), "cases": int(n)})
    return pd.DataFrame(rows, columns=list(CLASS_COLUMNS))


def _words_counts(counts: SetCounts, names=None) -> str:
    if not counts.per_class:
        return f"{counts.n} cases"
    per = ", ".join(f"{class_name(k, names)} {n}" for k, n in enumerate(counts.per_class))
    return f"{counts.n} cases ({per})"


def axis_evidence(records: Records, class_names=None, min_cases: int = MIN_CASES_PER_CLASS,
                  min_shift: int = MIN_SHIFT_CASES) -> pd.DataFrame:
    """One row per (task, axis): what the axis rests on and whether it is thin (module docstring).
    `class_names`: the classes' names, when known (the records hold indices only), one tuple for every
    task or a mapping task -> names."""
    rows = []
    for task, frame in records.frame.groupby("task", sort=False):
        names = _names_of(class_names, str(task))
        frame = frame[frame["encoder"] == frame["encoder"].iloc[0]]
        seed0 = frame[frame["seed"] == frame["seed"].min()]
        full = seed0[seed0["fraction"].astype(float) == FULL_LABELS]
        test = _set_counts(full[full["condition_kind"] == "clean"])
        if test is None:
            continue
        fractions = sorted(set(seed0.loc[seed0["condition_kind"] == "clean", "fraction"].astype(float)))
        perturbed = full[full["condition_kind"] == "perturbation"]
        pairs = sorted({(str(c), int(s)) for c, s in zip(perturbed["condition"], perturbed["severity"])})
        families = sorted({c for c, _ in pairs})
        severities = sorted({s for _, s in pairs})
        shifted = full[full["condition_kind"] == "shift"]
        shift = _set_counts(shifted.sort_values("condition").head(1)) if len(shifted) else None
        k, smallest = test.smallest()
        test_thin = smallest < min_cases
        test_words = f"test set {_words_counts(test, names)}"
        test_why = (f"{class_name(k, names)} has {smallest} test case(s), fewer than the minimum of {min_cases}"
                    if test_thin else "")
        base = {"task": str(task), "n_cases": test.n, "smallest_class": class_name(k, names) if k >= 0 else "",
                "smallest_class_cases": smallest, "n_fractions": len(fractions), "n_perturbations": len(pairs),
                "n_severities": len(severities), "perturbations": ", ".join(families),
                "n_shift": shift.n if shift else 0, "smallest_shift_class": "", "smallest_shift_class_cases": np.nan}
        if shift is not None:
            sk, sn = shift.smallest()
            base["smallest_shift_class"] = class_name(sk, names) if sk >= 0 else ""
            base["smallest_shift_class_cases"] = sn
        for axis in AXES:
            rests, why = test_words, test_why
            if axis == "label_efficiency":
                rests = f"{len(fractions)} label fraction(s) ({', '.join(f'{f:g}' for f in fractions)}); {test_words}"
            if axis == "robustness":
                parts = []
                if pairs:
                    parts.append(f"{len(families)} perturbation(s) ({', '.join(families)}) x {len(severities)} "
                                 f"severit{'y' if len(severities) == 1 else 'ies'} on the {test_words}")
                else:
                    parts.append("no perturbation run")
                reasons = [test_why] if (pairs and test_why) else []
                if shift is not None:
                    sk, sn = shift.smallest()
                    parts.append(f"shift set {_words_counts(shift, names)}")
                    if shift.n < min_shift:
                        reasons.append(f"the shift set has {shift.n} case(s), fewer than the minimum of {min_shift}")
                    if sn < min_cases:
                        reasons.append(f"{class_name(sk, names)} has {sn} shift case(s), fewer than the "
                                       f"minimum of {min_cases}")
                rests, why = "; ".join(parts), "; ".join(reasons)
            rows.append({**base, "axis": axis, "rests_on": rests, "thin": bool(why), "why": why})
    return pd.DataFrame(rows, columns=list(EVIDENCE_COLUMNS))


def thin_axes(evidence: pd.DataFrame, task: str | None = None) -> dict[str, str]:
    """axis -> why it is thin: on `task`, or across tasks (thin on any task that has it, tasks named)."""
    if evidence is None or evidence.empty:
        return {}
    frame = evidence if task is None else evidence[evidence["task"] == task]
    out: dict[str, str] = {}
    for axis, rows in frame[frame["thin"].astype(bool)].groupby("axis", sort=False):
        if task is not None or frame["task"].nunique() == 1:
            out[str(axis)] = str(rows["why"].iloc[0])
        else:
            out[str(axis)] = "; ".join(f"task {t}: {w}" for t, w in zip(rows["task"], rows["why"]))
    return out
