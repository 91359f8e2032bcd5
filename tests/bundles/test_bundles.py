"""Results bundles: byte-stable round trips, refusal of tampered or unsafe bundles, comparability checks,
and the point of it all: encoders run apart by two groups, bundled and compared, score exactly as one
joint run of them all."""

from __future__ import annotations

import copy
from pathlib import Path
import io
import json
import os
import platform
import re
import stat
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from crsbench import api
from crsbench.bundles import BundleError, NotComparable, from_results, merge, read_bundle, score_cohort, write_bundle
from crsbench.bundles.manifest import Limits, json_bytes
from crsbench.bundles.write import parquet_bytes
from crsbench.cli.main import app

from _bundle_fixtures import N_BOOT, bundle_members as _members, suite as _suite, zipped as _zip


# --------------------------------------------------------------------------- the joint-run equality


def test_two_groups_bundled_and_compared_score_exactly_as_one_joint_run(runs, bundles):
    compared = api.compare([bundles["a"], bundles["b"]], n_boot=N_BOOT)
    joint = api.score(runs["joint"], n_boot=N_BOOT)
    assert compared.intervals.label == joint.intervals.label and "case" in joint.intervals.label
    for table in ("scores", "scores_by_task", "axes", "axes_by_task", "axis_intervals", "leading_tier", "pairwise"):
        pd.testing.assert_frame_equal(compared.tables()[table], joint.tables()[table], check_exact=True, obj=table)
    assert compared.tier.members == joint.tier.members
    assert compared.tier.members_by_task == joint.tier.members_by_task
    assert set(compared.point.scores.index) == {"pixels-8", "colour-texture", "pixels-4"}
    assert compared.settings["departures"] == []
    # a local results folder enters a comparison as its bundle would
    mixed = api.compare([bundles["a"], runs["b"]], n_boot=N_BOOT)
    pd.testing.assert_frame_equal(mixed.point.scores, joint.point.scores, check_exact=True)


# --------------------------------------------------------------------------- what a bundle holds


def test_round_trip_is_byte_stable_and_the_bundle_holds_no_path_or_host(runs, bundles, tmp_path):
    path = bundles["a"]
    again, identity = write_bundle(from_results(runs["a"]), tmp_path / "again.crsb")
    assert again.read_bytes() == path.read_bytes()
    read = read_bundle(path)
    assert read.bundle_id == identity
    rewritten, _ = write_bundle(read, tmp_path / "rewritten.crsb")
    assert rewritten.read_bytes() == path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert names[0] == "manifest.json" and names[1:] == sorted(names[1:])
        assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        content = b"".join(archive.read(n) for n in names)
        text = b"".join(archive.read(n) for n in names if n.endswith(".json")).decode()
    for secret in (str(runs["root"]), str(runs["root"].parent), str(Path.cwd())):
        assert secret.encode() not in content, secret
    assert not re.search(rf"\b{re.escape(platform.node())}\b", text)  # the host name is a word of text, if anywhere
    assert not any(n.endswith((".npy", ".npz", ".pkl")) for n in names)  # no embeddings, nothing pickled
    records = api.records(runs["a"])
    assert len(read.records) == len(records) and set(read.records["record_key"]) == set(records["record_key"])
    stored = api.predictions(runs["a"])
    key = stored.index["record_key"].iloc[-1]
    np.testing.assert_array_equal(read.predictions().probabilities(key), stored.probabilities(key))
    assert read.facts["protocol_version"] and read.facts["solver"]["name"] != "unknown"
    assert {e["label"] for e in read.encoders} == {"pixels-8", "colour-texture"}
    assert all(e["spec"].get("licence") for e in read.encoders)


# --------------------------------------------------------------------------- tampering


def _edit_table(data: bytes, edit) -> bytes:
    frame = pq.read_table(io.BytesIO(data)).to_pandas()
    return parquet_bytes(pa.Table.from_pandas(edit(frame), preserve_index=False))


def _edited_record(frame):
    frame.loc[0, "auroc"] = 0.99
    return frame


def _swapped(frame):
    """Two records of one test set given each other's predictions."""
    for _, group in frame.groupby("test_set"):
        distinct = group.drop_duplicates("probs")
        if len(distinct) > 1:
            first, second = distinct.index[:2]
            frame.loc[[first, second], "probs"] = frame.loc[[second, first], "probs"].to_numpy()
            return frame
    raise AssertionError("no test set with two prediction vectors")


def _moved(frame):
    """A record pointed at a vector of another test set."""
    other = frame.index[frame["test_set"] != frame.loc[0, "test_set"]][0]
    frame.loc[0, "probs"] = frame.loc[other, "probs"]
    return frame


@pytest.mark.parametrize("member, edit, rehash, named", [
    ("records.parquet", _edited_record, False, "records.parquet: content does not match its manifest hash"),
    ("records.parquet", _edited_record, True, "records.parquet and predictions/index.parquet disagree"),
    ("predictions/index.parquet", _swapped, False, "predictions/index.parquet: content does not match"),
    ("predictions/index.parquet", _swapped, True, "records.parquet and predictions/index.parquet disagree"),
    ("predictions/index.parquet", _moved, True, "predictions/index.parquet: record .* points at a vector of test set"),
])
def test_an_edited_record_or_swapped_predictions_are_refused_naming_the_file(bundles, tmp_path, member, edit, rehash, named):
    members = _members(bundles["a"])
    members[member] = _edit_table(members[member], edit)
    with pytest.raises(BundleError, match=named):
        read_bundle(_zip(tmp_path / "tampered.crsb", members, rehash))


def test_manifest_mismatch_extra_and_missing_files_are_refused(bundles, tmp_path):
    members = _members(bundles["a"])
    import json

    manifest = json.loads(members["manifest.json"])
    manifest["contents"]["records"] += 1
    with pytest.raises(BundleError, match=r"records.parquet: \d+ rows, manifest.json says \d+"):
        read_bundle(_zip(tmp_path / "count.crsb", {**members, "manifest.json": json_bytes(manifest)}))
    with pytest.raises(BundleError, match="manifest.json: bundle id .* is not the expected"):
        read_bundle(bundles["a"], expected_id="0" * 16)
    assert read_bundle(bundles["a"], expected_id=read_bundle(bundles["a"]).bundle_id[:12]).records is not None
    with pytest.raises(BundleError, match="notes.txt: not listed in the manifest"):
        read_bundle(_zip(tmp_path / "extra.crsb", {**members, "notes.txt": b"hello"}))
    fewer = {n: d for n, d in members.items() if n != "encoders.json"}
    with pytest.raises(BundleError, match="encoders.json: listed in the manifest but missing"):
        read_bundle(_zip(tmp_path / "missing.crsb", fewer))


@pytest.mark.parametrize("name", ["../evil.json", "/etc/passwd", "predictions/../../x", "a\\b.json", "C:/x.json"])
def test_path_traversal_is_refused_before_anything_is_read(bundles, tmp_path, name):
    members = {**_members(bundles["a"]), name: b"{}"}
    with pytest.raises(BundleError, match="not a plain relative file name"):
        read_bundle(_zip(tmp_path / "traversal.crsb", members))


def test_oversized_members_zip_bombs_and_non_zips_are_refused(bundles, tmp_path):
    with pytest.raises(BundleError, match=r"\.crsb: [a-z_/]+\.(json|parquet): \d+ bytes, over the 2000-byte limit"):
        read_bundle(bundles["a"], limits=Limits(member_bytes=2000))
    with pytest.raises(BundleError, match="14 files, more than the 3 a bundle may hold"):
        read_bundle(bundles["a"], limits=Limits(members=3))
    with pytest.raises(BundleError, match=r"records.parquet: declares \d+ bytes decoded, over the 1000-byte limit"):
        read_bundle(bundles["a"], limits=Limits(table_bytes=1000))
    bomb = tmp_path / "bomb.crsb"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", b"{}")
        archive.writestr("zeros.json", b"\0" * (20 << 20))
    with pytest.raises(BundleError, match="zeros.json: compressed .* possible zip bomb"):
        read_bundle(bomb)
    junk = tmp_path / "junk.crsb"
    junk.write_bytes(os.urandom(4000))
    with pytest.raises(BundleError, match="not a bundle"):
        read_bundle(junk)


@pytest.mark.parametrize("task_type", ["single_label", "multi_label"])
def test_the_float32_tie_bound_covers_what_rounding_moves_and_is_zero_without_ties(task_type):
    from crsbench.metrics import classification as metrics
    from crsbench.bundles.read import _tie_slack

    rng = np.random.default_rng(3)
    n, k = 400, 3
    if task_type == "single_label":
        labels = rng.integers(0, k, n)
        near = 1 / k + 1e-9 * rng.normal(size=(n, k))  # a probe that barely moved: float32 ties most of it
        p64 = near / near.sum(axis=1, keepdims=True)
        spread = rng.dirichlet(np.ones(k), n)
    else:
        labels = (rng.random((n, k)) < 0.4).astype(float)
        labels[rng.random((n, k)) < 0.1] = np.nan
        p64 = 0.5 + 1e-9 * rng.normal(size=(n, k))
        spread = rng.random((n, k))
    p32 = p64.astype(np.float32).astype(np.float64)
    moved = abs(metrics.auroc_macro(task_type, labels, p64) - metrics.auroc_macro(task_type, labels, p32))
    slack = _tie_slack(task_type, labels, p32)
    assert 1e-4 < moved <= slack <= 0.5  # rounding moved the AUROC far past any summation error, within the bound
    assert _tie_slack(task_type, labels, spread) == 0.0


# --------------------------------------------------------------------------- comparability


def test_a_bundle_from_another_solver_or_split_or_protocol_is_refused_naming_the_field(runs, bundles):
    other = _suite(runs["root"], "other-solver", ["colour-texture"], c_grid=(1.0,), reference="colour-texture")
    api.run(other)
    a = read_bundle(bundles["a"])
    with pytest.raises(NotComparable, match=r"^not comparable: solver differs: .*--allow solver"):
        merge([a, from_results(other.output)])

    split = copy.deepcopy(read_bundle(bundles["b"]))
    old = split.test_sets.loc[(split.test_sets["task"] == "derm") & (split.test_sets["role"] == "test"), "test_set"].iloc[0]
    cases = split.cases.pop(old)
    moved = type(cases)(np.array([f"x{c}" for c in cases.case_id]), cases.cluster, cases.labels, cases.task, cases.role)
    split.cases[moved.identity()] = moved
    split.test_sets = split.test_sets.replace({old: moved.identity()})
    split.index = split.index.replace({old: moved.identity()})
    with pytest.raises(NotComparable, match=r"split differs on task derm: .* 48 case id\(s\) not in every source"):
        merge([a, split])
    unpaired = score_cohort(merge([a, split], allow=["split"]), n_boot=50)
    assert unpaired.notes[0].startswith("departure (--allow split): split differs on task derm")
    assert "seed-only" in unpaired.intervals.label

    protocol = copy.deepcopy(read_bundle(bundles["b"]))
    protocol.facts["protocol_version"] = "crs-bench-0"
    with pytest.raises(NotComparable, match="protocol differs: a.crsb has crs-bench-1; b.crsb has crs-bench-0"):
        merge([a, protocol])
    line = str(pytest.raises(NotComparable, merge, [a, protocol]).value)
    assert "\n" not in line


def test_allowed_seed_departure_is_scored_on_the_shared_seeds_and_stated_in_every_output(bundles, tmp_path):
    a, b = read_bundle(bundles["a"]), read_bundle(bundles["b"])
    b.records = b.records[b.records["seed"] == 0].reset_index(drop=True)
    with pytest.raises(NotComparable, match=r"seeds differ on task cxr: a.crsb has 0, 1; b.crsb has 0"):
        merge([a, b])
    cohort = merge([a, b], allow=["seeds"])
    assert set(cohort.records["seed"]) == {0}
    scored = score_cohort(cohort, n_boot=50)
    assert scored.notes[0].startswith("departure (--allow seeds): seeds differ")
    assert scored.settings["departures"] == [scored.notes[0]]
    assert scored.settings["seeds"] == [0]
    from crsbench.report import write_score_report

    written = write_score_report(scored, tmp_path / "scores")
    for path in written.values():
        if path.suffix == ".csv" and path.stat().st_size > 1:
            frame = pd.read_csv(path)
            assert frame.empty or set(frame["departures"]) == {scored.notes[0]}, path.name
    assert "departure (--allow seeds)" in (tmp_path / "scores" / "summary.json").read_text()


def test_the_same_name_for_two_encoders_is_refused(bundles):
    a, b = read_bundle(bundles["a"]), read_bundle(bundles["b"])
    b.records = b.records.assign(encoder_fingerprint=lambda f: f["encoder_fingerprint"].where(
        f["encoder"] != "pixels-8", "another"))
    with pytest.raises(NotComparable, match="encoder 'pixels-8' is in a.crsb and b.crsb with different fingerprints"):
        merge([a, b])


# --------------------------------------------------------------------------- the command line and the page


def test_cli_bundle_compare_and_leaderboard(runs, bundles, tmp_path):
    runner = CliRunner()
    made = runner.invoke(app, ["bundle", str(runs["a"]), "-o", str(tmp_path / "cli.crsb")])
    assert made.exit_code == 0, made.output
    assert (tmp_path / "cli.crsb").read_bytes() == bundles["a"].read_bytes()
    assert read_bundle(bundles["a"]).bundle_id in made.output
    compared = runner.invoke(app, ["compare", str(bundles["a"]), str(bundles["b"]), "--n-boot", "50"])
    assert compared.exit_code == 0, compared.output
    assert "pixels-4" in compared.output and "Leading tier" in compared.output
    as_json = runner.invoke(app, ["compare", str(bundles["a"]), str(bundles["b"]), "--n-boot", "50", "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)  # standard output holds the JSON alone
    scored = api.compare([bundles["a"], bundles["b"]], n_boot=50)
    assert data["schema"] == "crsbench.compare/1" and data["departures"] == [] and data["written"] is None
    assert [e["encoder"] for e in data["encoders"]] == list(scored.point.scores.index)
    assert [e["crs"] for e in data["encoders"]] == pytest.approx(list(scored.point.scores["crs"]))
    assert len(data["sources"]) == 2 and data["leading_tier"] == list(scored.tier.members)
    # the published components ride with every score document (docs/crs.md section 2b)
    assert {"definition", "components", "pareto_front", "pareto_pairs", "orders", "disagreements"} <= set(data)
    assert {"p_dominates_reference", "p_front", "balance", "worst_axis"} <= set(data["components"][0])
    components = runner.invoke(app, ["compare", str(bundles["a"]), str(bundles["b"]), "--n-boot", "20", "--json",
                                     "--crs-definition", "components"])
    assert components.exit_code == 0, components.output
    assert json.loads(components.stdout)["definition"] == "components"
    other = tmp_path / "other.crsb"
    members = _members(bundles["b"])
    refused = runner.invoke(app, ["compare", str(bundles["a"]), str(_zip(other, {**members, "x.json": b"{}"}))])
    assert refused.exit_code == 2 and "x.json: not listed in the manifest" in refused.output
    page = runner.invoke(app, ["leaderboard", str(bundles["a"]), str(bundles["b"]), "-o", str(tmp_path / "site"),
                               "--n-boot", "50"])
    assert page.exit_code == 0, page.output
    html = (tmp_path / "site" / "index.html").read_text()
    assert "default-src 'none'" in html and "script-src 'sha256-" in html and "unsafe-inline" not in html


def test_leaderboard_tables_filters_and_provenance(bundles, tmp_path):
    a, b = read_bundle(bundles["a"]), read_bundle(bundles["b"])
    for entry in b.encoders:  # facts a published encoder would carry
        if entry["label"] == "pixels-4":
            entry["spec"] = {**entry["spec"], "specialty": "dermatology", "licence": "cc-by-nc-4.0 (<b>card</b>)"}
    b.source = "group<b>.crsb"
    cohort = merge([a, b])
    scored = score_cohort(cohort, n_boot=50)
    from crsbench.bundles.leaderboard import context, render

    values = context(scored, cohort)
    assert "dermatology" in values["filters"]["family"] and values["filters"]["family"] == sorted(values["filters"]["family"])
    assert values["filters"]["task"] == list(scored.settings.tasks) and set(values["filters"]["modality"]) == {"derm", "cxr"}
    overall = values["overall"]
    keys = [c["key"] for c in overall["columns"]]
    assert keys[:3] == ["rank", "encoder", "family"] and keys.index("crs") < keys.index("interval") < keys.index("tier")
    by_encoder = {row["encoder"]: row for row in overall["rows"]}
    for encoder, row in scored.point.scores.iterrows():  # every number is the scored value's, tier and interval in its row
        cells = dict(zip(keys, by_encoder[encoder]["cells"]))
        assert cells["crs"]["sort"] == pytest.approx(row["crs"])
        assert cells["tier"]["text"] == ("yes" if row["in_leading_tier"] else "no")
    assert by_encoder["pixels-4"]["family"] == "dermatology"
    assert len(values["task_tables"]) == 2 and len(values["axis_tables"]) == 4 * 3
    # the components' table by encoder, and their bootstrap probabilities as named data (docs/crs.md)
    component_keys = [c["key"] for c in values["components"]["columns"]]
    assert {"relation_to_reference", "p_front", "balance", "worst_axis"} <= set(component_keys)
    assert values["components_data"]["definition"] == "mean_of_skills"
    assert {"components", "pareto_front", "orders", "disagreements"} <= set(values["components_data"])
    assert {"p_front", "p_dominates_reference", "balance"} <= set(values["components_data"]["components"][0])
    assert [p["uri"] is not None for p in values["plots"]] == [True, True, True]
    html = render(scored, cohort)
    assert "<b>" not in html and "group&lt;b&gt;.crsb" in html
    assert b.bundle_id[:16] in html and a.bundle_id[:16] in html
    assert not re.search(r"<[a-z]+[^>]*\son[a-z]+=", html)  # no inline handler anywhere
    assert not re.search(r'\sstyle="', html)  # no style attribute: the CSP allows the one style block by hash


def test_the_page_shows_any_column_the_scored_value_adds_and_builds_byte_stable(bundles, tmp_path):
    """A column the scoring adds (a new component, say) appears in the tables and the components view
    without a change to the leaderboard; the same cohort gives the same bytes."""
    from dataclasses import replace

    from crsbench.bundles.leaderboard import context, write_leaderboard

    cohort = merge([read_bundle(bundles["a"]), read_bundle(bundles["b"])])
    scored = score_cohort(cohort, n_boot=50)
    extended = replace(scored, point=replace(scored.point, scores=scored.point.scores.assign(
        new_measure=0.25, new_label="calibration")))
    values = context(extended, cohort)
    keys = [c["key"] for c in values["components"]["columns"]]
    cells = dict(zip(keys, values["components"]["rows"][0]["cells"]))
    assert cells["new_measure"]["sort"] == 0.25 and cells["new_label"]["text"] == "calibration"
    assert "dominance" in keys and "new_measure" in [c["key"] for c in values["overall"]["columns"]]
    one = write_leaderboard(scored, cohort, tmp_path / "one").page.read_bytes()
    two = write_leaderboard(score_cohort(merge([read_bundle(bundles["a"]), read_bundle(bundles["b"])]), n_boot=50),
                            cohort, tmp_path / "two").page.read_bytes()
    assert one == two


def test_a_cohort_is_scored_by_the_same_two_halves_as_a_results_folder(bundles):
    """score_cohort is scoring.inputs.score_inputs of cohort_inputs: the inputs carry their key, which
    follows the settings, and the departures are the only thing the cohort adds."""
    from crsbench.bundles.compare import cohort_inputs
    from crsbench.scoring.inputs import score_inputs

    cohort = merge([read_bundle(bundles["a"]), read_bundle(bundles["b"])])
    inputs = cohort_inputs(cohort, n_boot=50)
    assert len(inputs.key) == 64 and inputs.source is None
    assert cohort_inputs(cohort, n_boot=60).key != inputs.key
    assert inputs.with_settings(n_boot=60).key == cohort_inputs(cohort, n_boot=60).key
    halves, whole = score_inputs(inputs), score_cohort(cohort, n_boot=50)
    pd.testing.assert_frame_equal(halves.point.scores, whole.point.scores, check_exact=True)
    assert whole.inputs_key == inputs.key


def test_the_pair_table_is_the_bootstrap_s_own_pairwise_statistics(bundles):
    """P(e > f) of the CRS across tasks is the pairwise probability the scoring reports; each pair is
    antisymmetric: e - f = -(f - e), its interval mirrored, P(e > f) + P(f > e) = 1 less the ties."""
    scored = score_cohort(merge([read_bundle(bundles["a"]), read_bundle(bundles["b"])]), n_boot=200)
    pairs = scored.intervals.pair_intervals.set_index(["scope", "axis", "encoder", "versus"])
    crs = pairs.xs(("overall", "crs"), level=("scope", "axis"))
    for (e, f), row in crs.iterrows():
        assert row["p_greater"] == pytest.approx(scored.tier.pairwise.loc[e, f], abs=1e-12)
    for (scope, axis, e, f), row in pairs.iterrows():
        mirror = pairs.loc[(scope, axis, f, e)]
        assert row["diff"] == pytest.approx(-mirror["diff"], abs=1e-12)
        assert row["diff_low"] == pytest.approx(-mirror["diff_high"], abs=1e-9)
        assert row["p_greater"] + mirror["p_greater"] <= 1 + 1e-12
    assert set(pairs.index.get_level_values("scope")) == {"overall", "derm", "cxr"}


def test_vectors_streamed_in_row_groups_and_memory_mapped_read_and_score_the_same(runs, bundles, tmp_path, monkeypatch):
    """A bundle written in many small row groups, read with every vector spilled to the memory-mapped
    file, holds the same vectors and scores the same to the bit; verify keeps no vector at all."""
    from crsbench.bundles import write as writer

    monkeypatch.setattr(writer, "ROW_GROUP_BYTES", 1)  # one vector per row group
    small = write_bundle(from_results(runs["a"]), tmp_path / "groups.crsb")[0]
    with zipfile.ZipFile(small) as archive:
        groups = max(pq.ParquetFile(io.BytesIO(archive.read(n))).num_row_groups
                     for n in archive.namelist() if n.startswith("predictions/probs/"))
    assert groups > 1
    whole = read_bundle(bundles["a"])
    mapped = read_bundle(small, limits=Limits(memory_bytes=0))
    assert set(mapped.probabilities) == set(whole.probabilities)
    assert all(isinstance(v, np.memmap) for v in mapped.probabilities.values())
    for digest, array in whole.probabilities.items():
        np.testing.assert_array_equal(mapped.probabilities[digest], array)
    one = score_cohort(merge([whole, read_bundle(bundles["b"])]), n_boot=50)
    two = score_cohort(merge([mapped, read_bundle(bundles["b"], limits=Limits(memory_bytes=0))]), n_boot=50)
    pd.testing.assert_frame_equal(one.point.scores, two.point.scores, check_exact=True)
    assert read_bundle(bundles["a"], keep_predictions=False).probabilities == {}


def test_a_test_set_whose_ids_were_integers_reads_back_under_its_name(bundles, tmp_path):
    """Ids made text from integers keep numpy's fixed width (<U21 for int64) in the name's hash: the reader
    finds the name at that width."""
    from crsbench.results.predictions import CaseSet

    bundle = copy.deepcopy(read_bundle(bundles["a"]))
    old = bundle.test_sets["test_set"].iloc[0]
    cases = bundle.cases.pop(old)
    wide = CaseSet(cases.case_id, np.arange(len(cases.case_id)).astype(str), cases.labels, cases.task, cases.role)
    assert wide.cluster.dtype == np.dtype("<U21")
    bundle.cases[wide.identity()] = wide
    for frame in (bundle.test_sets, bundle.index):
        frame["test_set"] = frame["test_set"].replace({old: wide.identity()})
    path = write_bundle(bundle, tmp_path / "wide.crsb")[0]
    read = read_bundle(path)
    assert read.cases[wide.identity()].identity() == wide.identity()
    np.testing.assert_array_equal(read.cases[wide.identity()].cluster, wide.cluster)


def test_a_written_bundle_and_the_leaderboard_page_take_the_users_umask(bundles, tmp_path):
    """Files meant to be shared are readable by others under the usual umask (0644 under 022), and owner-only
    under 077: the mode is the umask's, not a temporary file's."""
    previous = os.umask(0o022)
    try:
        bundle_path, _ = write_bundle(read_bundle(bundles["a"]), tmp_path / "shared.crsb")
        page = api.leaderboard([bundles["a"]], tmp_path / "site", n_boot=0)
        assert {stat.S_IMODE(p.stat().st_mode) for p in (bundle_path, page)} == {0o644}
        os.umask(0o077)
        private, _ = write_bundle(read_bundle(bundles["a"]), tmp_path / "private.crsb")
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    finally:
        os.umask(previous)
