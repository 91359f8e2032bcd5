"""Hostile bundles, generated here: each is consistently re-hashed (written by the bundle writer from an
edited value, or with its manifest rewritten to match), so the content hashes alone cannot refuse it,
and each must end `crsbench verify` in one line and exit 2, never a traceback."""

from __future__ import annotations

import copy
import io
import json
import re
import struct

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from crsbench.bundles import merge, read_bundle, write_bundle
from crsbench.bundles.manifest import json_bytes
from crsbench.bundles.write import parquet_bytes
from crsbench.cli.main import app
from crsbench.results.predictions import CaseSet, probability_hash
from _bundle_fixtures import bundle_members, zipped

DEEP = 200_000


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _value(bundles):
    return copy.deepcopy(read_bundle(bundles["a"]))


def _written(bundle, path):
    return write_bundle(bundle, path)[0]


def _with_vector(bundle, edit):
    """The first probability vector edited by `edit`, renamed to its new hash everywhere (a careful forger)."""
    old = bundle.index["probs"].iloc[0]
    array = bundle.probabilities.pop(old).copy()
    edit(array)
    new = probability_hash(array)
    bundle.probabilities[new] = array
    bundle.index["probs"] = bundle.index["probs"].replace({old: new})
    return bundle


def _with_labels(bundle, role_task, edit):
    """A test set's labels edited by `edit`, the test set renamed to its new identity everywhere."""
    task, role = role_task
    row = bundle.test_sets[(bundle.test_sets["task"] == task) & (bundle.test_sets["role"] == role)].iloc[0]
    old = bundle.cases.pop(row["test_set"])
    cases = CaseSet(old.case_id, old.cluster, edit(np.array(old.labels, dtype=np.float64)), old.task, old.role)
    new = cases.identity()
    bundle.cases[new] = cases
    bundle.test_sets["test_set"] = bundle.test_sets["test_set"].replace({row["test_set"]: new})
    bundle.index["test_set"] = bundle.index["test_set"].replace({row["test_set"]: new})
    return bundle


def _single_label_task(bundle) -> str:
    return str(bundle.records.loc[bundle.records["task_type"] != "multi_label", "task"].iloc[0])


def _member_edit(bundles, path, edit):
    members = bundle_members(bundles["a"])
    edit(members)
    return zipped(path, members, rehash=True)


def _lying_size(bundles, path, member: str, delta: int):
    """The central directory says `member` is `delta` bytes longer than it is (its CRC still true)."""
    data = bytearray(zipped(path, bundle_members(bundles["a"])).read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46: at + 46 + length].decode() == member:
            size = struct.unpack_from("<I", data, at + 24)[0]
            struct.pack_into("<I", data, at + 24, size + delta)
            break
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    return path


def _manifest(edit):
    def change(members):
        manifest = json.loads(members["manifest.json"])
        edit(manifest)
        members["manifest.json"] = json_bytes(manifest)
    return change


def _deep_manifest(bundles, path):
    members = bundle_members(bundles["a"])
    members["manifest.json"] = members["manifest.json"].replace(b"{", b'{"note": ' + _nested(DEEP) + b",", 1)
    return zipped(path, members)


def _deep_record_field(bundles, path):
    bundle = _value(bundles)
    bundle.records.loc[0, "auroc_per_class"] = _nested(DEEP).decode()
    return _written(bundle, path)


def _deep_parquet(bundles, path):
    def edit(members):
        value, kind = 1, pa.int64()
        for _ in range(300):
            value, kind = [value], pa.list_(kind)
        table = pq.read_table(io.BytesIO(members["records.parquet"]))
        members["records.parquet"] = parquet_bytes(table.append_column("x", pa.array([value] * len(table), kind)))
    return _member_edit(bundles, path, edit)


def _infinite_metric(bundles, path):
    bundle = _value(bundles)
    bundle.records["nll"] = bundle.records["nll"].astype(float)
    bundle.records.loc[3, "nll"] = float("inf")
    return _written(bundle, path)


def _extra_member(name):
    def make(bundles, path):
        return _member_edit(bundles, path, lambda members: members.__setitem__(name, b"{}"))
    return make


def _duplicate(bundles, path):
    members = bundle_members(bundles["a"])
    return zipped(path, [*members.items(), ("runs.json", members["runs.json"])])


def _newer(bundles, path):
    return _member_edit(bundles, path, _manifest(lambda m: m.update(format_version=2, written_by="crsbench 9.0")))


def _nan(array):
    array[0, 0] = np.nan


def _inf(array):
    array[1, 0] = np.inf


def _above_one(array):
    array[2, 0] = 1.5


# case -> how it is made -> what the one line must say
CORPUS = {
    "manifest nested 200,000 deep": (
        lambda b, p: zipped(p, {**bundle_members(b["a"]), "manifest.json": _nested(DEEP)}),
        "manifest.json: JSON nested 200000 levels deep"),
    "manifest with a value nested 200,000 deep": (_deep_manifest, "manifest.json: JSON nested 200001 levels deep"),
    "suites.json nested 200,000 deep": (
        lambda b, p: _member_edit(b, p, lambda m: m.__setitem__("suites.json", _nested(DEEP))),
        "suites.json: JSON nested 200000 levels deep"),
    "encoders.json nested 100 deep (parses, over the limit)": (
        lambda b, p: _member_edit(b, p, lambda m: m.__setitem__("encoders.json", _nested(100))),
        "encoders.json: JSON nested 100 levels deep, over the 32-level limit"),
    "a record's list field nested 200,000 deep": (_deep_record_field, "records.parquet: record .*: a list field nested too deeply to read"),
    "records.parquet with a column nested 300 lists deep": (
        _deep_parquet, "records.parquet: not a readable Parquet table .*too deeply nested"),
    "NaN probability": (lambda b, p: _written(_with_vector(_value(b), _nan), p), r"holds nan, not a probability"),
    "infinite probability": (lambda b, p: _written(_with_vector(_value(b), _inf), p), r"holds inf, not a probability"),
    "probability 1.5": (lambda b, p: _written(_with_vector(_value(b), _above_one), p), r"holds 1.5, not a probability"),
    "NaN label in a single-label test set": (
        lambda b, p: _written(_with_labels(_value(b), (_single_label_task(_value(b)), "test"),
                                           lambda y: np.where(np.arange(len(y)) == 0, np.nan, y)), p),
        "a NaN label in a single-label test set"),
    "infinite label": (
        lambda b, p: _written(_with_labels(_value(b), (_single_label_task(_value(b)), "test"),
                                           lambda y: np.where(np.arange(len(y)) == 0, np.inf, y)), p),
        "an infinite label"),
    "infinite metric value (nll)": (_infinite_metric, r"records.parquet: record .*: nll is inf, not a finite number"),
    "NaN written as a JSON constant": (
        lambda b, p: _member_edit(b, p, lambda m: m.__setitem__("runs.json", b'[{"numerics": NaN}]')),
        "runs.json: not valid JSON .*NaN is not a JSON number"),
    "duplicate member name": (_duplicate, "runs.json: stored twice"),
    "member name with an escape sequence": (_extra_member("runs\x1b[2J.json"), r"'runs\\x1b\[2J.json': not a plain"),
    "member name with a newline": (_extra_member("notes\n.json"), r"'notes\\n.json': not a plain"),
    "member name with a backslash": (_extra_member("predictions\\x.json"), r"not a plain relative file name"),
    "member name climbing out": (_extra_member("predictions/../../x.json"), r"not a plain relative file name"),
    "declared size larger than the data": (
        lambda b, p: _lying_size(b, p, "records.parquet", 1000), "records.parquet: holds \\d+ bytes, its header says"),
    "declared size smaller than the data": (
        lambda b, p: _lying_size(b, p, "records.parquet", -1000), "damaged zip"),
    "newer format version": (_newer, "bundle format 2 is newer than the 1 this crsbench reads .*upgrade crsbench"),
}


def _one_line_refusal(result, expected: str) -> str:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # handled: no traceback
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and "Traceback" not in result.output
    assert re.search(expected, lines[0]), lines[0]
    return lines[0]


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile warns while writing the duplicate case
@pytest.mark.parametrize("case", list(CORPUS))
def test_a_hostile_bundle_ends_verify_in_one_line_and_exit_2(bundles, tmp_path, case):
    make, expected = CORPUS[case]
    path = make(bundles, tmp_path / "hostile.crsb")
    line = _one_line_refusal(CliRunner().invoke(app, ["verify", str(path)]), expected)
    print(f"\n{case} | {line} | 2")  # the table of refusals, with -s


def test_verify_prints_what_a_bundle_holds_and_checks_its_id(bundles):
    runner = CliRunner()
    identity = read_bundle(bundles["a"]).bundle_id
    ok = runner.invoke(app, ["verify", str(bundles["a"]), "--id", identity[:12]])
    assert ok.exit_code == 0, ok.output
    for fact in (identity, "encoders (2): colour-texture, pixels-8", "tasks (2): cxr, derm", "written by crsbench",
                 "suites: a ("):
        assert fact in ok.output, fact
    as_json = json.loads(runner.invoke(app, ["verify", str(bundles["a"]), "--json"]).stdout)
    assert as_json["bundle_id"] == identity and as_json["records"] == len(read_bundle(bundles["a"]).records)
    _one_line_refusal(runner.invoke(app, ["verify", str(bundles["a"]), "--id", "0" * 16]),
                      f"bundle id {identity[:16]} is not the expected 0000000000000000")
    _one_line_refusal(runner.invoke(app, ["verify", str(bundles["a"].parent / "absent.crsb")]), "no such bundle file")


def _relabelled_cases(bundles, path):
    """Group B's bundle with every cxr case id renamed (another split of the same task)."""
    bundle = copy.deepcopy(read_bundle(bundles["b"]))
    row = bundle.test_sets[(bundle.test_sets["task"] == "cxr") & (bundle.test_sets["role"] == "test")].iloc[0]
    old = bundle.cases.pop(row["test_set"])
    moved = CaseSet(np.array([f"x{c}" for c in old.case_id]), old.cluster, old.labels, old.task, old.role)
    bundle.cases[moved.identity()] = moved
    for frame in (bundle.test_sets, bundle.index):
        frame["test_set"] = frame["test_set"].replace({row["test_set"]: moved.identity()})
    return _written(bundle, path)


def _more_classes(bundles, path):
    """Group B's bundle whose derm records say one class more than group A's."""
    bundle = copy.deepcopy(read_bundle(bundles["b"]))
    derm = bundle.records["task"] == "derm"
    for column, extra in (("auroc_per_class", None), ("positives_eval", 0)):
        bundle.records.loc[derm, column] = [json.dumps(json.loads(v) + [extra]) for v in bundle.records.loc[derm, column]]
    return _written(bundle, path)


@pytest.mark.parametrize("make, expected", [
    (_relabelled_cases, r"split differs on task cxr: a.crsb has .*; other.crsb has .*48 case id\(s\) not in every source"),
    (_more_classes, r"classes differ on task derm: a.crsb has single_label of \d+ classes; other.crsb has single_label of \d+ classes"),
])
def test_two_bundles_that_define_a_task_differently_are_refused_naming_both(bundles, tmp_path, make, expected):
    other = make(bundles, tmp_path / "other.crsb")
    runner = CliRunner()
    _one_line_refusal(runner.invoke(app, ["compare", str(bundles["a"]), str(other), "--n-boot", "20"]), expected)
    field = "split" if "split" in expected else "classes"
    cohort = merge([read_bundle(bundles["a"]), read_bundle(other)], allow=[field])
    assert cohort.departures[0].startswith(f"departure (--allow {field}): {field} differ")
    if field == "split":  # the same classes on other case ids: scored, unpaired, the departure stated
        allowed = runner.invoke(app, ["compare", str(bundles["a"]), str(other), "--n-boot", "20", "--allow", field])
        assert allowed.exit_code == 0, allowed.output
        assert f"departure (--allow {field})" in allowed.output


def test_verify_says_whether_the_bundle_carries_training_samples(bundles, tmp_path):
    runner = CliRunner()
    plain = runner.invoke(app, ["verify", str(bundles["a"])])
    assert plain.exit_code == 0 and "training samples: no refit records" in plain.output
    assert "refits: 4" in plain.output  # how to add them
    bundle = copy.deepcopy(read_bundle(bundles["a"]))
    full = bundle.records[(bundle.records["fraction"] == 1.0) & (bundle.records["seed"] == 0)]
    refits = []
    for k in (1, 2, 3):  # refit rows as a run writes them: keyed apart, no predictions
        rows = full.copy()
        rows["refit"], rows["record_key"] = k, rows["record_key"] + f"-refit{k}"
        refits.append(rows)
    bundle.records = pd.concat([bundle.records, *refits], ignore_index=True)
    with_refits = runner.invoke(app, ["verify", str(_written(bundle, tmp_path / "refits.crsb")), "--json"])
    assert with_refits.exit_code == 0, with_refits.output
    assert json.loads(with_refits.stdout)["refits"] == {"cxr": 3, "derm": 3}
    text = runner.invoke(app, ["verify", str(tmp_path / "refits.crsb")]).output
    assert "training samples: paired refits per task (cxr 3, derm 3)" in text
