import numpy as np
import pytest
from PIL import Image

from crsbench.datasets import registry
from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.medmnist import MedMNISTDataset
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions
from crsbench.datasets.registry import get_dataset, info_for, known_dataset_kinds, register_dataset
from crsbench.errors import DataError
from crsbench.suite import parse_suite


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))


class ToyOptions(KindOptions):
    size: int = 3


class Toy(DatasetKind):
    info = DatasetInfo(task_type="single_label", class_names=("a", "b"), licence="CC0")
    Options = ToyOptions
    made: list = []

    def __init__(self, size: int = 3):
        Toy.made.append(size)
        self.size = size

    @classmethod
    def info_for(cls, options: ToyOptions) -> DatasetInfo:
        return cls.info.but(name=f"toy{options.size}")


def test_builtin_kinds_are_registered():
    assert {"medmnist", "folder", "demo"} <= set(known_dataset_kinds())


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(DataError, match="unknown dataset kind 'imagenet'; known kinds: ") as error:
        get_dataset("imagenet")
    assert all(kind in str(error.value) for kind in ("demo", "folder", "medmnist", "npz"))


def test_register_and_get(clean_registry):
    Toy.made.clear()
    register_dataset("toy", Toy)
    assert get_dataset("toy", size=5).size == 5
    assert Toy.made == [5]
    assert "toy" in known_dataset_kinds()
    assert info_for("toy", {"size": 7}).name == "toy7" and Toy.made == [5]  # info builds nothing


def test_registering_a_name_twice_needs_replace(clean_registry):
    register_dataset("toy", Toy)
    with pytest.raises(ValueError, match="already registered"):
        register_dataset("toy", Toy)
    register_dataset("toy", Toy, replace=True)
    with pytest.raises(TypeError, match="lacks Options, info_for, from_options"):
        register_dataset("other", lambda: 2)


def test_every_builtin_kind_declares_its_info_without_reading_data():
    for kind in known_dataset_kinds():
        kind_class = registry.dataset_kind(kind)
        assert isinstance(kind_class.info, DatasetInfo) and issubclass(kind_class.Options, KindOptions), kind
    # options that point nowhere: the info still comes from the options alone
    assert info_for("folder", {"root": "/no/such/ph2", "csv": "/no/such.csv", "modality": "dermoscopy"}).name == "ph2"
    assert info_for("medmnist", {"name": "retinamnist", "size": 64}).name == "retinamnist_64"
    assert info_for("chexpert", {"root": "/no/such"}).class_names[:2] == ("Atelectasis", "Cardiomegaly")
    demo = info_for("demo", {"specialty": "cxr", "site": "B"})
    assert (demo.name, demo.task_type, demo.modality) == ("demo-cxr-siteB", "multi_label", "chest_xray")


def test_a_misspelt_dataset_option_fails_suite_validation_naming_the_field():
    raw = {"name": "s", "encoders": ["raw-pixels"],
           "tasks": [{"name": "t", "dataset": {"kind": "demo", "specialty": "derm"},
                      "shift": {"kind": "folder", "rooot": "x", "csv": "y"}}]}
    with pytest.raises(Exception, match=r"tasks\.0\.shift\.rooot: Extra inputs are not permitted"):
        parse_suite(raw)


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
    dataset = get_dataset("folder", root=tmp_path, csv=tmp_path / "l.csv", max_side=4)
    assert isinstance(dataset, FolderDataset) and dataset.meta.class_names == ("a", "b")


@pytest.mark.parametrize("kind", ["folder", "isic2019", "chexpert"])
def test_the_removed_image_size_option_is_refused_saying_why(tmp_path, kind):
    from crsbench.datasets.registry import parse_options

    options = {"root": str(tmp_path), "image_size": 224} | ({"csv": "l.csv"} if kind == "folder" else {})
    with pytest.raises(Exception, match="image_size was removed.*max_side"):
        parse_options(kind, options)


def test_plan_reads_no_data(tmp_path):
    from crsbench.plan import plan

    suite = parse_suite({
        "name": "s", "encoders": ["raw-pixels"], "seeds": [0], "fractions": [1.0],
        "perturbations": {"select": "auto", "severities": [3]},
        "tasks": [{"name": "derm", "dataset": {"kind": "folder", "root": str(tmp_path / "absent"),
                                               "csv": str(tmp_path / "absent.csv"), "modality": "dermoscopy"},
                   "shift": {"kind": "isic2019", "root": str(tmp_path / "absent-isic")}}],
    })
    (unit,) = plan(suite)
    kinds = [c.kind for c in unit.conditions]
    assert kinds[0] == "clean" and kinds[-1] == "shift" and set(kinds[1:-1]) == {"perturbation"}
    assert unit.conditions[-1].name == "shift:isic2019"
