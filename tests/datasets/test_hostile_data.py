"""Hostile data: crafted arrays, images, label tables and links, each generated here.

Every refusal is one DataError line naming the file and the member, row, column or field, raised quickly
and before anything large is allocated or anything is written; through the CLI (`crsbench select`,
`crsbench validate --data`, `crsbench datasets check`, `crsbench perturbations --preview`) it is exit 2
with one line and no traceback.
"""

from __future__ import annotations

import builtins
import io
import os
import re
import struct
import time
import tracemalloc
import unicodedata
import warnings
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from crsbench.run.class_support import check_distinct_names
from crsbench.cli.main import app
from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.medmnist import MedMNISTDataset
from crsbench.datasets.npz import NpzDataset
from crsbench.errors import DataError
from crsbench.selection.source import open_cohort

PROGRESS_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")

from _release_layouts import make_aptos, make_isic

FAST_S = 30.0  # a hang guard (a bomb unpacked would take hours), not a speed claim; memory is the bound tested
HUGE = (1_500_000, 1024, 1024)  # uint8: 1.43 TiB


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))  # split files of published sets land here
    monkeypatch.delenv("CRSBENCH_DATA", raising=False)


# ----------------------------------------------------------------------------- helpers


def cli(*args) -> tuple[int, str]:
    """`crsbench ARGS` in process: the exit code and its one error line (asserted: one line, no traceback)."""
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a crash, not a refusal
    # timestamped progress lines are the log of the steps that ran before the refusal, not part of it
    lines = [line for line in result.stderr.splitlines() if line.strip() and not PROGRESS_LINE.match(line)]
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        return 0, ""
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return result.exit_code, lines[0]


def select(data: Path, out: Path, *extra) -> tuple[int, str]:
    code, line = cli("select", data, "--encoders", "raw-pixels", "-o", out, "--dry-run", *extra)
    assert not out.exists(), "a refused selection wrote its output folder"
    return code, line


def refused(call, pattern: str) -> str:
    """The one-line message `call()` is refused with, matching `pattern`."""
    with pytest.raises(DataError, match=pattern) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message
    return message


@contextmanager
def quickly(limit_s: float = FAST_S, peak_bytes: int | None = 64 * 2**20):
    """The block runs within `limit_s` and allocates at most `peak_bytes` (numpy reports to tracemalloc; None:
    not traced, for CLI calls, whose first imports tracing would slow)."""
    if peak_bytes is not None:
        tracemalloc.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] if peak_bytes is not None else 0
        tracemalloc.stop()
    assert elapsed < limit_s, f"took {elapsed:.2f} s"
    assert peak_bytes is None or peak < peak_bytes, f"allocated {peak:,} bytes"


@pytest.fixture(scope="module", autouse=True)
def warm_cli(tmp_path_factory):
    """One refused `select` first, so the timed calls measure the refusal, not the CLI's first imports."""
    cli("select", tmp_path_factory.mktemp("warm") / "none", "--encoders", "raw-pixels", "--dry-run")


def png(path: Path, value: int = 0, size: int = 8) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((size, size, 3), value, np.uint8)).save(path)
    return path


def cohort(tmp_path: Path, labels: list[str], header: str = "image,label", extra: str = "") -> Path:
    """A cohort folder: labels.csv (header + one row per label) and a PNG per row under images/."""
    folder = tmp_path / "cohort"
    rows = [header]
    for i, label in enumerate(labels):
        png(folder / "images" / f"i{i:02d}.png", value=i * 7)
        rows.append(f"i{i:02d}.png,{label}{extra}")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def balanced(n: int = 24) -> list[str]:
    return ["a" if i % 2 else "b" for i in range(n)]


def folder_dataset(folder: Path, **options) -> FolderDataset:
    return FolderDataset(folder / "images", folder / "labels.csv", **options)


def bomb_png(path: Path, side: int = 20_000) -> Path:
    """A PNG whose header declares side x side pixels (400 M by default) over a few bytes of data."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    idat = zlib.compress(b"\0" * (1 + side // 8))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


def truncated_jpeg(path: Path) -> Path:
    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buffer, "JPEG")
    path.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    return path


# ----------------------------------------------------------------------------- arrays


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)  # the file is hostile: it may hold pickles
    return buffer.getvalue()


def npy_header(shape, descr: str = "|u1") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_2_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def write_zip(path: Path, members, compression=zipfile.ZIP_STORED, claim=None) -> Path:
    """An archive of raw members (a dict, or (name, bytes) pairs, which may repeat a name); `claim` sets what
    the zip directory states for `images.npy`: `(file_size, compress_size)`, None for either keeps the truth."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pairs = members.items() if isinstance(members, dict) else members
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": wanted here
        with zipfile.ZipFile(path, "w", compression) as archive:
            for name, data in pairs:
                archive.writestr(name, data)
            if claim is not None:
                info = archive.getinfo("images.npy")
                info.file_size = claim[0] if claim[0] is not None else info.file_size
                info.compress_size = claim[1] if claim[1] is not None else info.compress_size
    return path


def good_members(n: int = 12) -> dict[str, bytes]:
    return {"images.npy": npy_bytes(np.zeros((n, 8, 8), np.uint8)), "labels.npy": npy_bytes(np.arange(n) % 2)}


def huge_npz(path: Path, how: str) -> Path:
    head = npy_header(HUGE)
    declared = len(head) + int(np.prod(HUGE))
    members = {**good_members(), "images.npy": head + b"\0" * 64}
    if how == "header":  # only the .npy header lies
        return write_zip(path, members)
    if how == "directory":  # the zip directory agrees with the header, and claims more than the file holds
        return write_zip(path, members, claim=(declared, declared))
    return write_zip(path, members, zipfile.ZIP_DEFLATED, claim=(declared, None))  # "compressed": the bound


HUGE_MESSAGES = {
    "header": r"huge\.npz: key 'images' declares uint8 \[1500000, 1024, 1024\] \(1,572,864,000,000 bytes\) "
              r"but holds 64 bytes of data; the file is damaged or crafted",
    "directory": r"huge\.npz: key 'images' claims 1,572,864,000,\d+ stored bytes, more than the whole file",
    "bound": r"huge\.npz: key 'images' is 1464\.8 GiB \(uint8 \[1500000, 1024, 1024\]\), more than the 16 GiB",
}


@pytest.mark.parametrize("how", list(HUGE_MESSAGES))
def test_an_npz_declaring_a_huge_array_is_refused_at_once_without_allocating_it(tmp_path, how):
    path = huge_npz(tmp_path / "huge.npz", how)
    dataset = NpzDataset(path=path, class_names=["a", "b"])
    with quickly():
        refused(lambda: dataset.split("test"), HUGE_MESSAGES[how])
    with quickly(peak_bytes=None):
        code, line = select(path, tmp_path / "out")
    assert code == 2 and str(path) in line and "key 'images'" in line


def test_a_medmnist_file_declaring_a_huge_array_is_refused_when_built(tmp_path):
    members = {}
    for split, n in (("train", 6), ("val", 3), ("test", 4)):
        members[f"{split}_images.npy"] = npy_bytes(np.zeros((n, 28, 28, 3), np.uint8))
        members[f"{split}_labels.npy"] = npy_bytes(np.zeros((n, 1), np.uint8))
    members["train_images.npy"] = npy_header((1_500_000, 28, 28, 3)) + b"\0" * 64
    path = write_zip(tmp_path / "retinamnist.npz", members)
    with quickly():
        refused(lambda: MedMNISTDataset("retinamnist", path=path, verify_md5=False),
                r"retinamnist\.npz: key 'train_images' declares uint8 \[1500000, 28, 28, 3\]")
    with quickly(peak_bytes=None):
        code, line = select(path, tmp_path / "out")
    assert code == 2 and "key 'train_images' declares" in line


def with_images(array: np.ndarray) -> dict[str, bytes]:
    return {**good_members(), "images.npy": npy_bytes(array)}


def with_labels(array: np.ndarray) -> dict[str, bytes]:
    return {**good_members(), "labels.npy": npy_bytes(array)}


def labels_holding(row: int, value: float) -> np.ndarray:
    labels = (np.arange(12) % 2).astype(float)
    labels[row] = value
    return labels


BAD_NPZ = {
    "object labels": (with_labels(np.array([[i % 2] for i in range(12)], dtype=object)),
                      r"key 'labels' is unreadable \(dtype object\).*object arrays are refused"),
    "float images": (with_images(np.zeros((12, 8, 8), np.float32)),
                     r"key 'images' must be uint8 \[n, H, W\] or \[n, H, W, 1\|3\], got float32 \[12, 8, 8\]"),
    "two channels": (with_images(np.zeros((12, 8, 8, 2), np.uint8)),
                     r"key 'images' must be uint8 \[n, H, W\] or \[n, H, W, 1\|3\], got uint8 \[12, 8, 8, 2\]"),
    "volumes": (with_images(np.zeros((12, 4, 8, 8, 1), np.uint8)),
                r"key 'images' must be uint8 .*got uint8 \[12, 4, 8, 8, 1\]"),
    "zero-size images": (with_images(np.zeros((12, 0, 8), np.uint8)),
                         r"key 'images' holds zero-size images \(uint8 \[12, 0, 8\]\)"),
    "no images": ({"images.npy": npy_bytes(np.zeros((0, 8, 8), np.uint8)), "labels.npy": npy_bytes(np.zeros(0))},
                  r"key 'images' holds no images"),
    "fewer labels": (with_labels(np.arange(11) % 2),
                     r"key 'labels' must hold 12 labels \(\[12\] or \[12, k\]\), got int64 \[11\]"),
    "NaN label": (with_labels(labels_holding(3, np.nan)), r"key 'labels' row 3 holds nan \(a missing label"),
    "infinite label": (with_labels(labels_holding(5, np.inf)), r"key 'labels' row 5 holds inf \(not a finite number\)"),
    "raw member": ({"images.npy": good_members()["images.npy"], "labels": b"\0" * 4096},
                   r"key 'labels' is not a \.npy array"),
    "member twice": ([*good_members().items(), ("labels.npy", npy_bytes(np.arange(12) % 2))],
                     r"member 'labels\.npy' appears more than once"),
}


@pytest.mark.parametrize("case", list(BAD_NPZ))
def test_a_hostile_npz_is_one_line_naming_file_and_key(tmp_path, case):
    members, pattern = BAD_NPZ[case]
    path = write_zip(tmp_path / "cohort.npz", members)
    dataset = NpzDataset(path=path, class_names=["a", "b"])
    message = refused(lambda: dataset.split("test"), pattern)
    assert message.startswith(f"{path}: ")
    code, line = select(path, tmp_path / "out")
    assert code == 2 and str(path) in line


def test_a_file_that_is_not_a_zip_is_named(tmp_path):
    path = tmp_path / "cohort.npz"
    np.save(path.with_suffix(".npy"), np.zeros((12, 8, 8), np.uint8))
    path.with_suffix(".npy").rename(path)  # a .npy under an .npz name: np.load would hand back an array
    refused(lambda: NpzDataset(path=path, class_names=["a", "b"]).split("test"),
            r"cohort\.npz: not a readable \.npz file")
    assert select(path, tmp_path / "out")[0] == 2


def test_multi_label_nan_stays_a_mask_and_alike_declared_classes_are_refused(tmp_path):
    labels = np.array([[i % 2, (i // 2) % 2] for i in range(12)], dtype=float)
    labels[4, 1] = np.nan
    path = write_zip(tmp_path / "multi.npz", {**good_members(), "labels.npy": npy_bytes(labels)})
    split = NpzDataset(path=path, class_names=["x", "y"], task_type="multi_label").split("test")
    assert np.isnan(split.labels[4, 1]) and np.nansum(split.labels) == np.nansum(labels)
    refused(lambda: NpzDataset(path=path, class_names=["Nevus", "nevus"]),
            r"multi\.npz: class_names: class names 'Nevus' and 'nevus' differ only by case")


# ----------------------------------------------------------------------------- images


def test_a_decompression_bomb_in_a_cohort_names_its_csv_line_and_file(tmp_path):
    folder = cohort(tmp_path, balanced())
    bomb_png(folder / "images" / "i05.png")
    with quickly(peak_bytes=None):
        code, line = select(folder, tmp_path / "out")
    assert code == 2
    assert f"labels.csv line 7: {folder / 'images' / 'i05.png'}: refused as a possible decompression bomb" in line


def test_a_truncated_jpeg_fails_the_readability_check_naming_it(tmp_path):
    folder = cohort(tmp_path, balanced())
    text = (folder / "labels.csv").read_text().replace("i03.png", "i03.jpg")
    (folder / "labels.csv").write_text(text)
    truncated_jpeg(folder / "images" / "i03.jpg")
    code, line = select(folder, tmp_path / "out")
    assert code == 2 and "labels.csv line 5: image " in line and "i03.jpg cannot be read" in line
    assert "truncated" in line


def test_an_image_read_later_names_its_csv_line_too(tmp_path):
    folder = cohort(tmp_path, balanced(12))
    for i in range(12):
        bomb_png(folder / "images" / f"i{i:02d}.png")
    split = folder_dataset(folder).split("test")
    with quickly():
        refused(lambda: split.images[0], r"labels\.csv line \d+: .*\.png: refused as a possible decompression bomb")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: t\nencoders: [raw-pixels]\ntasks:\n  - name: own\n    dataset: {{kind: folder, "
                     f"root: {folder / 'images'}, csv: {folder / 'labels.csv'}}}\n")
    code, line = cli("validate", suite, "--data")
    assert code == 2 and re.search(r"tasks\.0\.dataset: .*labels\.csv line \d+: .*decompression bomb", line), line


def test_a_bomb_in_a_published_release_names_its_csv_line(tmp_path):
    root = make_aptos(tmp_path / "aptos")
    first = (root / "train.csv").read_text().splitlines()[1].split(",")[0]
    bomb_png(root / "train_images" / f"{first}.png")
    code, line = cli("datasets", "check", root, "--dataset", "aptos2019", "--decode")
    assert code == 2 and "train.csv line 2: " in line and "refused as a possible decompression bomb" in line


def test_a_bomb_given_to_the_preview_writes_no_sheet(tmp_path):
    bomb = bomb_png(tmp_path / "bomb.png")
    with quickly(peak_bytes=None):
        code, line = cli("perturbations", "--preview", bomb, "--output", tmp_path / "sheet.png")
    assert code == 2 and str(bomb) in line and not (tmp_path / "sheet.png").exists()


# ----------------------------------------------------------------------------- label tables


@pytest.mark.parametrize("header, name, columns", [
    ("image,label,label", "label", "2, 3"),
    ("image,label,image", "image", "1, 3"),
    ("image,label, label ", "label", "2, 3"),
])
def test_a_column_named_twice_is_refused_naming_it(tmp_path, header, name, columns):
    folder = cohort(tmp_path, balanced(), header=header, extra=",x")
    pattern = rf"labels\.csv: column '{name}' appears 2 times in the header \(columns {columns}\)"
    refused(lambda: folder_dataset(folder), pattern)
    code, line = select(folder, tmp_path / "out")
    assert code == 2 and re.search(pattern, line), line


def test_blank_trailing_columns_are_no_duplicates(tmp_path):
    folder = cohort(tmp_path, balanced(), header="image,label,,", extra=",,")
    assert folder_dataset(folder).class_names == ("a", "b")


def test_a_published_table_naming_a_column_twice_is_refused_before_splits_are_written(tmp_path):
    root = make_isic(tmp_path / "isic")
    truth = root / "ISIC_2019_Training_GroundTruth.csv"
    lines = truth.read_text().splitlines()
    truth.write_text("\n".join(line + "," + line.split(",")[1] for line in lines) + "\n")  # MEL again, at the end
    code, line = cli("datasets", "check", root, "--dataset", "isic2019")
    assert code == 2 and "GroundTruth.csv: column 'MEL' appears 2 times in the header" in line
    assert not (root / ".crsbench-splits").exists() and not (tmp_path / "xdg-cache").exists()


ALIKE = {
    "case": ("Nevus", "differ only by case"),
    "zero-width space": ("ne\u200bvus", r"differ only by invisible characters \(U\+200B ZERO WIDTH SPACE\)"),
    "Cyrillic e": ("n\u0435vus", r"differ only by look-alike letters \(U\+0435 CYRILLIC SMALL LETTER IE\)"),
    "soft hyphen and case": ("NE\u00advus", r"differ only by case and invisible characters \(U\+00AD SOFT HYPHEN\)"),
}


@pytest.mark.parametrize("case", list(ALIKE))
def test_class_names_that_read_alike_are_refused_naming_both_and_their_lines(tmp_path, case):
    spelling, how = ALIKE[case]
    labels = ["nevus" if i % 2 else "melanoma" for i in range(24)]
    labels[9] = spelling  # line 11; 'nevus' first on line 3
    folder = cohort(tmp_path, labels)
    pattern = (rf"labels\.csv: class names 'nevus' \(line 3\) and {re.escape(repr(spelling))} \(line 11\) in column "
               rf"'label' {how}")
    refused(lambda: folder_dataset(folder), pattern)
    code, line = select(folder, tmp_path / "out")
    assert code == 2 and re.search(pattern, line), line


def test_class_names_are_compared_in_nfc_without_surrounding_spaces(tmp_path):
    composed, decomposed = "m\u00e9lanome", unicodedata.normalize("NFD", "m\u00e9lanome")
    labels = [[composed, decomposed, f" {composed} "][i % 3] if i % 2 else "nevus" for i in range(24)]
    dataset = folder_dataset(cohort(tmp_path, labels))
    assert dataset.class_names == (composed, "nevus")
    assert int((dataset.labels == 0).sum()) == 12


def test_any_dataset_whose_class_names_read_alike_is_refused_before_the_run():
    split = SimpleNamespace(ids=np.array(["r0", "r1", "r2"]), labels=np.array([0, 1, 1]))
    dataset = SimpleNamespace(meta=SimpleNamespace(name="d", task_type="single_label", class_names=("AK", "ak")),
                              split=lambda name: split)
    refused(lambda: check_distinct_names("t", dataset),
            r"task 't' \(d\): class names 'AK' and 'ak' differ only by case; rows: r0, r0, r0 and r1, r2")


@pytest.mark.parametrize("missing", ["", "nan", "NA", "N/A", " NaN "])
def test_a_missing_single_label_names_its_row_not_a_class(tmp_path, missing):
    labels = balanced()
    labels[2] = missing  # line 4
    folder = cohort(tmp_path, labels)
    refused(lambda: folder_dataset(folder), rf"labels\.csv line 4: missing label {re.escape(repr(missing.strip()))}")
    code, line = select(folder, tmp_path / "out")
    assert code == 2 and "labels.csv line 4: " in line and "a missing label" in line


def test_a_missing_ordinal_grade_names_its_row(tmp_path):
    labels = [str(i % 3) for i in range(24)]
    labels[5] = "NA"  # line 7
    folder = cohort(tmp_path, labels)
    refused(lambda: folder_dataset(folder, task_type="ordinal"), r"labels\.csv line 7: missing label 'NA'")
    code, line = select(folder, tmp_path / "out", "--ordinal")
    assert code == 2 and "labels.csv line 7: 'NA' in column 'label' (a missing label" in line


def test_a_declared_class_may_be_called_na_and_multi_label_blanks_stay_masks(tmp_path):
    labels = ["NA" if i % 2 else "b" for i in range(24)]
    assert folder_dataset(cohort(tmp_path / "declared", labels), class_names=["NA", "b"]).class_names == ("NA", "b")
    folder = cohort(tmp_path / "multi", ["1,0" if i % 2 else "0," for i in range(24)], header="image,x,y")
    dataset = folder_dataset(folder, label_columns=["x", "y"], task_type="multi_label")
    assert np.isnan(dataset.labels[0, 1]) and not np.isnan(dataset.labels[1]).any()


# ----------------------------------------------------------------------------- links


@contextmanager
def touches_under(folder: Path):
    """Every stat, listing or open of a path strictly under `folder` while the block runs."""
    touched: list[tuple[str, str]] = []
    prefix = os.path.realpath(folder) + os.sep
    originals = {name: getattr(os, name) for name in ("stat", "lstat", "scandir", "listdir", "open")}

    def spy(name, original):
        def call(path=".", *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).startswith(prefix):
                touched.append((name, os.fsdecode(path)))
            return original(path, *args, **kwargs)
        return call

    with pytest.MonkeyPatch.context() as patch:
        for name, original in originals.items():
            patch.setattr(os, name, spy(name, original))
        patch.setattr(builtins, "open", spy("open", builtins.open))
        yield touched


def outside_folder(tmp_path: Path) -> Path:
    """A folder outside every cohort, holding what a hostile link would want read."""
    outside = tmp_path / "outside"
    for i in range(24):
        png(outside / f"i{i:02d}.png")
    (outside / "secret.csv").write_text("image,label\nsecret.png,x\n")
    return outside


def test_a_cohort_whose_images_folder_links_outside_is_refused_before_anything_in_it_is_touched(tmp_path):
    outside = outside_folder(tmp_path)
    folder = cohort(tmp_path, balanced())
    for image in (folder / "images").iterdir():
        image.unlink()
    (folder / "images").rmdir()
    os.symlink(outside, folder / "images")
    with touches_under(outside) as touched:
        refused(lambda: open_cohort(folder),
                rf"cohort/images: a symbolic link to {re.escape(str(outside))}, outside the cohort folder")
    assert touched == []
    code, line = select(folder, tmp_path / "out")
    assert code == 2 and "a symbolic link to" in line


def test_a_labels_csv_linked_from_outside_is_refused_before_it_is_read(tmp_path):
    outside = outside_folder(tmp_path)
    folder = cohort(tmp_path, balanced())
    (folder / "labels.csv").unlink()
    os.symlink(outside / "secret.csv", folder / "labels.csv")
    with touches_under(outside) as touched:
        refused(lambda: open_cohort(folder), r"labels\.csv: a symbolic link to .*secret\.csv, outside the cohort")
    assert [name for name, _ in touched if name == "open"] == []


def test_a_linked_sub_folder_is_refused_before_any_file_under_it_is_stat_ed(tmp_path):
    outside = outside_folder(tmp_path)
    folder = cohort(tmp_path, balanced())
    os.symlink(outside, folder / "images" / "sub")
    csv = folder / "labels.csv"
    csv.write_text(csv.read_text().replace("i04.png", "sub/i04.png"))  # line 6
    with touches_under(outside) as touched:
        refused(lambda: folder_dataset(folder),
                rf"labels\.csv line 6: image path 'sub/i04\.png' leads through a symbolic link to "
                rf"{re.escape(str(outside))}, outside the dataset folder")
    assert touched == []
