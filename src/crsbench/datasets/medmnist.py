"""MedMNIST v2 / MedMNIST+ 2D datasets read from the official `.npz` files.

Each file holds `{train,val,test}_images` (uint8 [N, S, S] grey or [N, S, S, 3] RGB, S in
28/64/128/224) and `{train,val,test}_labels` (uint8 [N, 1], or [N, 14] for ChestMNIST). The
table below is transcribed from `medmnist/info.py` of the MedMNIST repository (version 3.0.2,
Zenodo record 10519652, which serves the 28 px files of MedMNIST v2 and the larger MedMNIST+
sizes). The 3D datasets are left out: they are volumes, not images.

Finding a file: an explicit `path` (a file, or a folder holding it); else `$CRSBENCH_DATA`
(or its `medmnist/` subfolder); else the cache (`$XDG_CACHE_HOME/crsbench/medmnist`, default
`~/.cache/crsbench/medmnist`); else, only with `download=True`, a verified download to the cache.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping, Optional

import numpy as np
from pydantic import field_validator

from crsbench.core.atomic import atomic_write
from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.arrays import Header, NpzArchive
from crsbench.datasets.base import ArrayImages, SplitData
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions, PathLike
from crsbench.errors import DataError

ZENODO_RECORD_URL = "https://zenodo.org/records/10519652/files/{file_name}?download=1"
IMAGE_SIZES = (28, 64, 128, 224)
_CHUNK_BYTES = 1 << 20
_DOWNLOAD_TIMEOUT_S = 60


@dataclass(frozen=True, eq=False)
class MedMNISTInfo:
    name: str
    task_type: str  # our TASK_TYPES: multi-class and binary-class are both "single_label"
    class_names: tuple[str, ...]
    modality: str
    md5: Mapping[int, str | None]  # by image size; None: not confirmed, so not checked
    n_samples: tuple[int, int, int]  # official train / val / test sizes
    licence: str = "CC BY 4.0"

    def file_name(self, size: int = 28) -> str:
        return f"{self.name}.npz" if size == 28 else f"{self.name}_{size}.npz"

    def url(self, size: int = 28) -> str:
        return ZENODO_RECORD_URL.format(file_name=self.file_name(size))


_ORGANS = (
    "bladder", "femur-left", "femur-right", "heart", "kidney-left", "kidney-right",
    "liver", "lung-left", "lung-right", "pancreas", "spleen",
)  # fmt: skip

_TABLE = (
    MedMNISTInfo(
        "pathmnist", "single_label",
        ("adipose", "background", "debris", "lymphocytes", "mucus", "smooth muscle",
         "normal colon mucosa", "cancer-associated stroma", "colorectal adenocarcinoma epithelium"),
        "generic",
        {28: "a8b06965200029087d5bd730944a56c1", 64: "55aa9c1e0525abe5a6b9d8343a507616",
         128: "ac42d08fb904d92c244187169d1fd1d9", 224: "2c51a510bcdc9cf8ddb2af93af1eadec"},
        (89996, 10004, 7180),
    ),
    MedMNISTInfo(
        "chestmnist", "multi_label",
        ("atelectasis", "cardiomegaly", "effusion", "infiltration", "mass", "nodule", "pneumonia",
         "pneumothorax", "consolidation", "edema", "emphysema", "fibrosis", "pleural", "hernia"),
        "chest_xray",
        {28: "02c8a6516a18b556561a56cbdd36c4a8", 64: "9de6cd0b934ebb5b7426cfba5efbae16",
         128: "db107e5590b27930b62dbaf558aebee3", 224: "45bd33e6f06c3e8cdb481c74a89152aa"},
        (78468, 11219, 22433),
    ),
    MedMNISTInfo(
        "dermamnist", "single_label",
        ("actinic keratoses and intraepithelial carcinoma", "basal cell carcinoma",
         "benign keratosis-like lesions", "dermatofibroma", "melanoma", "melanocytic nevi",
         "vascular lesions"),
        "dermoscopy",
        {28: "0744692d530f8e62ec473284d019b0c7", 64: "b70a2f5635c6199aeaa28c31d7202e1f",
         128: "2defd784463fa5243564e855ed717de1", 224: "8974907d8e169bef5f5b96bc506ae45d"},
        (7007, 1003, 2005),
        licence="CC BY-NC 4.0",
    ),
    MedMNISTInfo(
        "octmnist", "single_label",
        ("choroidal neovascularization", "diabetic macular edema", "drusen", "normal"),
        "generic",  # retinal OCT, not a fundus photograph
        {28: "c68d92d5b585d8d81f7112f81e2d0842", 64: "e229e9440236b774d9f0dfef9d07bdaf",
         128: "0a97e76651ace45c5d943ee3f65b63ae", 224: "abc493b6d529d5de7569faaef2773ba3"},
        (97477, 10832, 1000),
    ),
    MedMNISTInfo(
        "pneumoniamnist", "single_label", ("normal", "pneumonia"), "chest_xray",
        {28: "28209eda62fecd6e6a2d98b1501bb15f", 64: "8f4eceb4ccffa70c672198ea285246c6",
         128: "05b46931834c231683c68f40c47b2971", 224: "d6a3c71de1b945ea11211b03746c1fe1"},
        (4708, 524, 624),
    ),
    MedMNISTInfo(
        "retinamnist", "ordinal", ("0", "1", "2", "3", "4"), "fundus",
        {28: "bd4c0672f1bba3e3a89f0e4e876791e4", 64: "afda852cc34dcda56f86ad2b2457dbcc",
         128: "e48e916a24454daf90583d4e6efb1a18", 224: "eae7e3b6f3fcbda4ae613ebdcbe35348"},
        (1080, 120, 400),
    ),
    MedMNISTInfo(
        "breastmnist", "single_label", ("malignant", "normal, benign"), "generic",
        {28: "750601b1f35ba3300ea97c75c52ff8f6", 64: "742edef2a1fd1524b2efff4bd7ba9364",
         128: "363e4b3f8d712e9b5de15470a2aaadf1", 224: "b56378a6eefa9fed602bb16d192d4c8b"},
        (546, 78, 156),
    ),
    MedMNISTInfo(
        "bloodmnist", "single_label",
        ("basophil", "eosinophil", "erythroblast",
         "immature granulocytes(myelocytes, metamyelocytes and promyelocytes)",
         "lymphocyte", "monocyte", "neutrophil", "platelet"),
        "generic",
        {28: "7053d0359d879ad8a5505303e11de1dc", 64: "2b94928a2ae4916078ca51e05b6b800b",
         128: "adace1e0ed228fccda1f39692059dd4c", 224: "b718ff6835fcbdb22ba9eacccd7b2601"},
        (11959, 1712, 3421),
    ),
    MedMNISTInfo(
        "tissuemnist", "single_label",
        ("Collecting Duct, Connecting Tubule", "Distal Convoluted Tubule",
         "Glomerular endothelial cells", "Interstitial endothelial cells", "Leukocytes",
         "Podocytes", "Proximal Tubule Segments", "Thick Ascending Limb"),
        "generic",
        {28: "ebe78ee8b05294063de985d821c1c34b", 64: "123ece2eba09d0aa5d698fda57103344",
         128: "61b955355d7425a89687b06cca3ce0c2", 224: "b077128c4a949f0a4eb01517f9037b9c"},
        (165466, 23640, 47280),
    ),
    MedMNISTInfo(
        "organamnist", "single_label", _ORGANS, "generic",
        {28: "68e3f8846a6bd62f0c9bf841c0d9eacc", 64: "2dcccc29b88e6da5a01161ef20cda288",
         128: "eeae80d0a227a8d099027e1b3cfd3b60", 224: "50747347e05c87dd3aaf92c49f9f3170"},
        (34561, 6491, 17778),
    ),
    MedMNISTInfo(
        "organcmnist", "single_label", _ORGANS, "generic",
        {28: "b9ceb9546e10131b32923c5bbeaea2b1", 64: "3ce34a8724ea6f548e6db4744d03b6a9",
         128: "773c1f009daa3fe5d9a2a201b2a7ed94", 224: "050f5e875dc056f6768abf94ec9995d1"},
        (12975, 2392, 8216),
    ),
    MedMNISTInfo(
        "organsmnist", "single_label", _ORGANS, "generic",
        {28: "9ab87b696fb54e2a387ebe992d6ed5f1", 64: "53a6d115339d874c25e309a994ff46d3",
         128: "ded0c5fa01a95dc4978b956f613e9b8e", 224: "b354719e553fbbb2513d5533f52a4cb1"},
        (13932, 2452, 8827),
    ),
)  # fmt: skip

MEDMNIST_DATASETS: dict[str, MedMNISTInfo] = {info.name: info for info in _TABLE}


def medmnist_info(name: str) -> MedMNISTInfo:
    try:
        return MEDMNIST_DATASETS[name.lower()]
    except KeyError:
        known = ", ".join(sorted(MEDMNIST_DATASETS))
        raise DataError(f"unknown MedMNIST dataset {name!r}; known: {known}") from None


def _dataset_name(name: str, size: int) -> str:
    return name if size == 28 else f"{name}_{size}"


def medmnist_cache_dir() -> Path:
    cache_root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_root).expanduser() / "crsbench" / "medmnist"


def file_md5(path: Path | str) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_md5(path: Path | str, actual: str, expected: str | None) -> None:
    """Raise when a known official md5 disagrees with the file's; None means "not confirmed"."""
    if expected is not None and actual != expected:
        raise DataError(
            f"{path}: md5 {actual} does not match the official {expected}; delete the file and"
            " download it again (to use a re-packed copy on purpose: `verify_md5: false` in the task's dataset"
            " block of the suite file, or verify_md5=False in Python)"
        )


def find_medmnist_file(name: str, size: int = 28, path: Path | str | None = None, download: bool = False) -> Path:
    info = medmnist_info(name)
    _check_size(size)
    file_name = info.file_name(size)
    if path is not None:
        return _explicit_file(Path(path).expanduser(), file_name)
    candidates = _search_locations(file_name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    if download:
        return download_medmnist(name, size)
    looked = ", ".join(str(c) for c in candidates)
    raise DataError(
        f"{file_name} not found (looked in: {looked}); download it from {info.url(size)} into"
        f" {medmnist_cache_dir()} or a folder named by CRSBENCH_DATA, or pass download=True"
    )


def download_medmnist(name: str, size: int = 28, cache_dir: Path | str | None = None) -> Path:
    info = medmnist_info(name)
    _check_size(size)
    destination = Path(cache_dir or medmnist_cache_dir()) / info.file_name(size)
    download_file(info.url(size), destination, info.md5.get(size))
    return destination


def download_file(url: str, destination: Path | str, expected_md5: str | None) -> Path:
    """Stream `url` to a temporary file beside `destination`, check its md5, then rename it into place
    (core.atomic): a half-written or corrupted download never sits at `destination`."""
    destination = Path(destination)

    def fill(out) -> None:
        actual = _stream_to(url, out)
        if expected_md5 is not None and actual != expected_md5:
            raise DataError(
                f"{destination.name}: download from {url} has md5 {actual}, expected {expected_md5};"
                " discarded it, try again later"
            )

    atomic_write(destination, fill)
    return destination


def _stream_to(url: str, out) -> str:
    digest = hashlib.md5()
    try:
        with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response:
            for chunk in iter(lambda: response.read(_CHUNK_BYTES), b""):
                digest.update(chunk)
                out.write(chunk)
    except (OSError, http.client.HTTPException) as error:  # URLError is an OSError
        raise DataError(f"could not download {url}: {error}") from error
    return digest.hexdigest()


def _check_size(size: int) -> None:
    if size not in IMAGE_SIZES:
        raise DataError(f"MedMNIST size must be one of {IMAGE_SIZES}, got {size!r}")


def _explicit_file(path: Path, file_name: str) -> Path:
    file_path = path / file_name if path.is_dir() else path
    if not file_path.is_file():
        raise DataError(f"MedMNIST file not found: {file_path}")
    return file_path


def _search_locations(file_name: str) -> list[Path]:
    locations = []
    data_root = os.environ.get("CRSBENCH_DATA")
    if data_root:
        root = Path(data_root).expanduser()
        locations += [root / file_name, root / "medmnist" / file_name]
    locations.append(medmnist_cache_dir() / file_name)
    return locations


class MedMNISTOptions(KindOptions):
    name: str
    path: Optional[PathLike] = None
    download: bool = False
    size: int = 28
    verify_md5: bool = True

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        _as_value_error(medmnist_info, name)
        return name

    @field_validator("size")
    @classmethod
    def _size(cls, size: int) -> int:
        _as_value_error(_check_size, size)
        return size


def _as_value_error(check, value):
    """pydantic reports ValueErrors as field errors; our checks raise DataError."""
    try:
        return check(value)
    except DataError as error:
        raise ValueError(str(error)) from None


class MedMNISTDataset(DatasetKind):
    """A MedMNIST 2D dataset with its official splits; groups are the example ids (no patient ids)."""

    info: ClassVar[DatasetInfo] = DatasetInfo(
        title="MedMNIST v2 / MedMNIST+ (2D)", summary="18 small biomedical image sets, official splits",
        layout="<name>.npz or <name>_<size>.npz (train/val/test _images and _labels)",
        access="Zenodo record 10519652 (download: true fetches and verifies it)",
    )
    Options: ClassVar[type[KindOptions]] = MedMNISTOptions
    options: MedMNISTOptions

    @classmethod
    def info_for(cls, options: MedMNISTOptions) -> DatasetInfo:
        table = medmnist_info(options.name)
        return cls.info.but(
            name=_dataset_name(table.name, options.size), task_type=table.task_type, class_names=table.class_names,
            modality=table.modality, licence=table.licence,
        )

    def _build(self) -> None:
        o = self.options
        self.table = medmnist_info(o.name)
        self.path = find_medmnist_file(self.table.name, o.size, o.path, o.download)
        self.meta = self.info_for(o).to_meta(
            description=f"MedMNIST {self.table.name}, {o.size}x{o.size} px, official splits", source=self.table.url(o.size),
        )
        self._md5: str | None = None
        self._splits: dict[str, SplitData] = {}
        with NpzArchive(self.path) as archive:
            self._check_headers(archive)  # a few hundred bytes per key, before the file is hashed
        if o.verify_md5:
            check_md5(self.path, self.fingerprint(), self.table.md5.get(o.size))

    def fingerprint(self) -> str:
        if self._md5 is None:
            self._md5 = file_md5(self.path)
        return self._md5

    def split(self, name: str) -> SplitData:
        if name not in SPLITS:
            raise DataError(f"unknown split {name!r} for {self.meta.name}; expected one of {', '.join(SPLITS)}")
        if name not in self._splits:
            self._splits[name] = self._load_split(name)
        return self._splits[name]

    def _check_headers(self, archive: NpzArchive) -> None:
        """Every key present, of the dtype and shape MedMNIST ships, before any array is read."""
        for split in SPLITS:
            for key in (f"{split}_images", f"{split}_labels"):
                if key not in archive.keys:
                    found = ", ".join(sorted(archive.keys)) or "nothing"
                    raise DataError(f"{self.path}: missing key '{key}' (found: {found})")
        for split in SPLITS:
            n = self._check_images(archive.header(f"{split}_images"))
            self._check_label_header(archive.header(f"{split}_labels"), n)

    def _load_split(self, split: str) -> SplitData:
        with NpzArchive(self.path) as archive:
            self._check_headers(archive)  # the file may have changed since the dataset was built
            images = archive.read(f"{split}_images")
            labels = archive.read(f"{split}_labels")
        labels = self._checked_labels(labels, f"{split}_labels")
        ids = np.array([f"{self.table.name}-{split}-{i:05d}" for i in range(len(images))])
        return SplitData(ids=ids, images=ArrayImages(images), labels=labels)

    def _check_images(self, header: Header) -> int:
        key, shape = header.key, header.shape
        if header.dtype != np.uint8:
            raise DataError(f"{self.path}: key '{key}' must be uint8, got {header.dtype}")
        size = self.options.size
        square = len(shape) >= 3 and shape[1:3] == (size, size)
        channels_ok = len(shape) == 3 or (len(shape) == 4 and shape[3] == 3)
        if not (square and channels_ok):
            expected = f"[N, {size}, {size}] or [N, {size}, {size}, 3]"
            raise DataError(f"{self.path}: key '{key}' must have shape {expected}, got {list(shape)}")
        return shape[0]

    def _check_label_header(self, header: Header, n_images: int) -> None:
        key, shape = header.key, header.shape
        if header.dtype.kind not in "iu":
            raise DataError(f"{self.path}: key '{key}' must hold integers, got {header.dtype}")
        if not shape or shape[0] != n_images:
            raise DataError(f"{self.path}: key '{key}' has {shape[0] if shape else 0} labels for {n_images} images")
        multi, k = self.meta.task_type == "multi_label", self.meta.n_classes
        if not (shape[1:] == (k,) if multi else shape[1:] in ((), (1,))):
            raise DataError(f"{self.path}: key '{key}' must have shape [N, {k if multi else 1}], got {list(shape)}")

    def _checked_labels(self, labels: np.ndarray, key: str) -> np.ndarray:
        """Values in range; dtype and shape were checked on the header."""
        if self.meta.task_type == "multi_label":
            return self._multi_label(labels, key)
        return self._class_indices(labels, key)

    def _class_indices(self, labels: np.ndarray, key: str) -> np.ndarray:
        labels = labels.reshape(-1).astype(np.int64)
        bad = np.flatnonzero((labels < 0) | (labels >= self.meta.n_classes))
        if len(bad):
            raise DataError(
                f"{self.path}: key '{key}' row {bad[0]} has label {labels[bad[0]]}, outside 0..{self.meta.n_classes - 1}"
            )
        return labels

    def _multi_label(self, labels: np.ndarray, key: str) -> np.ndarray:
        bad_rows = np.flatnonzero(((labels != 0) & (labels != 1)).any(axis=1))
        if len(bad_rows):
            raise DataError(f"{self.path}: key '{key}' row {bad_rows[0]} has values other than 0/1")
        return labels.astype(np.float32)
