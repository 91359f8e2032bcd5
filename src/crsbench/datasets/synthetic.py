"""Procedural demo datasets: dermoscopy, fundus and chest-X-ray look-alikes generated on the fly.

The demo needs no download: `demo_dataset("derm")` draws a few hundred 64 px images in well
under a second, deterministically from its `SyntheticSpec`. Each specialty mimics the task
shape of a real benchmark:

- ``derm`` (dermoscopy, single_label): nevus / melanoma / seborrhoeic keratosis. Signal lives in
  border irregularity, asymmetry, colour variegation and blue-grey areas (melanoma) and in a
  waxy ridged texture with milia-like cysts (keratosis); nuisance is lesion size, position and
  rotation, skin tone, illumination, hairs and the dermatoscope's dark circular field. About 12%
  of the images come in pairs showing the same lesion twice (same `groups` id).
- ``fundus`` (fundus, ordinal): diabetic retinopathy grade 0-4. Signal is the count and size of
  red lesions (microaneurysms, haemorrhages), yellow exudates, cotton-wool spots and, at grade 4,
  new vessels; a latent severity blurs adjacent grades. Nuisance: brightness, pigmentation, eye
  side, disc position and the vessel tree.
- ``cxr`` (chest_xray, multi_label): cardiomegaly, effusion, consolidation, correlated through
  a shared latent "how sick" factor. Signal: cardiothoracic ratio, fluid blunting a
  costophrenic angle, a patchy opacity in a lung. Nuisance: patient size, rotation, inspiration,
  exposure, noise. Images are greyscale, stored single-channel and replicated to RGB on access.

Each specialty has a second acquisition site ``B`` (another camera / X-ray unit: colour cast,
contrast, blur or sharpening, noise, field of view) with the same label space and the same
label-generating mechanism, for distribution-shift conditions.

The images are drawn by `synthetic_images`; this module holds the specs, the dataset kind and the
labels.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import ClassVar, Literal

import numpy as np

from crsbench.core.hashing import sha256_of
from crsbench.core.vocabulary import SPLITS
from crsbench.datasets.base import ArrayImages, SplitData
from crsbench.datasets.kind import DatasetInfo, DatasetKind, KindOptions, Number
from crsbench.datasets.subgroups import band_of
from crsbench.datasets.synthetic_images import render_cxr, render_derm, render_fundus
from crsbench.errors import DataError

# Bump whenever drawing code, parameters or label mechanisms change: it feeds the fingerprint.
GENERATOR_VERSION = "1"

SPECIALTIES = ("derm", "fundus", "cxr")
SITES = ("A", "B")

_TASKS = {
    "derm": ("single_label", ("nevus", "melanoma", "keratosis"), "dermoscopy"),
    "fundus": ("ordinal", ("grade0", "grade1", "grade2", "grade3", "grade4"), "fundus"),
    "cxr": ("multi_label", ("cardiomegaly", "effusion", "consolidation"), "chest_xray"),
}

_DESCRIPTIONS = {
    "derm": "Procedural dermoscopy look-alike: nevus vs melanoma vs seborrhoeic keratosis "
    "(border irregularity, asymmetry, colour variegation, texture); ~12% of lesions imaged twice.",
    "fundus": "Procedural colour-fundus look-alike: diabetic-retinopathy grade 0-4 from "
    "microaneurysms, haemorrhages, exudates, cotton-wool spots and new vessels; adjacent grades overlap.",
    "cxr": "Procedural chest-X-ray look-alike (greyscale): cardiomegaly, pleural effusion and "
    "consolidation, correlated through a shared latent factor.",
}
_SITE_NOTES = {
    "A": "",
    "B": " Site B: a second acquisition device (different colour/exposure, contrast, sharpness, noise).",
}

# class priors (single-label / ordinal) and label prevalences (multi-label)
_PRIORS = {
    "derm": (0.55, 0.22, 0.23),
    "fundus": (0.38, 0.19, 0.20, 0.13, 0.10),
}
_CXR_PREVALENCE = (0.30, 0.25, 0.20)
_CXR_LOADING = (0.55, 0.50, 0.25)  # loading of each label's latent on the shared factor
_DERM_PAIR_FRACTION = 0.12  # fraction of derm images that belong to a two-image lesion
# The demo's patient attributes, drawn from a stream of their own (its last seed word) and independent of the
# labels and images, so adding them changed no image and no number of the demo: sex, and the age in three bands.
_ATTRIBUTE_STREAM = 9157
DEMO_AGE_BANDS = (50.0, 70.0)
DEMO_AGES = (20, 90)  # uniform over these years



@dataclass(frozen=True)
class SyntheticSpec:
    """Everything that determines a synthetic dataset; equal specs give byte-identical data.

    `signal` scales the label-dependent part of the appearance (1 = the tuned default,
    0 = images independent of labels, >1 easier); `nuisance` scales label-independent variation
    (pose, tone, illumination, hairs, noise).
    """

    specialty: str
    site: str = "A"
    n_train: int = 700
    n_val: int = 100
    n_test: int = 300
    image_size: int = 64
    seed: int = 0
    signal: float = 1.0
    nuisance: float = 1.0

    def __post_init__(self) -> None:
        if self.specialty not in SPECIALTIES:
            raise DataError(f"synthetic dataset: specialty must be one of {SPECIALTIES}, got {self.specialty!r}")
        if self.site not in SITES:
            raise DataError(f"synthetic dataset: site must be one of {SITES}, got {self.site!r}")
        for name in ("n_train", "n_val", "n_test"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise DataError(f"synthetic dataset: {name} must be a non-negative integer, got {value!r}")
        if not isinstance(self.image_size, (int, np.integer)) or self.image_size < 16:
            raise DataError(f"synthetic dataset: image_size must be an integer >= 16, got {self.image_size!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise DataError(f"synthetic dataset: seed must be a non-negative integer, got {self.seed!r}")
        if self.signal < 0 or self.nuisance < 0:
            raise DataError("synthetic dataset: signal and nuisance must be >= 0")

    def size_of(self, split: str) -> int:
        return {"train": self.n_train, "val": self.n_val, "test": self.n_test}[split]


class DemoOptions(KindOptions):
    """The `demo` kind's options: a specialty and site, then any `SyntheticSpec` field."""

    specialty: Literal["derm", "fundus", "cxr"]
    # the defaults are SyntheticSpec's own, so the two cannot drift apart
    site: Literal["A", "B"] = SyntheticSpec.site
    n_train: int = SyntheticSpec.n_train
    n_val: int = SyntheticSpec.n_val
    n_test: int = SyntheticSpec.n_test
    image_size: int = SyntheticSpec.image_size
    seed: int = SyntheticSpec.seed
    signal: Number = SyntheticSpec.signal
    nuisance: Number = SyntheticSpec.nuisance


class SyntheticDataset(DatasetKind):
    """A `Dataset` whose images are drawn procedurally from a `SyntheticSpec`.

    Built from `DemoOptions` or its fields (`SyntheticDataset(specialty="derm")`), or from a spec.
    """

    info: ClassVar[DatasetInfo] = DatasetInfo(
        title="Synthetic demo", summary="derm / fundus / cxr look-alikes, sites A and B, generated on the fly",
        licence="CC0", layout="none: images are drawn in memory", access="none needed",
    )
    Options: ClassVar[type[KindOptions]] = DemoOptions
    options: DemoOptions

    @classmethod
    def options_from(cls, args: tuple, kwargs: dict) -> DemoOptions:
        if len(args) == 1 and not kwargs and isinstance(args[0], SyntheticSpec):
            # a spec has checked itself and holds exactly the options' fields: its values are kept as they are
            return cls.Options.model_construct(**asdict(args[0]))
        return super().options_from(args, kwargs)

    def _build(self) -> None:
        self.spec = SyntheticSpec(**dict(self.options))  # its checks name a bad count, seed or size
        self.meta = self.info_for(self.options).to_meta(
            description=_DESCRIPTIONS[self.spec.specialty] + _SITE_NOTES[self.spec.site], source="generated by crsbench",
        )
        self._splits: dict[str, SplitData] = {}

    @classmethod
    def info_for(cls, options: DemoOptions) -> DatasetInfo:
        return _info(options.specialty, options.site)

    def __repr__(self) -> str:
        return f"SyntheticDataset({self.spec!r})"

    def fingerprint(self) -> str:
        return sha256_of("crsbench-synthetic", GENERATOR_VERSION, json.dumps(asdict(self.spec), sort_keys=True))

    def split(self, name: str) -> SplitData:
        if name not in SPLITS:
            raise DataError(f"dataset {self.meta.name!r}: unknown split {name!r}; known: {', '.join(SPLITS)}")
        if name not in self._splits:
            self._splits[name] = _generate_split(self.spec, name)
        return self._splits[name]


def _info(specialty: str, site: str) -> DatasetInfo:
    task_type, class_names, modality = _TASKS[specialty]
    name = f"demo-{specialty}" if site == "A" else f"demo-{specialty}-site{site}"
    return SyntheticDataset.info.but(name=name, task_type=task_type, class_names=class_names, modality=modality)


def demo_dataset(specialty: str, site: str = "A", **overrides) -> SyntheticDataset:
    """Registry-friendly constructor: `demo_dataset("fundus", site="B", n_train=300, seed=1)`."""
    return SyntheticDataset(SyntheticSpec(specialty=specialty, site=site, **overrides))


# ----------------------------------------------------------------------------------------------
# generation entry point


@lru_cache(maxsize=12)  # shared by equal specs across instances; each instance also keeps its own
def _generate_split(spec: SyntheticSpec, split: str) -> SplitData:
    n = spec.size_of(split)
    rng = np.random.default_rng(
        [int(spec.seed), SPECIALTIES.index(spec.specialty), SITES.index(spec.site), SPLITS.index(split), 7321]
    )
    prefix = f"{spec.specialty}-{spec.site}-{split}"
    ids = np.array([f"{prefix}-{i:06d}" for i in range(n)])
    groups = ids.copy()
    if spec.specialty == "derm":
        labels = _stratified_labels(rng, n, _PRIORS["derm"])
        lesion_of = _derm_pairs(rng, labels)
        groups = ids[lesion_of]
        images = render_derm(rng, labels, lesion_of, spec)
    elif spec.specialty == "fundus":
        labels = _stratified_labels(rng, n, _PRIORS["fundus"])
        images = render_fundus(rng, labels, spec)
    else:
        labels = _cxr_labels(rng, n)
        images = render_cxr(rng, labels, spec)
    attributes = demo_attributes(spec, split, groups)
    for array in (ids, labels, groups, images, *attributes.values()):
        array.setflags(write=False)  # the split is cached and shared: keep it immutable
    return SplitData(ids=ids, images=ArrayImages(images), labels=labels, groups=groups, subgroups=attributes)


def demo_attributes(spec: SyntheticSpec, split: str, groups: np.ndarray) -> dict[str, np.ndarray]:
    """Sex and age band per case, one per patient (the two images of a lesion share them), from the
    attribute stream: no draw of the images' or labels' stream is taken or moved."""
    rng = np.random.default_rng(
        [int(spec.seed), SPECIALTIES.index(spec.specialty), SITES.index(spec.site), SPLITS.index(split),
         _ATTRIBUTE_STREAM]
    )
    patients, first = np.unique(groups, return_inverse=True)
    sex = np.where(rng.random(len(patients)) < 0.5, "F", "M")
    ages = rng.uniform(*DEMO_AGES, size=len(patients))
    bands = np.array([band_of(a, DEMO_AGE_BANDS) for a in ages], dtype=str)
    return {"sex": sex[first].astype(str), "age_band": bands[first] if len(bands) else bands}


# ----------------------------------------------------------------------------------------------
# labels


def _stratified_labels(rng: np.random.Generator, n: int, priors: tuple[float, ...]) -> np.ndarray:
    """Class counts by largest remainder (at least one per class when n allows), shuffled."""
    p = np.asarray(priors, dtype=float)
    k = len(p)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    raw = n * p
    counts = np.floor(raw).astype(int)
    if n >= k:
        counts = np.maximum(counts, 1)
    while counts.sum() > n:  # only after the min-1 bump: take from the largest
        counts[np.argmax(counts)] -= 1
    order = np.argsort(-(raw - np.floor(raw)), kind="stable")
    i = 0
    while counts.sum() < n:
        counts[order[i % k]] += 1
        i += 1
    labels = np.repeat(np.arange(k, dtype=np.int64), counts)
    return rng.permutation(labels)


def _derm_pairs(rng: np.random.Generator, labels: np.ndarray) -> np.ndarray:
    """`lesion_of[i]`: the image whose lesion image i shows (itself, or its pair's first image)."""
    n = len(labels)
    lesion_of = np.arange(n)
    n_pairs = int(round(_DERM_PAIR_FRACTION * n / 2))
    if n_pairs == 0:
        return lesion_of
    # pair images of the same class, picked at random, about in proportion to class size
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        share = min(int(round(n_pairs * len(members) / n)), len(members) // 2)
        for j in range(share):
            first, second = sorted((members[2 * j], members[2 * j + 1]))
            lesion_of[second] = first
    return lesion_of


def _cxr_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    from scipy.stats import norm

    k = len(_CXR_PREVALENCE)
    shared = rng.standard_normal(n)
    loading = np.asarray(_CXR_LOADING)
    latent = shared[:, None] * loading + rng.standard_normal((n, k)) * np.sqrt(1 - loading**2)
    thresholds = norm.ppf(1 - np.asarray(_CXR_PREVALENCE))
    labels = (latent > thresholds).astype(np.float32)
    if n >= 2:  # every label needs a positive and a negative in every split
        for j in range(k):
            if labels[:, j].min() == labels[:, j].max():
                labels[rng.integers(n), j] = 1.0 - labels[0, j]
    return labels
