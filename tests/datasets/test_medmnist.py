import dataclasses
import hashlib
import io
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from crsbench.datasets import medmnist
from crsbench.datasets.base import Dataset, images_batch
from crsbench.datasets.medmnist import (
    MEDMNIST_DATASETS,
    MedMNISTDataset,
    check_md5,
    download_file,
    download_medmnist,
    file_md5,
    find_medmnist_file,
)
from crsbench.errors import DataError

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SIZES = {"train": 6, "val": 3, "test": 4}


@pytest.fixture(autouse=True)
def isolated_locations(tmp_path, monkeypatch):
    """No test may see the user's cache or data folder, or reach the network."""
    monkeypatch.delenv("CRSBENCH_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))

    def no_network(*args, **kwargs):
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)


def fake_arrays(rgb=True, n_labels=1, n_classes=5, size=28, seed=0, **overrides):
    rng = np.random.default_rng(seed)
    arrays = {}
    for split, n in SIZES.items():
        shape = (n, size, size, 3) if rgb else (n, size, size)
        arrays[f"{split}_images"] = rng.integers(0, 256, shape, dtype=np.uint8)
        high = 2 if n_labels > 1 else n_classes
        arrays[f"{split}_labels"] = rng.integers(0, high, (n, n_labels)).astype(np.uint8)
    arrays.update(overrides)
    return arrays


def write_npz(path: Path, arrays: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return path


@pytest.fixture
def fake_retina(tmp_path):
    return write_npz(tmp_path / "retinamnist.npz", fake_arrays(rgb=True, n_classes=5))


def trust(monkeypatch, name, path, size=28):
    """Make the table's md5 for `name` that of a fake file, as if it were the official one."""
    info = MEDMNIST_DATASETS[name]
    md5 = {**info.md5, size: file_md5(path)}
    monkeypatch.setitem(MEDMNIST_DATASETS, name, dataclasses.replace(info, md5=md5))


class FakeResponse(io.BytesIO):
    """What urlopen returns: a readable, closable context manager."""


def serve(monkeypatch, payload: bytes, seen_urls: list):
    def fake_urlopen(url, timeout=None):
        seen_urls.append(url)
        return FakeResponse(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)


# ----- the table


def test_table_has_the_official_entries():
    retina = MEDMNIST_DATASETS["retinamnist"]
    assert retina.md5[28] == "bd4c0672f1bba3e3a89f0e4e876791e4"
    assert retina.task_type == "ordinal" and retina.modality == "fundus" and len(retina.class_names) == 5
    assert retina.url() == "https://zenodo.org/records/10519652/files/retinamnist.npz?download=1"
    assert retina.file_name(128) == "retinamnist_128.npz"
    assert MEDMNIST_DATASETS["pneumoniamnist"].class_names == ("normal", "pneumonia")
    assert MEDMNIST_DATASETS["chestmnist"].task_type == "multi_label"
    assert len(MEDMNIST_DATASETS["chestmnist"].class_names) == 14
    assert MEDMNIST_DATASETS["dermamnist"].modality == "dermoscopy"
    for info in MEDMNIST_DATASETS.values():
        assert info.task_type in ("single_label", "multi_label", "ordinal")
        assert info.modality in ("fundus", "chest_xray", "dermoscopy", "generic")
        assert all(m is None or len(m) == 32 for m in info.md5.values())


def test_unknown_name_and_size_are_data_errors(fake_retina):
    with pytest.raises(DataError, match="unknown MedMNIST dataset 'nosuchmnist'.*retinamnist"):
        MedMNISTDataset("nosuchmnist", path=fake_retina)
    with pytest.raises(DataError, match="size must be one of"):
        MedMNISTDataset("retinamnist", path=fake_retina, size=32)


# ----- loading fake files


def test_loads_rgb_ordinal_file(fake_retina, monkeypatch):
    trust(monkeypatch, "retinamnist", fake_retina)
    dataset = MedMNISTDataset("retinamnist", path=fake_retina)
    assert isinstance(dataset, Dataset)
    assert dataset.meta.task_type == "ordinal" and dataset.meta.n_classes == 5
    train = dataset.split("train")
    assert len(train) == 6 and train.ids[0] == "retinamnist-train-00000"
    assert np.array_equal(train.groups, train.ids)
    assert train.labels.dtype == np.int64 and train.labels.shape == (6,)
    batch = images_batch(train.images, [0, 2])
    assert batch.shape == (2, 28, 28, 3) and batch.dtype == np.uint8
    expected = np.load(fake_retina)["train_images"][[0, 2]]
    assert np.array_equal(batch, expected)
    assert [len(dataset.split(s)) for s in ("train", "val", "test")] == [6, 3, 4]
    assert dataset.fingerprint() == hashlib.md5(fake_retina.read_bytes()).hexdigest()


def test_loads_grey_binary_file_and_replicates_channels(tmp_path):
    path = write_npz(tmp_path / "pneumoniamnist.npz", fake_arrays(rgb=False, n_classes=2))
    dataset = MedMNISTDataset("pneumoniamnist", path=path, verify_md5=False)
    assert dataset.meta.task_type == "single_label" and dataset.meta.modality == "chest_xray"
    image = dataset.split("val").images[1]
    assert image.shape == (28, 28, 3)
    assert np.array_equal(image[..., 0], image[..., 2])


def test_loads_multi_label_file_as_float(tmp_path):
    path = write_npz(tmp_path / "chestmnist.npz", fake_arrays(rgb=False, n_labels=14))
    dataset = MedMNISTDataset("chestmnist", path=path, verify_md5=False)
    labels = dataset.split("test").labels
    assert labels.dtype == np.float32 and labels.shape == (4, 14)
    assert set(np.unique(labels)) <= {0.0, 1.0}


def test_size_variant_uses_its_own_file_name(tmp_path):
    folder = tmp_path / "data"
    write_npz(folder / "dermamnist_64.npz", fake_arrays(n_classes=7, size=64))
    dataset = MedMNISTDataset("dermamnist", path=folder, size=64, verify_md5=False)
    assert dataset.path.name == "dermamnist_64.npz"
    assert dataset.meta.name == "dermamnist_64"
    assert dataset.split("train").images[0].shape == (64, 64, 3)


def test_unknown_split_name(fake_retina):
    dataset = MedMNISTDataset("retinamnist", path=fake_retina, verify_md5=False)
    with pytest.raises(DataError, match="unknown split 'validation'"):
        dataset.split("validation")


@pytest.mark.parametrize(
    "overrides, pattern",
    [
        ({"val_labels": None}, "missing key 'val_labels'"),
        ({"train_images": np.zeros((6, 28, 28, 3), dtype=np.float32)}, "'train_images' must be uint8"),
        ({"train_images": np.zeros((6, 32, 32, 3), dtype=np.uint8)}, "'train_images' must have shape"),
        ({"train_labels": np.zeros((6, 1), dtype=np.float64)}, "'train_labels' must hold integers"),
        ({"train_labels": np.zeros((5, 1), dtype=np.uint8)}, "'train_labels' has 5 labels for 6 images"),
        ({"train_labels": np.full((6, 1), 5, dtype=np.uint8)}, "'train_labels' row 0 has label 5, outside 0..4"),
        ({"train_labels": np.zeros((6, 2), dtype=np.uint8)}, "'train_labels' must have shape"),
    ],
)
def test_malformed_file_names_the_file_and_key(tmp_path, overrides, pattern):
    arrays = fake_arrays()
    for key, value in overrides.items():
        if value is None:
            del arrays[key]
        else:
            arrays[key] = value
    path = write_npz(tmp_path / "retinamnist.npz", arrays)
    with pytest.raises(DataError, match=pattern) as caught:
        MedMNISTDataset("retinamnist", path=path, verify_md5=False).split("train")
    assert str(path) in str(caught.value)


def test_multi_label_values_must_be_binary(tmp_path):
    labels = np.full((6, 14), 2, dtype=np.uint8)
    path = write_npz(tmp_path / "chestmnist.npz", fake_arrays(rgb=False, n_labels=14, train_labels=labels))
    with pytest.raises(DataError, match="'train_labels' row 0 has values other than 0/1"):
        MedMNISTDataset("chestmnist", path=path, verify_md5=False).split("train")


def test_not_an_npz_file(tmp_path):
    path = tmp_path / "retinamnist.npz"
    path.write_bytes(b"this is not a zip archive")
    with pytest.raises(DataError, match="not a readable .npz"):
        MedMNISTDataset("retinamnist", path=path, verify_md5=False)


# ----- md5 of local files


def test_local_file_with_the_official_md5_is_accepted(fake_retina, monkeypatch):
    trust(monkeypatch, "retinamnist", fake_retina)
    assert MedMNISTDataset("retinamnist", path=fake_retina).fingerprint() == file_md5(fake_retina)


def test_local_file_with_another_md5_is_rejected_naming_both_hashes(fake_retina):
    actual = file_md5(fake_retina)
    with pytest.raises(DataError) as caught:
        MedMNISTDataset("retinamnist", path=fake_retina)
    message = str(caught.value)
    assert str(fake_retina) in message and actual in message and "bd4c0672f1bba3e3a89f0e4e876791e4" in message
    # the way out is said for the suite file a command-line user writes, not only for Python
    assert "`verify_md5: false` in the task's dataset block of the suite file" in message
    # An explicit opt-out loads a re-packed copy anyway.
    assert MedMNISTDataset("retinamnist", path=fake_retina, verify_md5=False).fingerprint() == actual


def test_check_md5_skips_unconfirmed_hashes(fake_retina):
    check_md5(fake_retina, "0" * 32, None)
    with pytest.raises(DataError, match="does not match"):
        check_md5(fake_retina, "0" * 32, "1" * 32)


# ----- where the file is looked for


def test_data_folder_from_environment(tmp_path, monkeypatch):
    data = tmp_path / "data"
    path = write_npz(data / "medmnist" / "retinamnist.npz", fake_arrays())
    monkeypatch.setenv("CRSBENCH_DATA", str(data))
    assert find_medmnist_file("retinamnist") == path


def test_cache_folder_from_xdg(tmp_path):
    path = write_npz(tmp_path / "xdg-cache" / "crsbench" / "medmnist" / "retinamnist.npz", fake_arrays())
    assert find_medmnist_file("retinamnist") == path


def test_explicit_path_wins_over_the_environment(tmp_path, monkeypatch, fake_retina):
    write_npz(tmp_path / "env" / "retinamnist.npz", fake_arrays(seed=1))
    monkeypatch.setenv("CRSBENCH_DATA", str(tmp_path / "env"))
    assert find_medmnist_file("retinamnist", path=fake_retina) == fake_retina


def test_missing_explicit_path(tmp_path):
    with pytest.raises(DataError, match="MedMNIST file not found: .*nowhere.npz"):
        find_medmnist_file("retinamnist", path=tmp_path / "nowhere.npz")


def test_missing_file_without_download_says_where_it_looked(tmp_path):
    with pytest.raises(DataError) as caught:
        MedMNISTDataset("retinamnist")
    message = str(caught.value)
    assert "retinamnist.npz not found" in message
    assert str(tmp_path / "xdg-cache" / "crsbench" / "medmnist") in message
    assert "download=True" in message and "zenodo.org/records/10519652" in message


# ----- downloading (urlopen is served from local bytes)


def test_download_streams_verifies_and_renames_into_the_cache(tmp_path, monkeypatch, fake_retina):
    trust(monkeypatch, "retinamnist", fake_retina)
    seen = []
    serve(monkeypatch, fake_retina.read_bytes(), seen)
    dataset = MedMNISTDataset("retinamnist", download=True)
    cache = tmp_path / "xdg-cache" / "crsbench" / "medmnist"
    assert dataset.path == cache / "retinamnist.npz"
    assert seen == ["https://zenodo.org/records/10519652/files/retinamnist.npz?download=1"]
    assert sorted(p.name for p in cache.iterdir()) == ["retinamnist.npz"]
    assert len(dataset.split("test")) == 4
    # Once cached, no second download.
    MedMNISTDataset("retinamnist", download=True)
    assert len(seen) == 1


def test_corrupted_download_is_rejected_and_leaves_nothing(tmp_path, monkeypatch, fake_retina):
    seen = []
    serve(monkeypatch, fake_retina.read_bytes()[:-100], seen)
    with pytest.raises(DataError) as caught:
        MedMNISTDataset("retinamnist", download=True)
    message = str(caught.value)
    corrupted_md5 = hashlib.md5(fake_retina.read_bytes()[:-100]).hexdigest()
    assert "retinamnist.npz" in message and corrupted_md5 in message
    assert "bd4c0672f1bba3e3a89f0e4e876791e4" in message
    cache = tmp_path / "xdg-cache" / "crsbench" / "medmnist"
    assert list(cache.iterdir()) == []


def test_size_variant_download_url(tmp_path, monkeypatch):
    seen = []
    serve(monkeypatch, b"whatever", seen)
    with pytest.raises(DataError, match="md5"):
        download_medmnist("pneumoniamnist", size=224, cache_dir=tmp_path / "c")
    assert seen == ["https://zenodo.org/records/10519652/files/pneumoniamnist_224.npz?download=1"]
    assert list((tmp_path / "c").iterdir()) == []


def test_network_failure_is_a_data_error_and_leaves_nothing(tmp_path, monkeypatch):
    def unreachable(url, timeout=None):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(DataError, match="could not download .*no route to host"):
        download_file("https://example.invalid/x.npz", tmp_path / "c" / "x.npz", None)
    assert list((tmp_path / "c").iterdir()) == []


def test_download_file_without_known_md5_keeps_the_bytes(tmp_path, monkeypatch):
    serve(monkeypatch, b"payload", [])
    path = download_file("https://example.invalid/x.npz", tmp_path / "x.npz", None)
    assert path.read_bytes() == b"payload"


def test_module_exposes_the_cache_dir(tmp_path):
    assert medmnist.medmnist_cache_dir() == tmp_path / "xdg-cache" / "crsbench" / "medmnist"


# ----- the real RetinaMNIST, when the shared data folder has it

REAL_RETINA = SHARED_DATA / "medmnist" / "retinamnist.npz"


@pytest.mark.skipif(not REAL_RETINA.is_file(), reason=f"real RetinaMNIST not present at {REAL_RETINA}")
def test_real_retinamnist():
    dataset = MedMNISTDataset("retinamnist", path=REAL_RETINA)
    assert dataset.fingerprint() == "bd4c0672f1bba3e3a89f0e4e876791e4"
    assert dataset.meta.task_type == "ordinal" and dataset.meta.n_classes == 5
    sizes = [len(dataset.split(s)) for s in ("train", "val", "test")]
    assert sizes == [1080, 120, 400] == list(MEDMNIST_DATASETS["retinamnist"].n_samples)
    train = dataset.split("train")
    assert set(np.unique(train.labels)) == {0, 1, 2, 3, 4}
    assert images_batch(train.images, [0, 1]).shape == (2, 28, 28, 3)
