"""A record column added after bundles of format 1 (a refit's `subgroup_metrics`): a bundle written before it is
read with the column null, and one whose column holds what the record schema forbids is refused in one line."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crsbench.bundles import read_bundle
from crsbench.bundles.read import BundleError
from _bundle_fixtures import bundle_members, zipped


def _records_edited(bundles, path, edit):
    members = bundle_members(bundles["a"])
    table = pq.read_table(io.BytesIO(members["records.parquet"]))
    sink = io.BytesIO()
    pq.write_table(edit(table), sink)
    members["records.parquet"] = sink.getvalue()
    return zipped(path, members, rehash=True)


def test_a_bundle_written_before_the_refit_subgroup_column_is_read_with_it_null(bundles, tmp_path):
    path = _records_edited(bundles, tmp_path / "older.crsb",
                           lambda t: t.drop_columns(["subgroup_metrics"]))
    bundle = read_bundle(path)
    assert "subgroup_metrics" in bundle.records.columns and bundle.records["subgroup_metrics"].isna().all()
    assert len(bundle.records) == len(read_bundle(bundles["a"]).records)


@pytest.mark.parametrize("entry, expected", [
    ({"auroc": 1.5}, r"subgroup_metrics\.0\.auroc: Input should be less than or equal to 1"),
    ({"n_cases": -3}, r"subgroup_metrics\.0\.n_cases: Input should be greater than or equal to 0"),
    ({"note": "x"}, r"subgroup_metrics\.0\.note: Extra inputs are not permitted"),
])
def test_a_refits_subgroup_metrics_outside_the_schema_are_refused_naming_the_field(bundles, tmp_path, entry, expected):
    metrics = json.dumps([{"attribute": "sex", "subgroup": "F", "values": "abc", "n_cases": 40, "auroc": 0.8,
                           "rest_auroc": 0.7, "brier_skill": 0.1, **entry}])

    def edit(table):
        column = table.column_names.index("subgroup_metrics")
        return table.set_column(column, "subgroup_metrics", pa.array([metrics] + [None] * (len(table) - 1), pa.string()))

    path = _records_edited(bundles, tmp_path / "hostile.crsb", edit)
    with pytest.raises(BundleError, match=rf"records.parquet: record .*: {expected}"):
        read_bundle(path)
