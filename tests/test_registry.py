import numpy as np
import pytest
from PIL import Image

from crsbench.datasets import registry
from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.medmnist import MedMNISTDataset
from crsbench.datasets.registry import get_dataset, known_dataset_kinds, register_dataset
from crsbench.errors import DataError


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_FACTORIES", dict(registry._FACTORIES))


def test_builtin_kinds_are_registered():
    assert {"medmnist", "folder", "demo"} <= set(known_dataset_kinds())


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(DataError, match="unknown dataset kind 'imagenet'; known kinds: ") as error:
        get_dataset("imagenet")
    assert all(kind in str(error.value) for kind in ("demo", "folder", "medmnist", "npz"))


def test_register_and_get(clean_registry):
    made = []
    register_dataset("toy", lambda size=3: made.append(size) or f"toy{size}")
    assert get_dataset("toy", size=5) == "toy5"
    assert made == [5]
    assert "toy" in known_dataset_kinds()


def test_registering_a_name_twice_needs_replace(clean_registry):
    register_dataset("toy", lambda: 1)
    with pytest.raises(ValueError, match="already registered"):
        register_dataset("toy", lambda: 2)
    register_dataset("toy", lambda: 2, replace=True)
    assert get_dataset("toy") == 2


def test_bad_options_are_a_data_error(tmp_path):
    with pytest.raises(DataError, match="dataset kind 'medmnist': bad options"):
        get_dataset("medmnist", name="retinamnist", colour="blue")
    with pytest.raises(DataError, match="dataset kind 'folder': bad options"):
        get_dataset("folder", root=tmp_path, csv=tmp_path / "l.csv", labels="dx")


def test_medmnist_kind(tmp_path):
    arrays = {}
    for split in ("train", "val", "test"):
        arrays[f"{split}_images"] = np.zeros((2, 28, 28), np.uint8)
        arrays[f"{split}_labels"] = np.array([[0], [1]], np.uint8)
    np.savez(tmp_path / "breastmnist.npz", **arrays)
    dataset = get_dataset("medmnist", name="breastmnist", path=tmp_path, verify_md5=False)
    assert isinstance(dataset, MedMNISTDataset) and len(dataset.split("val")) == 2


def test_folder_kind(tmp_path):
    rows = ["image,label"]
    for i in range(4):
        Image.fromarray(np.full((6, 6, 3), i * 40, np.uint8)).save(tmp_path / f"{i}.png")
        rows.append(f"{i}.png,{'ab'[i % 2]}")
    (tmp_path / "l.csv").write_text("\n".join(rows) + "\n")
    dataset = get_dataset("folder", root=tmp_path, csv=tmp_path / "l.csv", image_size=4)
    assert isinstance(dataset, FolderDataset) and dataset.meta.class_names == ("a", "b")
