"""The declared schema of a bundle's Parquet members, checked from each file's footer before any column is
read: the column names and Arrow types, the row count against what the manifest (or the test set) says,
and how many values each column chunk declares, so that a small file declaring a billion rows, or one
vector of a billion nulls, is refused before a byte of it is decoded.

    records.parquet                  the record columns (results.records.RECORD_COLUMNS), each flat
    predictions/index.parquet        record_key, test_set, probs: text
    predictions/test_sets.parquet    test_set, task, role: text; n_cases, n_clusters: integers
    predictions/cases/<t>.parquet    case_id, cluster: text; label (a number) or label_0 .. label_{L-1}
    predictions/probs/<t>.parquet    probs: text; k: integer; values: a list of floats
    predictions/subgroups/<t>.parquet case_id and each attribute: text (only with --with-subgroups)
"""

from __future__ import annotations

import io
import re
import struct
from typing import Callable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from crsbench.core.printable import printable
from crsbench.results.records import RECORD_COLUMNS

FOOTER_BYTES = 16 << 20  # a Parquet footer (its schema and row-group directory); a bundle's are a few kB

Kind = Callable[[pa.DataType], bool]


def _text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)


def _integer(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_null(kind)


def _number(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)


def _float_list(kind: pa.DataType) -> bool:
    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_floating(kind.value_type)


_SQL_KIND: dict[str, Kind] = {"TEXT": _text, "TEXT PRIMARY KEY": _text, "INTEGER": _integer, "REAL": _number}
_KIND_WORDS = {_text: "text", _integer: "integers", _number: "numbers", _float_list: "lists of floats"}

RECORDS: dict[str, Kind] = {name: _SQL_KIND[kind] for name, kind in RECORD_COLUMNS}
# record columns added after bundles of format 1 were first written: a bundle made before them lacks them
LATER_RECORD_COLUMNS: tuple[str, ...] = ("subgroup_metrics",)


def record_columns(names: list[str]) -> dict[str, Kind]:
    """The columns a records table declares: every record column, less the later ones it was written without."""
    return {n: kind for n, kind in RECORDS.items() if n in names or n not in LATER_RECORD_COLUMNS}
INDEX: dict[str, Kind] = {"record_key": _text, "test_set": _text, "probs": _text}
TEST_SETS: dict[str, Kind] = {"test_set": _text, "task": _text, "role": _text, "n_cases": _integer, "n_clusters": _integer}
VECTORS: dict[str, Kind] = {"probs": _text, "k": _integer, "values": _float_list}
_LABEL = re.compile(r"^label_(0|[1-9][0-9]{0,5})$")


class TableRefused(ValueError):
    """A Parquet member that is not what the schema declares; the message names the member."""


def open_footer(source: bytes | io.IOBase, name: str) -> pq.ParquetFile:
    """The Parquet file over `source`, once its footer is a size a bundle's can be."""
    if isinstance(source, bytes):
        tail = source[-8:]
    else:
        source.seek(-8, 2)
        tail = source.read(8)
        source.seek(0)
    if len(tail) < 8 or tail[4:] != b"PAR1":
        raise TableRefused(f"{name}: not a readable Parquet table (no Parquet footer)")
    (length,) = struct.unpack("<I", tail[:4])
    if length > FOOTER_BYTES:
        raise TableRefused(f"{name}: a Parquet footer of {length} bytes, over the {FOOTER_BYTES}-byte limit")
    try:
        return pq.ParquetFile(io.BytesIO(source) if isinstance(source, bytes) else source)
    except Exception as exc:  # pyarrow raises many kinds for a damaged file; none is a bug of ours
        raise TableRefused(f"{name}: not a readable Parquet table ({exc.__class__.__name__}: "
                           f"{printable(str(exc).splitlines()[0][:120] if str(exc) else '')})") from None


def case_columns(names: list[str]) -> dict[str, Kind]:
    """The columns a case table declares: ids and clusters, and one label column or label_0 .. label_{L-1}."""
    labels = [n for n in names if _LABEL.match(n)]
    expected = {f"label_{j}" for j in range(len(labels))}
    if "label" in names or set(labels) != expected:
        labels = ["label"]
    return {"case_id": _text, "cluster": _text, **{n: _number for n in labels}}


def subgroup_columns(names: list[str], name: str, attributes: int) -> dict[str, Kind]:
    """The columns a subgroup member declares: case_id and at most `attributes` attributes, all text."""
    if len(names) > attributes + 1:
        raise TableRefused(f"{name}: {len(names) - 1} attribute columns, more than the {attributes} a test set may carry")
    return {"case_id": _text, **{n: _text for n in names if n != "case_id"}}


def check(parquet: pq.ParquetFile, name: str, columns: Mapping[str, Kind], rows: int, *,
          exact: bool = True, said_by: str = "the bundle") -> None:
    """`parquet` has exactly `columns`, each of its kind, and `rows` rows (at most `rows` where not
    `exact`); each flat column chunk declares no more values than its row group has rows."""
    schema = parquet.schema_arrow
    present = list(schema.names)
    if len(set(present)) != len(present):
        raise TableRefused(f"{name}: a column name appears twice")
    extra = [c for c in present if c not in columns]
    if extra:
        raise TableRefused(f"{name}: column {printable(extra[0])[:60]!r} is not in the bundle schema")
    missing = [c for c in columns if c not in present]
    if missing:
        raise TableRefused(f"{name}: lacks column(s) {missing}")
    for column, kind in columns.items():
        found = schema.field(column).type
        if not kind(found):
            raise TableRefused(f"{name}: column {column} holds {found}, not {_KIND_WORDS[kind]}")
    declared = parquet.metadata.num_rows
    if declared != rows if exact else declared > rows:
        raise TableRefused(f"{name}: {declared} rows, {said_by} {'says' if exact else 'allows at most'} {rows}")
    metadata = parquet.metadata
    flat = [i for i, c in enumerate(present) if columns[c] is not _float_list]
    for group in range(metadata.num_row_groups):
        meta = metadata.row_group(group)
        for i in flat:
            if meta.column(i).num_values > meta.num_rows:
                raise TableRefused(f"{name}: row group {group} declares {meta.column(i).num_values} values in "
                                   f"column {present[i]} for {meta.num_rows} rows")


def check_decoded_size(parquet: pq.ParquetFile, name: str, most: int) -> None:
    """The table decodes to no more than `most` bytes, by what its row groups declare."""
    metadata = parquet.metadata
    declared = sum(metadata.row_group(g).total_byte_size for g in range(metadata.num_row_groups))
    if declared > most:
        raise TableRefused(f"{name}: declares {declared} bytes decoded, over the {most}-byte limit for a table")


def check_vector_groups(parquet: pq.ParquetFile, name: str, n_cases: int, classes: int, group_values: int) -> None:
    """Each row group of vectors declares no more floats than its rows can hold at `classes` per case,
    and no more than `group_values`: checked before the group is decoded."""
    metadata = parquet.metadata
    values = parquet.schema_arrow.names.index("values")
    for group in range(metadata.num_row_groups):
        meta = metadata.row_group(group)
        declared = meta.column(values).num_values
        most = min(group_values, meta.num_rows * n_cases * classes)
        if declared > most:
            raise TableRefused(f"{name}: row group {group} declares {declared} probabilities for {meta.num_rows} "
                               f"vector(s) of {n_cases} cases, more than the {most} allowed")
