import io
import os
import zipfile

import numpy as np
import pytest
from PIL import Image

from crsbench.datasets import registry
from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.medmnist import MedMNISTDataset
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions
from crsbench.datasets.registry import get_dataset, info_for, known_dataset_kinds, register_dataset
from crsbench.errors import DataError
from crsbench.plan.suite import parse_suite


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))


class ToyOptions(KindOptions):
    size: int = 3


class Toy(DatasetKind):
    """A user kind written the old way: a constructor of its own beside its `Options`."""

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


def test_an_old_style_kind_is_built_with_only_the_options_given(clean_registry):
    Toy.made.clear()
    register_dataset("toy", Toy)
    assert get_dataset("toy").size == 3 and Toy.made == [3]  # its own default applies
    with pytest.raises(DataError, match="dataset kind 'toy': bad options: colour: Extra inputs are not permitted"):
        get_dataset("toy", colour="blue")


class TileOptions(KindOptions):
    tiles: int
    name: str = "tiles"


class Tiles(DatasetKind):
    """A user kind written the new way: no constructor, the options model is its parameter list."""

    info = DatasetInfo(task_type="single_label", class_names=("a", "b"), licence="CC0")
    Options = TileOptions

    @classmethod
    def info_for(cls, options: TileOptions) -> DatasetInfo:
        return cls.info.but(name=options.name)

    def _build(self) -> None:
        self.meta = self.info_for(self.options).to_meta(source=f"{self.options.tiles} tiles")


def test_a_new_style_kind_takes_its_options_model_by_name_position_or_whole(clean_registry):
    register_dataset("tiles", Tiles)
    built = get_dataset("tiles", tiles=4)
    assert built.options == TileOptions(tiles=4) and built.meta.source == "4 tiles"
    assert (built.meta.name, built.meta.licence, built.meta.class_names) == ("tiles", "CC0", ("a", "b"))
    assert Tiles(4, "t").options == TileOptions(tiles=4, name="t")  # by position, in declaration order
    options = TileOptions(tiles=2)
    assert Tiles(options).options is options
    with pytest.raises(TypeError, match="'tiles' both by position and by name"):
        Tiles(4, tiles=5)
    with pytest.raises(TypeError, match=r"at most 2 options by position \(tiles, name\), got 3"):
        Tiles(1, "a", "b")
    with pytest.raises(TypeError, match="Tiles takes TileOptions, got ToyOptions"):
        Tiles(ToyOptions())
    with pytest.raises(DataError, match="^Tiles: bad options: tiles: Field required$"):
        Tiles()


def test_to_meta_writes_the_declaration_once_and_adds_what_the_data_says():
    info = DatasetInfo(name="d", task_type="single_label", modality="fundus", licence="CC0")
    meta = info.to_meta(description="about", source="here", class_names=("x", "y"))
    assert (meta.name, meta.task_type, meta.class_names, meta.modality, meta.licence) == (
        "d", "single_label", ("x", "y"), "fundus", "CC0")
    assert (meta.description, meta.source) == ("about", "here")
    with pytest.raises(ValueError, match="class_names neither declared nor read from the data"):
        info.to_meta()


# what each built-in kind needs beyond its defaults (nothing is read: `_build` is stubbed)
REQUIRED = {"folder": {"root": "r", "csv": "c.csv"}, "npz": {"path": "x.npz", "class_names": ["a", "b"]},
            "medmnist": {"name": "retinamnist"}, "demo": {"specialty": "derm"}}


@pytest.mark.parametrize("kind", sorted(registry._BUILTIN))
def test_every_builtin_constructor_takes_exactly_its_options_fields(kind, monkeypatch):
    kind_class = registry.dataset_kind(kind)
    assert kind_class.__init__ is DatasetKind.__init__  # no second parameter list to drift from the model
    monkeypatch.setattr(kind_class, "_build", lambda self: None)
    required = REQUIRED.get(kind, {})
    for name, field in kind_class.Options.model_fields.items():
        given = {**required, name: required[name] if field.is_required() else field.default}
        assert kind_class(**given).options == kind_class.Options(**given), name
    with pytest.raises(DataError) as error:
        kind_class(**required, colour="blue")
    assert str(error.value) == f"{kind_class.__name__}: bad options: colour: Extra inputs are not permitted"
    options = kind_class.Options(**required)
    assert kind_class.from_options(options).options is options


def test_positional_calls_map_onto_the_fields_in_declaration_order(monkeypatch):
    from crsbench.datasets.published.isic2019 import ISIC2019Dataset

    for kind_class in (FolderDataset, ISIC2019Dataset):
        monkeypatch.setattr(kind_class, "_build", lambda self: None)
    assert FolderDataset("r", "c.csv", "file", "dx").options == FolderDataset(
        root="r", csv="c.csv", image_column="file", label_columns="dx").options
    assert ISIC2019Dataset("r", 16).options == ISIC2019Dataset(root="r", max_side=16).options


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
    from crsbench.plan.fit_units import plan

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


# ----- fingerprints and split files pinned from the code before the options model became each kind's
# constructor: the files below are byte-for-byte reproducible (no codec, no gzip or zip timestamps), so a
# changed value means a changed fingerprint, which would silently orphan every stored embedding.

FIXED_NS = 1_700_000_000_000_000_000


def pinned_folder(tmp_path):
    """Twelve files of three classes from six patients; a folder fingerprint reads names, sizes and times
    (or bytes), never pixels, so the files need not decode."""
    root = tmp_path / "images"
    root.mkdir()
    rows = ["image,dx,patient"]
    for i in range(12):
        path = root / f"img{i:02d}.bmp"
        path.write_bytes(bytes([i]) * (20 + i))
        os.utime(path, ns=(FIXED_NS, FIXED_NS))
        rows.append(f"img{i:02d}.bmp,{['nevus', 'melanoma', 'bcc'][i % 3]},p{i // 2}")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    return root, tmp_path / "labels.csv"


FOLDER_PINS = [
    ({}, "mtime-c60704e6aadca92577eecc91991f57dd98e7550959fdec71520fa96def1e5475"),
    ({"fingerprint": "content"}, "content-00d0ac168bb37b3f56aa3d593b0a782fd8243119baaa7f1a949ca00e5f649ccc"),
    ({"class_names": ["nevus", "melanoma", "bcc"], "max_side": 8, "split_seed": 3, "fractions": [0.5, 0.25, 0.25],
      "extensions": ["bmp", ".png"]}, "mtime-aef6053c4cf7df56f100582c6d63878ba622217204f4a23a32518ddc4d64212e"),
]


@pytest.mark.parametrize("options, pinned", FOLDER_PINS)
def test_folder_fingerprint_is_unchanged(tmp_path, options, pinned):
    root, csv = pinned_folder(tmp_path)
    dataset = FolderDataset(root, csv, label_columns="dx", group_column="patient", **options)
    assert dataset.fingerprint() == pinned
    via_registry = get_dataset("folder", root=root, csv=csv, label_columns="dx", group_column="patient", **options)
    assert via_registry.fingerprint() == pinned


def write_npz(path, **arrays):
    """An .npz with fixed member timestamps (np.savez stamps the current time into the zip)."""
    with zipfile.ZipFile(path, "w") as archive:
        for key, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            archive.writestr(zipfile.ZipInfo(f"{key}.npy", date_time=(2020, 1, 1, 0, 0, 0)), buffer.getvalue())
    return path


NPZ_PINS = [
    ({}, "17a05165092447dd18b252c986a62ee64a8044104c9b23c09b46ca20c9fe0ffe"),
    ({"split": "auto", "split_seed": 2, "groups_key": "groups", "name": "cohort"},
     "981704f15039e6a27c03bd97e3eaddf8a42d88dfac3898273c39e86c87afae13"),
]


@pytest.mark.parametrize("options, pinned", NPZ_PINS)
def test_npz_fingerprint_is_unchanged(tmp_path, monkeypatch, options, pinned):
    monkeypatch.chdir(tmp_path)  # the meta's source (the path as given) enters the fingerprint
    images = np.arange(12 * 4 * 4, dtype=np.uint8).reshape(12, 4, 4)
    write_npz(tmp_path / "cohort.npz", images=images, labels=np.arange(12) % 2, groups=np.arange(12) // 2)
    dataset = get_dataset("npz", path="cohort.npz", class_names=["a", "b"], **options)
    assert dataset.fingerprint() == pinned


def test_demo_fingerprint_is_unchanged():
    assert get_dataset("demo", specialty="derm").fingerprint() == (
        "224990afb77f5eb91a653fc7bb16589aebf840609c2eb0e126d0bc01af126244")
    assert get_dataset("demo", specialty="fundus", site="B", n_train=10, signal=2, seed=4).fingerprint() == (
        "2f177e95d16814b00d9b137606cc532f268ddedcc22e445d025fae421e069392")


def published(kind, tmp_path):
    from _release_layouts import make_aptos, make_chexpert, make_isic, make_mimic

    makers = {"isic2019": make_isic, "aptos2019": make_aptos, "chexpert": lambda root: make_chexpert(root).parent,
              "mimic_cxr": lambda root: make_mimic(root, gz=False)}  # gzip stamps the time: plain CSVs
    return makers[kind](tmp_path / kind)


PUBLISHED_PINS = [
    ("isic2019", {"max_side": 16},
     "85c12604d144a61664c1b05effc1007743508dfac73d2c53a8ef384dbc2bf152", "isic2019-23d9b234fd64.json.gz"),
    ("isic2019", {"split_seed": 1, "fractions": [0.6, 0.2, 0.2]},
     "35ba76dcb9ba20c6cac7d01d552b528d74641bc0f4149603d591a7e96bbfca8e", "isic2019-1ceb5579f463.json.gz"),
    ("aptos2019", {},
     "d8cd7678370edc41c592f79e0e6c3c210b04d4e0ab722ab6e41e9c2e9861b1e8", "aptos2019-86dd0f4581e6.json.gz"),
    ("chexpert", {},
     "89fc7a02984f4c026be085ade0c6c0e0ae8de873e8aee28a1a50b81f6d1e61cf", "chexpert-efcde6f9b4ff.json.gz"),
    ("chexpert", {"uncertainty": "U-Ignore", "check_images": True},  # another policy: the same split file
     "385ea387b379e73fb3c90166b7868ba8644e8c2d9f6bf41324099936e99b36f2", "chexpert-efcde6f9b4ff.json.gz"),
    ("mimic_cxr", {"max_side": 32},
     "3e0aa1360a8073261153bd4206b93cb1f1e1eac51ebc16e2158c0329a30c5638", "mimic_cxr-2f5a45ba6cfb.json.gz"),
]


@pytest.mark.parametrize("kind, options, pinned, split_file", PUBLISHED_PINS)
def test_published_fingerprint_and_split_file_are_unchanged(tmp_path, kind, options, pinned, split_file):
    root = published(kind, tmp_path)
    dataset = get_dataset(kind, root=root, **options)
    assert (dataset.fingerprint(), dataset.split_file.name) == (pinned, split_file)
    assert registry.dataset_kind(kind)(root, **options).fingerprint() == pinned  # read back from the split file


# ----- kinds from installed packages (the entry-point group)

PLUGIN = '''
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions


class TileOptions(KindOptions):
    n: int = 4


class Tiles(DatasetKind):
    Options = TileOptions

    @classmethod
    def info_for(cls, options):
        return DatasetInfo(name=f"tiles{options.n}", task_type="single_label", class_names=("a", "b"), licence="CC0")
'''


def _plugins(monkeypatch, tmp_path, **entries):
    from importlib.metadata import EntryPoint

    (tmp_path / "tile_kinds.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [EntryPoint(name, value, registry.ENTRY_POINT_GROUP) for name, value in entries.items()]
    monkeypatch.setattr(registry.metadata, "entry_points",
                        lambda group: [p for p in points if group == registry.ENTRY_POINT_GROUP])
    monkeypatch.setattr(registry, "_plugins_read", False)


def test_an_installed_package_adds_a_kind_by_entry_point(clean_registry, monkeypatch, tmp_path):
    _plugins(monkeypatch, tmp_path, tiles="tile_kinds:Tiles")
    assert "tiles" in known_dataset_kinds()
    assert info_for("tiles", {"n": 9}).name == "tiles9"
    suite = parse_suite({"name": "s", "encoders": ["raw-pixels"],
                         "tasks": [{"name": "t", "dataset": {"kind": "tiles", "n": 2}}]})
    assert suite.tasks[0].dataset.kind == "tiles"


@pytest.mark.parametrize("entries,message", [
    ({"folder": "tile_kinds:Tiles"}, "'folder' is a built-in dataset kind"),
    ({"tiles": "tile_kinds"}, "must name a class as 'module:Class'"),
])
def test_a_bad_plug_in_is_one_line_naming_it(clean_registry, monkeypatch, tmp_path, entries, message):
    _plugins(monkeypatch, tmp_path, **entries)
    with pytest.raises(DataError, match=message) as error:
        known_dataset_kinds()
    assert "crsbench.datasets" in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("value,message", [("no_such_module:X", "cannot load"), ("tile_kinds:TileOptions", "lacks")])
def test_a_plug_in_that_cannot_be_used_fails_when_asked_for(clean_registry, monkeypatch, tmp_path, value, message):
    _plugins(monkeypatch, tmp_path, tiles=value)
    assert "tiles" in known_dataset_kinds()  # listing imports nothing
    with pytest.raises(DataError, match=f"dataset kind 'tiles': .*{message}"):
        info_for("tiles", {})
