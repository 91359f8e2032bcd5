"""A results repository: a folder of bundles, one per submission. `crsbench leaderboard FOLDER` scores the
readable, comparable ones, lists every refused one with its one-line reason, and gives the same bytes for
the same folder."""

from __future__ import annotations

import shutil

import numpy as np
from typer.testing import CliRunner

from crsbench.cli.main import app
from test_hostile_bundles import _relabelled_cases, _value, _with_vector, _written


def _repository(bundles, root):
    repo = root / "results-repo"
    for name in ("group-a", "group-b", "broken", "other-split"):
        (repo / name).mkdir(parents=True)
    shutil.copy(bundles["a"], repo / "group-a" / "a.crsb")
    shutil.copy(bundles["b"], repo / "group-b" / "b.crsb")
    _written(_with_vector(_value(bundles), lambda p: p.__setitem__((0, 0), np.nan)), repo / "broken" / "nan.crsb")
    _relabelled_cases(bundles, repo / "other-split" / "split.crsb")
    (repo / "README.md").write_text("submissions, one folder each\n")
    return repo


def test_a_folder_of_bundles_is_one_leaderboard_listing_each_refused_bundle(bundles, tmp_path):
    repo = _repository(bundles, tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["leaderboard", str(repo), "-o", str(tmp_path / "one"), "--n-boot", "30"])
    assert first.exit_code == 0, first.output
    lines = first.output.strip().splitlines()
    refused = [line for line in lines if line.startswith("refused ")]
    assert refused[0].startswith("refused results-repo/broken/nan.crsb: ") and "holds nan" in refused[0]
    assert refused[1].startswith("refused results-repo/other-split/split.crsb: not comparable: split differs on task cxr")
    assert len(refused) == 2 and "leaderboard of 2 sources, 2 refused (listed on the page)" in lines[-1]
    page = (tmp_path / "one" / "index.html").read_text()
    assert "results-repo/broken/nan.crsb" in page and "results-repo/other-split/split.crsb" in page
    assert "results-repo/group-a/a.crsb" in page and "results-repo/group-b/b.crsb" in page
    # same folder, same bytes (wherever the folder lies and the page is written)
    moved = shutil.copytree(repo, tmp_path / "elsewhere" / "results-repo")
    second = runner.invoke(app, ["leaderboard", str(moved), "-o", str(tmp_path / "two"), "--n-boot", "30"])
    assert second.exit_code == 0, second.output
    assert (tmp_path / "two" / "index.html").read_bytes() == (tmp_path / "one" / "index.html").read_bytes()
    strict = runner.invoke(app, ["leaderboard", str(repo), "-o", str(tmp_path / "three"), "--n-boot", "30", "--strict"])
    assert strict.exit_code == 2 and (tmp_path / "three" / "index.html").is_file()


def test_an_empty_folder_or_one_with_no_readable_bundle_fails_in_one_line(bundles, tmp_path):
    runner = CliRunner()
    (tmp_path / "empty").mkdir()
    empty = runner.invoke(app, ["leaderboard", str(tmp_path / "empty"), "-o", str(tmp_path / "site")])
    assert empty.exit_code == 2 and len(empty.output.strip().splitlines()) == 1
    assert "no .crsb bundle in this folder" in empty.output
    (tmp_path / "bad").mkdir()
    _written(_with_vector(_value(bundles), lambda p: p.__setitem__((0, 0), np.inf)), tmp_path / "bad" / "x.crsb")
    bad = runner.invoke(app, ["leaderboard", str(tmp_path / "bad"), "-o", str(tmp_path / "site")])
    assert bad.exit_code == 2 and "no bundle could be read: bad/x.crsb: " in bad.output
    assert len(bad.output.strip().splitlines()) == 1
