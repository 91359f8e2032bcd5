"""Faults a user meets on a shared machine, made real: a read-only or full file system (a mount in a
private mount namespace), a damaged or foreign database, a held lock, a killed process, hostile files
and names. Each ends in one line naming the file, exit 2, with stored data intact."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from typer.testing import CliRunner

from crsbench import api
from crsbench.cli.main import app
from crsbench.errors import DataError
from crsbench.results.coverage import IncompleteGridError, expected_cells
from crsbench.plan.fit_units import plan
from crsbench.results.records import RECORD_FIELDS
from crsbench.results.store import ResultsStore
from crsbench.plan.suite import parse_suite

GRID_SUITE = {
    "name": "grid",
    "output": "unused",
    "encoders": ["raw-pixels", "colour-texture"],
    "tasks": [
        {"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", "n_train": 40, "n_val": 20, "n_test": 30}},
        {"name": "cxr", "dataset": {"kind": "demo", "specialty": "cxr", "n_train": 40, "n_val": 20, "n_test": 30}},
    ],
    "seeds": [0, 1, 2],
    "fractions": [0.5, 1.0],
    "perturbations": {"select": "none"},
}


def _record(encoder, task, seed, fraction, condition, rng):
    record = {name: None for name in RECORD_FIELDS}
    auroc = float(rng.uniform(0.6, 0.9))
    record.update(
        record_key=hashlib.sha256(repr((encoder, task, seed, fraction, condition)).encode()).hexdigest()[:32],
        run_id="r1", suite_hash="h1", encoder=encoder, encoder_fingerprint="f-" + encoder, task=task,
        dataset="d", dataset_fingerprint="g-" + task, probe_fingerprint="p", task_type="single_label", seed=seed,
        fraction=fraction, condition_kind=condition.kind, condition=condition.name, severity=condition.severity,
        auroc=auroc, balanced_accuracy=auroc - 0.1, ece=float(rng.uniform(0.02, 0.2)), brier=0.3, nll=0.6,
        n_train=10, n_eval=30, created_at="2024-01-01T00:00:00+00:00",
    )
    return record


def write_store(folder: Path, suite_data=GRID_SUITE, keep=lambda unit, condition: True, names=None) -> Path:
    """A results store as a run writes it (runs row with the suite, records of the planned grid), fast:
    the numbers are drawn, not computed. `keep` drops cells to make the grid incomplete; `names`
    renames encoders in the records (names a suite label could not hold)."""
    suite = parse_suite(suite_data)
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    with ResultsStore(folder / "results.sqlite") as store:
        if names is None:
            store.start_run({"run_id": "r1", "started_at": "2024-01-01T00:00:00+00:00", "suite_hash": "h1",
                             "suite_name": suite.name, "suite_yaml": yaml.safe_dump(suite.model_dump(mode="json")),
                             "host": "h", "pid": 1})
            store.finish_run("r1", "2024-01-01T00:01:00+00:00", 0)
        for unit in plan(suite):
            for condition in unit.conditions:
                if keep(unit, condition):
                    encoder = (names or {}).get(unit.encoder, unit.encoder)
                    store.add(_record(encoder, unit.task, unit.seed, unit.fraction, condition, rng))
    return folder / "results.sqlite"


def cli(*args, env=None, mount=None, timeout=300):
    """`crsbench ARGS` in process; with `mount` (a mount command), in a subprocess in a private mount
    namespace where that mount is made first (it vanishes with the process)."""
    if mount is None:
        result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr
    command = [sys.executable, "-m", "crsbench", *map(str, args)]
    if mount:
        command = ["unshare", "-m", "sh", "-c", f'{mount} && exec "$0" "$@"', *command]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", **(env or {})},
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


PROGRESS_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")  # a log's progress: timing, not the error


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not PROGRESS_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _can_mount(tmp_path) -> bool:
    probe = tmp_path / "mount-probe"
    probe.mkdir(exist_ok=True)
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"],
                          capture_output=True)
    return done.returncode == 0


@pytest.fixture
def mounts(tmp_path):
    """Read-only and size-limited file systems need a private mount namespace (tests run as root, and
    root ignores permission bits, so chmod would prove nothing)."""
    if not _can_mount(tmp_path):
        pytest.skip("no private mount namespace here (unshare -m with mount rights): cannot make a real "
                    "read-only or full file system")


def read_only(folder: Path) -> str:
    return f"mount --bind -o ro {folder} {folder}"


# --------------------------------------------------------------------------- 1. partial results


def _drop_colour_texture_cxr(unit, condition):
    return not (unit.encoder == "colour-texture" and unit.task == "cxr")


def test_an_incomplete_grid_is_refused_naming_what_is_missing(tmp_path):
    write_store(tmp_path / "out", keep=_drop_colour_texture_cxr)
    with pytest.raises(IncompleteGridError) as caught:
        api.load_results(tmp_path / "out")
    message = str(caught.value)
    assert "6 of 24 planned records missing" in message
    assert "colour-texture (6)" in message and "cxr (6)" in message and "--partial" in message
    with pytest.raises(IncompleteGridError):
        api.score(tmp_path / "out", n_boot=0)

    code, _, err = cli("results", tmp_path / "out")
    assert code == 2 and "colour-texture" in one_error_line(err)
    code, _, err = cli("score", tmp_path / "out", "--n-boot", "0")
    assert code == 2 and "incomplete results" in one_error_line(err)


def test_a_partial_view_compares_like_with_like_and_is_labelled_everywhere(tmp_path):
    write_store(tmp_path / "out", keep=_drop_colour_texture_cxr)
    view = api.load_results(tmp_path / "out", partial=True)
    records, grid = view.frame, view.grid
    assert grid.partial_view and not grid.complete
    assert set(records["task"]) == {"derm"}  # cxr is scored for one encoder only: left out for both
    assert records.groupby("encoder").size().to_dict() == {"colour-texture": 6, "raw-pixels": 6}

    code, out, _ = cli("results", tmp_path / "out", "--partial")
    assert code == 0 and "PARTIAL VIEW" in out and "cxr" not in out.split("PARTIAL VIEW")[1].split("\n")[0]
    code, out, _ = cli("score", tmp_path / "out", "--partial", "--n-boot", "20", "--out", tmp_path / "scores")
    assert code == 0
    assert "PARTIAL VIEW - Across tasks: Clinical Reliability Score" in out and "PARTIAL VIEW - Leading tier" in out
    summary = json.loads((tmp_path / "scores" / "summary.json").read_text())
    assert summary["settings"]["grid"]["partial_view"] is True and summary["notes"][0].startswith("PARTIAL VIEW")
    for name in ("scores.csv", "axes.csv", "leading_tier.csv"):
        assert (tmp_path / "scores" / name).read_text().startswith("view,"), name
    assert all(row["view"] == "partial" for row in json.loads((tmp_path / "scores" / "scores.json").read_text()))


def test_a_complete_grid_is_shown_unlabelled(tmp_path):
    write_store(tmp_path / "out")
    view = api.load_results(tmp_path / "out")
    records, grid = view.frame, view.grid
    assert grid.complete and grid.expected == 24 == len(records) and not grid.partial_view
    code, out, _ = cli("results", tmp_path / "out")
    assert code == 0 and "PARTIAL" not in out


def test_a_missing_encoder_is_named_even_when_the_others_agree(tmp_path):
    """The issue's case: one encoder stored, its own grid consistent; the suite asked for two."""
    write_store(tmp_path / "out", keep=lambda unit, c: unit.encoder == "raw-pixels")
    with pytest.raises(IncompleteGridError, match=r"encoders colour-texture \(12\)"):
        api.score(tmp_path / "out", n_boot=0)


def test_expected_grid_comes_from_the_stored_suite_without_reading_data():
    suite = parse_suite(GRID_SUITE)
    assert len(expected_cells(suite)) == 2 * 2 * 3 * 2


# --------------------------------------------------------------------------- 4. read-only commands


def test_results_on_a_foreign_sqlite_file_is_refused_and_leaves_it_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
        db.execute("INSERT INTO notes VALUES ('keep me')")
    before = digest(path)
    for command in ("results", "score"):
        code, _, err = cli(command, path)
        line = one_error_line(err)
        assert code == 2 and "not a CRS-Bench results database" in line and str(path) in line
    assert digest(path) == before and not Path(str(path) + "-wal").exists()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["notes"]


def test_results_and_score_do_not_write_to_the_store(tmp_path):
    db = write_store(tmp_path / "out")
    before, mtime = digest(db), db.stat().st_mtime_ns
    assert cli("results", tmp_path / "out")[0] == 0
    assert cli("score", tmp_path / "out", "--n-boot", "0", "--out", tmp_path / "scores")[0] == 0
    assert digest(db) == before and db.stat().st_mtime_ns == mtime


# --------------------------------------------------------------------------- 2. environment faults


def test_a_database_replaced_by_garbage_or_cut_in_half_is_one_line(tmp_path):
    db = write_store(tmp_path / "out")
    with sqlite3.connect(db) as conn:  # fold the WAL in, so the file alone is the database
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    whole = db.read_bytes()
    for name, damaged in (("garbage", os.urandom(len(whole))), ("half", whole[: len(whole) // 2])):
        db.write_bytes(damaged)
        for command in (("results", tmp_path / "out"), ("score", tmp_path / "out", "--n-boot", "0")):
            code, _, err = cli(*command)
            line = one_error_line(err)
            assert code == 2 and str(db) in line and ("not a database" in line or "malformed" in line), (name, line)
        assert db.read_bytes() == damaged, name  # nothing rewritten


def test_a_database_locked_longer_than_the_timeout_is_one_line(tmp_path):
    db = write_store(tmp_path / "out")
    suite = dict(GRID_SUITE, output=str(tmp_path / "out"), cache=str(tmp_path / "cache"))
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        code, _, err = cli("run", tmp_path / "suite.yaml", env={"CRSBENCH_DB_TIMEOUT": "1"})
        line = one_error_line(err)
        assert code == 2 and str(db) in line and "locked by another process for more than 1 s" in line
        assert time.monotonic() - started < 60
    finally:
        holder.rollback()
        holder.close()
    assert len(api.records(tmp_path / "out")) == 24


@pytest.mark.slow
def test_read_only_output_results_reads_and_score_says_where_it_cannot_write(tmp_path, mounts):
    db = write_store(tmp_path / "out")
    before = digest(db)
    ro = read_only(tmp_path / "out")
    code, out, err = cli("results", tmp_path / "out", mount=ro)
    assert code == 0 and "raw-pixels" in out, err
    code, out, err = cli("score", tmp_path / "out", "--n-boot", "0", mount=ro)
    line = one_error_line(err)
    assert code == 2 and str(tmp_path / "out" / "scores") in line and "read-only" in line
    code, _, err = cli("results", tmp_path / "out", "--export", mount=ro)
    assert code == 2 and "read-only" in one_error_line(err)
    assert digest(db) == before


@pytest.mark.slow
def test_score_to_a_full_disk_is_one_line(tmp_path, mounts):
    write_store(tmp_path / "out")
    (tmp_path / "full").mkdir()
    full = f"mount -t tmpfs -o size=16k tmpfs {tmp_path / 'full'}"
    code, _, err = cli("score", tmp_path / "out", "--n-boot", "0", "--out", tmp_path / "full", mount=full)
    line = one_error_line(err)
    assert code == 2 and str(tmp_path / "full") in line and "disk is full" in line


def _bomb_png(path: Path, side: int = 20_000) -> Path:
    """A real 20000 x 20000 PNG (1 bit per pixel, all zero): 48 kB on disk, 400 M pixels decoded."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + side // 8)
    data = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b""))
    return path


def test_a_decompression_bomb_is_a_data_error_naming_the_file(tmp_path):
    from crsbench.datasets.image_files import load_image

    bomb = _bomb_png(tmp_path / "bomb.png")
    with pytest.raises(DataError, match=r"bomb\.png: refused as a possible decompression bomb"):
        load_image(bomb, 32)
    code, _, err = cli("perturbations", "--preview", bomb, "--output", tmp_path / "sheet.png")
    assert code == 2 and str(bomb) in one_error_line(err)


def test_a_garbage_safetensors_file_is_an_encoder_error_naming_it(tmp_path):
    pytest.importorskip("safetensors")
    from crsbench.encoders.adapters.weights import load_state_dict
    from crsbench.errors import EncoderError

    for name, content in (("garbage", b"\x10" + b"\0" * 7 + b"not json at all!"), ("short", b"\xff" * 4)):
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(content)
        with pytest.raises(EncoderError, match=rf"{name}\.safetensors: not a readable \.safetensors file"):
            load_state_dict(path, "local")


def test_an_npz_holding_object_arrays_is_one_line_naming_file_and_key(tmp_path):
    from crsbench.datasets.registry import get_dataset

    path = tmp_path / "objects.npz"
    images = np.zeros((12, 8, 8), np.uint8)
    np.savez(path, images=images, labels=np.array([[i % 2] for i in range(12)], dtype=object))
    dataset = get_dataset("npz", path=str(path), class_names=["a", "b"])
    with pytest.raises(DataError, match=r"objects\.npz: key 'labels' is unreadable .*object arrays are refused"):
        dataset.split("train")


def test_an_environment_oserror_is_one_line_and_a_bug_keeps_its_traceback():
    import errno

    import typer
    from typer.testing import CliRunner

    from crsbench.cli.errors import handled

    app = typer.Typer()

    @app.command()
    @handled
    def fault(kind: str) -> None:
        if kind == "full":
            raise OSError(errno.ENOSPC, "No space left on device", "/data/x.npy")
        raise OSError(errno.ECONNRESET, "Connection reset by peer")

    full = CliRunner().invoke(app, ["full"])
    assert full.exit_code == 2 and "/data/x.npy: No space left on device: the disk is full" in full.output
    bug = CliRunner().invoke(app, ["other"])
    assert bug.exit_code == 1 and isinstance(bug.exception, ConnectionResetError)


# --------------------------------------------------------------------------- 3. names as written


MARKUP_NAMES = {"raw-pixels": "lite0[/x]", "colour-texture": "lite0[old]"}


def test_names_that_look_like_markup_print_as_written_in_results_and_score(tmp_path):
    write_store(tmp_path / "out", names=MARKUP_NAMES)
    code, out, err = cli("results", tmp_path / "out")
    assert code == 0, err
    assert "lite0[/x]" in out and "lite0[old]" in out
    code, out, err = cli("score", tmp_path / "out", "--n-boot", "20", "--out", tmp_path / "s")
    assert code == 0, err
    assert "lite0[/x]" in out and "lite0[old]" in out


def test_errors_print_user_text_as_written(tmp_path):
    code, _, err = cli("results", tmp_path / ":x: [bold]y[/bold]")
    line = one_error_line(err)
    assert code == 2 and ":x: [bold]y[/bold]" in line and "❌" not in line


def test_progress_descriptions_are_not_markup():
    from io import StringIO

    from rich.console import Console

    from crsbench.core.progress import RichProgress

    buffer = StringIO()
    console = Console(file=buffer, width=200, force_terminal=False)
    progress = RichProgress(console, messages=console)
    with progress.task("embed lite0[/x] / x[/y]:train [:x:]", total=2, unit="img") as task:
        task.advance(2)
    progress.log("cache [/z] :x:")
    text = buffer.getvalue()
    assert "embed lite0[/x] / x[/y]:train [:x:]" in text and "cache [/z] :x:" in text


# --------------------------------------------------------------------------- 5. cache identity, orphans


def test_a_valid_cache_pair_copied_under_another_key_is_rejected(tmp_path):
    from crsbench.embed.cache import Embedding, EmbeddingCache, content_hash

    cache = EmbeddingCache(tmp_path / "cache")
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    described = {"encoder": "a", "encoder_fingerprint": "fa", "dataset": "d", "dataset_fingerprint": "g",
                 "split": "test", "condition": "clean"}
    cache.save("key-a", Embedding(matrix, content_hash(matrix), False), described)
    for suffix in (".npy", ".json"):
        shutil.copy(tmp_path / "cache" / f"key-a{suffix}", tmp_path / "cache" / f"key-b{suffix}")
    other = {**described, "condition": "gaussian_noise@3"}
    assert cache.load("key-a", described) is not None
    assert cache.load("key-b", other) is None and cache.rejected == ["key-b"]


_WRITER = """
import sys, time
from pathlib import Path
from crsbench.core.atomic import atomic_write as _atomic_write
def write(f):
    f.write(b"half a matrix")
    f.flush()
    print("writing", flush=True)
    time.sleep(600)
_atomic_write(Path(sys.argv[1]), write)
"""


def test_orphan_tmp_files_of_a_killed_writer_are_removed_and_a_live_writers_kept(tmp_path):
    from crsbench.embed.cache import EmbeddingCache

    root = tmp_path / "cache"
    root.mkdir()
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(root / f"{n}.npy")], stdout=subprocess.PIPE,
                                text=True) for n in ("killed", "live")]
    try:
        for writer in writers:
            assert writer.stdout.readline().strip() == "writing"
        killed, live = writers
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert len(list(root.glob("*.tmp"))) == 2
        cache = EmbeddingCache(root)
        left = [p.name for p in root.glob("*.tmp")]
        assert cache.orphans_removed == 1 and len(left) == 1 and left[0].startswith("live.npy.")
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()


# --------------------------------------------------------------------------- 6. one run per output


_HOLDER = """
import sys, time
from crsbench.run.output_lock import OutputLock
with OutputLock(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(600)
"""


def _hold(folder: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    return holder


def test_a_second_run_on_a_held_output_exits_naming_the_holder(tmp_path):
    import platform

    write_store(tmp_path / "out")
    suite = dict(GRID_SUITE, output=str(tmp_path / "out"), cache=str(tmp_path / "cache"))
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    holder = _hold(tmp_path / "out")
    try:
        code, _, err = cli("run", tmp_path / "suite.yaml", "--wait", "0.5")
        line = one_error_line(err)
        assert code == 2 and f"pid {holder.pid} on host {platform.node()}" in line and "after waiting 0.5 s" in line
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path):
    from crsbench.run.output_lock import OutputBusy, OutputLock

    holder = _hold(tmp_path / "out")
    with pytest.raises(OutputBusy):
        with OutputLock(tmp_path / "out"):
            pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with OutputLock(tmp_path / "out") as lock:
        assert lock.took_over["pid"] == holder.pid
        assert json.loads((tmp_path / "out" / ".crsbench.lock").read_text())["pid"] == os.getpid()
    assert (tmp_path / "out" / ".crsbench.lock").read_text() == ""  # released cleanly


# --------------------------------------------------------------------------- a real run: 1, 3, 5, 7


_STARTED_THEN_KILLED = """
import sys, time
from crsbench.results.store import ResultsStore
store = ResultsStore(sys.argv[1])
store.start_run({"run_id": "killed-run", "started_at": "2024-01-01T00:00:00+00:00", "host": "h"})
print("started", flush=True)
time.sleep(600)
"""


def _npz_suite(tmp_path: Path, output: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 90
    labels = np.arange(n) % 2
    images = (rng.integers(0, 60, (n, 16, 16, 3)) + labels[:, None, None, None] * 100).astype(np.uint8)
    split = np.array(["train", "val", "test"] * (n // 3))  # equal sizes: a cache pair fits another split
    np.savez(tmp_path / "data.npz", images=images, labels=labels, split=split)
    suite = {
        "name": "names", "output": str(output), "cache": str(tmp_path / "cache"), "encoders": ["raw-pixels"],
        "tasks": [{"name": "t", "dataset": {"kind": "npz", "path": str(tmp_path / "data.npz"), "name": "x[/y]",
                                             "class_names": ["a:x:", "b[/z]"], "split_key": "split"}}],
        "seeds": [0, 1], "fractions": [1.0], "probe": {"c_grid": [0.1]}, "perturbations": {"select": "none"},
    }
    path = tmp_path / f"{output.name}.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


@pytest.mark.slow
def test_a_run_marks_killed_runs_records_numerics_shows_names_and_rejects_a_swapped_cache_entry(tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    killed = subprocess.Popen([sys.executable, "-c", _STARTED_THEN_KILLED, str(output / "results.sqlite")],
                              stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().strip() == "started"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()

    code, out, err = cli("run", _npz_suite(tmp_path, output))
    assert code == 0, err
    assert "embed raw-pixels / x[/y]:train" in err  # the progress bar shows the dataset's name as written
    assert "marked as aborted (never finished): run killed-run" in out
    from crsbench.results.store import load_runs

    runs = load_runs(output).set_index("run_id")
    assert runs.at["killed-run", "status"] == "aborted"
    finished = runs[runs["status"] == "finished"].iloc[0]
    numerics = json.loads(finished["numerics"])
    assert numerics["encoders"]["raw-pixels"] == {"device": "cpu", "precision": "fp32"}
    if "torch" in sys.modules:
        assert numerics["torch_threads"] >= 1

    # a valid cache pair copied over another key of the same shape is rejected and recomputed
    cache = tmp_path / "cache"
    metas = {p: json.loads(p.read_text()) for p in cache.glob("*.json")}
    train = next(p for p, m in metas.items() if m["split"] == "train")
    test = next(p for p, m in metas.items() if m["split"] == "test")
    shutil.copy(train.with_suffix(".npy"), test.with_suffix(".npy"))
    shutil.copy(train, test)
    code, out, err = cli("run", _npz_suite(tmp_path, tmp_path / "again"))
    assert code == 0, err
    assert f"1 embedding cache entries rejected (damaged or made for another request) and recomputed: {test.stem}" in out
    first = api.records(output).set_index("record_key")
    second = api.records(tmp_path / "again").set_index("record_key")
    assert first["auroc"].to_dict() == second["auroc"].to_dict()
    assert first["ece"].to_dict() == second["ece"].to_dict()
