"""Per-case subgroup labels in bundles: left out unless asked (`--with-subgroups`), said by verify, read back
byte-stable, and, compared with another group's bundle, scored exactly as the joint run scores them; without
them every comparison says the subgroups are absent. The hostile cases are in test_hostile_bundles.py."""

from __future__ import annotations

import json
import re

import pandas as pd
from typer.testing import CliRunner

from crsbench import api
from crsbench.bundles import from_results, read_bundle, write_bundle
from crsbench.cli.main import app
from crsbench.results.predictions import load_predictions

from _bundle_fixtures import N_BOOT, bundle_members

ABSENT = "subgroups: absent, no source carries per-case subgroup labels"


def test_a_bundle_leaves_subgroup_labels_out_unless_asked(runs, bundles, tmp_path):
    plain, carrying = bundle_members(bundles["a"]), bundle_members(bundles["a_subgroups"])
    assert not [n for n in plain if n.startswith("predictions/subgroups/")]
    assert "subgroup_sets" not in json.loads(plain["manifest.json"])["contents"]  # the bytes of a bundle before subgroups
    held = sorted(n for n in carrying if n.startswith("predictions/subgroups/"))
    assert len(held) == 3 and json.loads(carrying["manifest.json"])["contents"]["subgroup_sets"] == 3
    read = read_bundle(bundles["a_subgroups"])
    stored = load_predictions(runs["a"])
    for test_set, table in read.subgroups.items():  # what the results folder stores, case for case
        pd.testing.assert_frame_equal(table, stored.subgroups[test_set], check_dtype=False)
    again, _ = write_bundle(read, tmp_path / "again.crsb")
    assert again.read_bytes() == bundles["a_subgroups"].read_bytes()
    assert write_bundle(from_results(runs["a"], with_subgroups=True), tmp_path / "b.crsb")[0].read_bytes() == \
        bundles["a_subgroups"].read_bytes()


def test_verify_says_whether_a_bundle_carries_subgroup_labels(bundles):
    runner = CliRunner()
    plain = runner.invoke(app, ["verify", str(bundles["a"])])
    assert plain.exit_code == 0, plain.output
    assert "subgroup labels: none (a bundle carries per-case subgroup labels only when written with " \
           "`crsbench bundle --with-subgroups`)" in plain.output
    carrying = runner.invoke(app, ["verify", str(bundles["a_subgroups"])])
    assert "subgroup labels: carried per case (cxr age_band, sex; derm age_band, sex; derm shift age_band, sex)" \
        in carrying.output
    facts = json.loads(runner.invoke(app, ["verify", str(bundles["a_subgroups"]), "--json"]).stdout)
    assert facts["subgroups"] == {"cxr": ["age_band", "sex"], "derm": ["age_band", "sex"], "derm shift": ["age_band", "sex"]}


def test_compared_bundles_with_subgroups_score_them_as_the_joint_run(runs, bundles):
    """Group A's bundle carries the labels, group B's does not: the test sets are the same, so every encoder's
    subgroup results are scored, exactly as the joint run scores them."""
    compared = api.compare([bundles["a_subgroups"], bundles["b"]], n_boot=N_BOOT)
    joint = api.score(runs["joint"], n_boot=N_BOOT)
    assert not compared.subgroups.table.empty
    assert set(compared.subgroups.table["encoder"]) == {"pixels-8", "colour-texture", "pixels-4"}
    for table in ("subgroups", "subgroup_worst"):
        pd.testing.assert_frame_equal(compared.tables()[table], joint.tables()[table], check_exact=True, obj=table)
    assert not [n for n in compared.notes if n.startswith("subgroups:")]


def test_without_subgroup_labels_compare_and_leaderboard_say_they_are_absent(bundles, tmp_path):
    runner = CliRunner()
    compared = runner.invoke(app, ["compare", str(bundles["a"]), str(bundles["b"]), "--n-boot", "20"])
    assert compared.exit_code == 0, compared.output
    assert ABSENT in compared.output and "AUROC per subgroup" not in compared.output
    built = runner.invoke(app, ["leaderboard", str(bundles["a"]), "-o", str(tmp_path / "site"), "--n-boot", "20"])
    assert built.exit_code == 0, built.output
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<script.*?</script>", "", page, flags=re.S)  # the page's own script aside
    assert ABSENT in page and "<code>crsbench bundle --with-subgroups</code>" in page and "`" not in text
    carrying = runner.invoke(app, ["compare", str(bundles["a_subgroups"]), "--n-boot", "20"])
    assert "AUROC per subgroup" in carrying.output and ABSENT not in carrying.output


def test_the_bundle_command_says_whether_it_included_subgroup_labels(runs, tmp_path):
    runner = CliRunner()
    left_out = runner.invoke(app, ["bundle", str(runs["a"]), "-o", str(tmp_path / "a.crsb")])
    assert left_out.exit_code == 0 and "per-case subgroup labels left out (--with-subgroups includes them)" in left_out.output
    included = runner.invoke(app, ["bundle", str(runs["a"]), "-o", str(tmp_path / "b.crsb"), "--with-subgroups"])
    assert included.exit_code == 0 and "per-case subgroup labels included" in included.output
    assert len(read_bundle(tmp_path / "b.crsb").subgroups) == 3 and not read_bundle(tmp_path / "a.crsb").subgroups
