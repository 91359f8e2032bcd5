"""The checks a bundle's records pass before anything reads them: each row a valid run record, its key
present and unique, every number finite and possible for its field, and the encoder and task names safe
to print beside each other (core/names.py).

A value impossible for its field (an AUROC of 1e308, a negative count) is refused; a merely extreme one
(a loss of 1e300) is kept and scored. Each problem raises ValueError with one line naming the record.
"""

from __future__ import annotations

import json
import math
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from crsbench.bundles.manifest import Limits
from crsbench.core import names as name_rules
from crsbench.core.printable import printable
from crsbench.errors import DataError
from crsbench.results.records import RECORD_COLUMNS, to_record

# field -> (lowest, highest) a record can hold; fields not listed need only be finite
POSSIBLE: dict[str, tuple[float, float]] = {
    "auroc": (0.0, 1.0), "balanced_accuracy": (0.0, 1.0), "kappa_quadratic": (-1.0, 1.0),
    "ece": (0.0, 1.0), "ece_temperature_scaled": (0.0, 1.0), "ece_adaptive": (0.0, 1.0), "ece_classwise": (0.0, 1.0),
    "brier": (0.0, 2.0),  # the multi-class Brier score sums over classes: at most 2
    "nll": (0.0, math.inf), "probe_val_nll": (0.0, math.inf), "probe_c": (0.0, math.inf),
    "probe_temperature": (0.0, math.inf), "probe_grad_norm": (0.0, math.inf),
    "fraction": (0.0, 1.0), "seed": (0, 2**63 - 1), "severity": (0, 100), "refit": (0, 1_000_000),
    "n_train": (0, 2**53), "n_eval": (0, 2**53), "fit_seconds": (0.0, math.inf), "eval_seconds": (0.0, math.inf),
}
PER_CLASS_POSSIBLE = {"auroc_per_class": (0.0, 1.0), "positives_train": (0, 2**53), "positives_eval": (0, 2**53)}


def _key(records: pd.DataFrame, row: int) -> str:
    return printable(str(records["record_key"].iloc[row]))[:40]


def check_records(records: pd.DataFrame, limits: Limits) -> None:
    """Each record valid, keyed once, its numbers finite and possible (see POSSIBLE)."""
    keys = records["record_key"]
    if keys.isna().any():
        raise ValueError(f"a record without a record_key (row {int(np.argmax(keys.isna().to_numpy()))})")
    for row in records.to_dict(orient="records"):
        try:
            to_record(row)
        except RecursionError:
            raise ValueError(f"record {printable(str(row['record_key']))[:40]!r}: a list field nested too deeply to read") from None
        except (DataError, ValueError) as exc:  # ValueError: a list field's JSON text
            line = str(exc).splitlines()[0][:160] if str(exc) else exc.__class__.__name__
            raise ValueError(f"record {printable(str(row['record_key']))[:40]!r}: {printable(line)}") from None
    for name, kind in RECORD_COLUMNS:
        if kind not in ("INTEGER", "REAL"):
            continue
        values = pd.to_numeric(records[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        _check_numbers(records, name, values, np.arange(len(values)))
    classes: dict[str, list] = {}
    for name, (low, high) in PER_CLASS_POSSIBLE.items():
        classes[name] = []
        for row, text in enumerate(records[name]):
            listed = [] if text is None else json.loads(text) if isinstance(text, str) else text
            classes[name].append(len(listed) if text is not None else None)
            values = np.array([np.nan if v is None else v for v in listed], dtype=np.float64)
            _check_numbers(records, name, values, np.full(len(values), row), (low, high))
    for row, (train, held) in enumerate(zip(classes["positives_train"], classes["positives_eval"])):
        if train is not None and held is not None and train != held:  # both count the same classes
            raise ValueError(f"record {_key(records, row)!r}: positives_train counts {train} classes, "
                             f"positives_eval {held}")
    twice = keys[keys.duplicated()]
    if len(twice):
        raise ValueError(f"record_key {printable(str(twice.iloc[0]))[:40]!r} twice")


def _check_numbers(records: pd.DataFrame, name: str, values: np.ndarray, rows: np.ndarray,
                   bounds: tuple[float, float] | None = None) -> None:
    with np.errstate(invalid="ignore"):
        infinite = np.isinf(values)
        if infinite.any():
            at = int(np.argmax(infinite))
            raise ValueError(f"record {_key(records, int(rows[at]))!r}: {name} is {values[at]}, not a finite number")
        low, high = bounds or POSSIBLE.get(name, (-math.inf, math.inf))
        outside = (values < low) | (values > high)
    if outside.any():
        at = int(np.argmax(outside))
        raise ValueError(f"record {_key(records, int(rows[at]))!r}: {name} is {values[at]:g}, impossible for it "
                         f"(between {low:g} and {high:g})")


def check_names(names: Mapping[str, Iterable[str]], limits: Limits) -> list[str]:
    """Each kind of name (encoder, task) within the length limit, visible, plain, and none confusable with
    another of its kind. Refused by default; with `limits.accept_confusable_names`, accepted and returned
    as notes that flag them."""
    notes = []
    for kind, values in names.items():
        values = [str(v) for v in values]
        for value in values:
            if len(value) > limits.name_chars:
                raise ValueError(f"{kind} name {name_rules.shown(value)} has {len(value)} characters, over the "
                                 f"{limits.name_chars}-character limit")
        found = [f"{kind} name {name_rules.shown(v)}: {'; '.join(p)}" for v in values if (p := name_rules.problems(v))]
        found += [f"{kind} names {', '.join(name_rules.shown(v) for v in group)} look alike (they differ in "
                  f"{name_rules.differing_code_points(group)})" for group in name_rules.confusable_groups(values)]
        if found and not limits.accept_confusable_names:
            raise ValueError(f"{found[0]}; refused (accept_confusable_names=1 in CRSBENCH_BUNDLE_LIMITS accepts "
                             "them for a trusted source, flagged)")
        notes += [f"accepted though unsafe to read: {line}" for line in found]
    return notes
