"""Patient subgroup attributes per case (sex, age band, site, view): how a dataset names and reads them.

An attribute is asked for by a short spec, the same in a suite (`subgroups: [sex, "age:decades"]`) and
on the command line (`--subgroup-column age:18,40,65`):

- `column`: the column's values as they are (stripped); a blank or missing value is the subgroup
  UNKNOWN, counted and shown, never dropped;
- `column:decades`: a numeric age banded by decade ("40-49");
- `column:a,b,c`: a numeric age banded at the given edges ("<a", "a-b", ..., ">=c").

"subgroup" and "attribute" are the words throughout ("group" means the patient clusters of
`group_column`). Attributes never enter a dataset's fingerprint: they are stored beside the
predictions (results.subgroup_files), so adding them to a store re-keys nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from crsbench.datasets.labels import is_missing
from crsbench.errors import DataError

UNKNOWN = "unknown"  # the subgroup of a missing value
DECADES = "decades"
MAX_ATTRIBUTES = 16  # an attribute is a table column everywhere it is shown
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class AttributeSpec:
    """One attribute to read: its column, and how a numeric age is banded (None: taken as it is)."""

    column: str
    bands: tuple[float, ...] | str | None = None  # DECADES, or ascending edges
    label: str | None = None  # the attribute's name where it is not the column's (a release's "Age" as age_band)

    @property
    def name(self) -> str:
        return self.label or self.column


def parse_attribute(spec: str, where: str = "subgroups") -> AttributeSpec:
    """`column`, `column:decades` or `column:e1,e2,...`; DataError naming `where` and the spec otherwise."""
    column, _, rule = str(spec).partition(":")
    column, rule = column.strip(), rule.strip()
    if not _NAME.match(column):
        raise DataError(f"{where}: attribute column {column!r} must be 1-64 letters, digits, '_', '.' or '-'")
    if not _:
        return AttributeSpec(column)
    if rule == DECADES:
        return AttributeSpec(column, DECADES)
    try:
        edges = tuple(float(e) for e in rule.split(","))
    except ValueError:
        raise DataError(f"{where}: {spec!r}: bands must be 'decades' or ascending numbers like 18,40,65") from None
    if not edges or any(not math.isfinite(e) for e in edges) or list(edges) != sorted(set(edges)):
        raise DataError(f"{where}: {spec!r}: band edges must be finite and strictly ascending")
    return AttributeSpec(column, edges)


def parse_attributes(specs, where: str = "subgroups") -> tuple[AttributeSpec, ...]:
    parsed = tuple(parse_attribute(s, where) for s in specs or ())
    names = [a.name for a in parsed]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"{where}: attribute {repeated[0]!r} named twice")
    if len(parsed) > MAX_ATTRIBUTES:
        raise DataError(f"{where}: {len(parsed)} attributes; at most {MAX_ATTRIBUTES}")
    return parsed


def _edge(value: float) -> str:
    return f"{value:g}"


def _row(i: int) -> str:
    return f"row {i + 1}"


def band_ages(values, bands: tuple[float, ...] | str, where: str, place=_row) -> np.ndarray:
    """Age bands of raw values (text or numbers): a missing value is UNKNOWN; a value that is not a number
    is refused, naming `where` (a file and column) and the first such value by `place(i)` (its row or line)."""
    text = [str(v).strip() for v in values]
    out = np.full(len(text), UNKNOWN, dtype=object)
    for i, value in enumerate(text):
        if is_missing(value):
            continue
        try:
            age = float(value)
        except ValueError:
            raise DataError(f"{where} {place(i)}: age {value!r} is not a number (bands asked for)") from None
        if not math.isfinite(age) or age < 0:
            raise DataError(f"{where} {place(i)}: age {value!r} is not a finite non-negative number")
        out[i] = band_of(age, bands)
    return out.astype(str)


def band_of(age: float, bands: tuple[float, ...] | str) -> str:
    if bands == DECADES:
        low = int(age // 10) * 10
        return f"{low}-{low + 9}"
    edges = list(bands)
    if age < edges[0]:
        return f"<{_edge(edges[0])}"
    for low, high in zip(edges, edges[1:]):
        if low <= age < high:
            return f"{_edge(low)}-{_edge(high)}"
    return f">={_edge(edges[-1])}"


def attribute_values(values, spec: AttributeSpec, where: str, place=_row) -> np.ndarray:
    """One attribute's subgroup per case: banded ages, or the values stripped with blanks as UNKNOWN."""
    if spec.bands is not None:
        return band_ages(values, spec.bands, where, place)
    text = [str(v).strip() for v in values]
    return np.array([UNKNOWN if is_missing(v) else v for v in text], dtype=str)


def check_varies(values: np.ndarray, where: str) -> None:
    """An attribute with one value over the whole dataset has nothing to compare: refused by name."""
    distinct = np.unique(values)
    if len(distinct) == 1:
        raise DataError(f"{where}: every row has the one value {str(distinct[0])!r}: no subgroups to compare")


def train_only_note(dataset: str, attribute: str, train: np.ndarray, test: np.ndarray) -> str | None:
    """A note for subgroups seen in training but not in the test set: they cannot be scored."""
    only = sorted(set(train.tolist()) - set(test.tolist()))
    if not only:
        return None
    return (f"{dataset}: subgroup(s) {', '.join(repr(v) for v in only)} of {attribute!r} appear only in the "
            "training data: not in the test set, not scored")
