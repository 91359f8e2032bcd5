"""Suite files: YAML validated with pydantic. A bad suite fails with one line naming file and field."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Optional, Union

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_serializer,
                      model_validator)

from crsbench.crs.definition import CRSConfig
from crsbench.encoders.spec import EncoderSpec
from crsbench.errors import SuiteError
from crsbench.core.safe_yaml import load_yaml, read_bounded

DEFAULT_FRACTIONS = (0.01, 0.05, 0.10, 0.25, 0.50, 1.0)
MAX_SEED = 2**32 - 1
PATH_OPTIONS = ("path", "root", "csv", "patients")  # dataset options resolved relative to the suite file
ENCODER_PATH_OPTIONS = ("weights",)  # encoder options resolved relative to the suite file
SUITE_PATHS = ("output", "cache")
SUBGROUP_OPTIONS = ("subgroups", "subgroups_key", "patients")  # dataset options that bring attributes only  # suite fields resolved relative to the suite file
_UNSET_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EncoderChoice(_Strict):
    """One encoder of a suite: a registry name, user code (`module:factory`), or an inline `spec`."""

    # module:factory only: the folder its module is imported from (what PYTHONPATH would have to hold);
    # `crsbench select` records it, so the suite it writes runs from the shell as it is
    python_path: Optional[str] = None  # first: `name` is imported with it
    name: Optional[str] = None
    spec: Optional[EncoderSpec] = None  # an inline encoder spec (the fields of crsbench.encoders.spec.EncoderSpec)
    options: dict[str, Any] = Field(default_factory=dict)
    label_: Optional[str] = Field(None, alias="label", pattern=r"^[A-Za-z0-9_.@=,-]+$")
    baseline: bool = False  # a floor baseline: scored, but left out of the rank statistics

    @field_validator("name")
    @classmethod
    def _known(cls, name: Optional[str], info: ValidationInfo) -> Optional[str]:
        from crsbench.encoders.registry import LOCAL_HINT, encoder_names, load_factory
        from crsbench.errors import EncoderError

        if name is None:
            return name
        if ":" in name:
            try:
                load_factory(name, info.data.get("python_path"))
            except EncoderError as error:
                raise ValueError(str(error)) from None
        elif name not in encoder_names():
            raise ValueError(f"unknown encoder {name!r}; known: {', '.join(encoder_names())}{LOCAL_HINT}")
        return name

    @model_validator(mode="after")
    def _one_source(self) -> "EncoderChoice":
        if (self.name is None) == (self.spec is None):
            raise ValueError("give exactly one of `name` (a registry name or module:factory) and `spec`")
        if self.python_path is not None and (self.name is None or ":" not in self.name):
            raise ValueError("python_path: only a module:factory encoder is imported from a folder")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        # an unused `name` or `spec` is left out, so a suite's hash does not change with this field's arrival
        # `baseline` is left out when false for the same reason
        return {
            k: v for k, v in handler(self).items()
            if not (k in ("name", "spec", "python_path") and v is None) and not (k == "baseline" and v is False)
        }

    @property
    def label(self) -> str:
        """Unique name in results: options that change the vectors are part of it unless labelled."""
        if self.label_:
            return self.label_
        base = self.name if self.spec is None else self.spec.name
        if not self.options:
            return base
        # a path option shows its last part: the folder it sits in belongs to this machine, not to the name
        # (the weights' identity is in the encoder's revision; two files of one name need labels)
        shown = {k: (_last_part(v) if k in ENCODER_PATH_OPTIONS else v) for k, v in self.options.items()}
        return base + "@" + ",".join(f"{k}={v}" for k, v in sorted(shown.items()))

    def build(self):
        """The encoder, with the suite's options."""
        from crsbench.encoders.registry import add_import_root, build_encoder, get_encoder

        if self.spec is not None:
            return build_encoder(self.spec, **self.options)
        if self.python_path is not None:
            add_import_root(self.name, self.python_path)
        return get_encoder(self.name, **self.options)


def _last_part(value: Any) -> Any:
    """A path's last component (`/models/derm/vit.pt` -> `vit.pt`); anything else as it is."""
    if not isinstance(value, str):
        return value
    return Path(value.rstrip("/\\")).name or value


class DatasetSpec(BaseModel):
    """`kind` picks a dataset family; every other field is an option, checked against the kind's model."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        from crsbench.datasets.registry import known_dataset_kinds as dataset_kinds

        if kind not in dataset_kinds():
            raise ValueError(f"unknown dataset kind {kind!r}; known: {', '.join(dataset_kinds())}")
        return kind

    @model_validator(mode="after")
    def _options(self) -> "DatasetSpec":
        from crsbench.datasets.registry import parse_options

        parse_options(self.kind, self.options())  # an OptionError names the option
        return self

    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def info(self):
        """The dataset's `DatasetInfo` (name, task type, classes, modality), from the suite alone."""
        from crsbench.datasets.registry import info_for

        return info_for(self.kind, self.options())


def check_perturbation_selection(select):
    """auto, none, a modality's set, or a list of perturbation names."""
    from crsbench.core.modalities import ALIASES
    from crsbench.perturbations.names import MODALITIES, PERTURBATION_NAMES as PERTURBATIONS  # no torch

    select = ALIASES.get(select, select) if isinstance(select, str) else select  # old spellings still read
    if isinstance(select, str) and select not in ("auto", "none", *MODALITIES):
        raise ValueError(f"unknown perturbation set {select!r}; use auto, none, a list of names, or one of {MODALITIES}")
    if isinstance(select, list):
        unknown = [name for name in select if name not in PERTURBATIONS]
        if unknown:
            raise ValueError(f"unknown perturbations {unknown}; known: {', '.join(sorted(PERTURBATIONS))}")
    return select


class TaskSpec(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    dataset: DatasetSpec
    shift: Optional[DatasetSpec] = None
    # shift class name -> task class name, when the shift dataset names its classes differently
    shift_label_map: Optional[dict[str, str]] = None
    perturbations: Optional[Union[str, list[str]]] = None  # overrides the suite's selection for this task

    @field_validator("perturbations")
    @classmethod
    def _perturbations(cls, select):
        return None if select is None else check_perturbation_selection(select)


class PerturbationsSpec(_Strict):
    """Acquisition perturbations of the test split, scored at 100% labels."""

    select: Union[str, list[str]] = "auto"  # auto: the dataset's modality set; or a modality; or names
    severities: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5], min_length=1)
    seed: int = 0

    @field_validator("severities")
    @classmethod
    def _severities(cls, severities: list[int]) -> list[int]:
        if any(s not in (1, 2, 3, 4, 5) for s in severities):
            raise ValueError("severities must be between 1 and 5")
        return sorted(set(severities))

    @field_validator("select")
    @classmethod
    def _known(cls, select):
        return check_perturbation_selection(select)


class ProbeSpec(_Strict):
    c_grid: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
    max_iter: int = Field(1000, gt=0)
    tol: float = Field(1e-4, gt=0)

    @field_validator("c_grid")
    @classmethod
    def _positive(cls, grid: tuple[float, ...]) -> tuple[float, ...]:
        if not grid or any(not math.isfinite(c) or c <= 0 for c in grid):
            raise ValueError("must be a non-empty list of positive, finite numbers")
        return tuple(sorted(set(grid)))


class ExecutorSpec(_Strict):
    """Where the work runs. Never part of the suite hash or a record key: records are the same
    whatever runs them (docs/scale-out.md says what "the same" means)."""

    kind: str = "local"  # local (in this process) | ray (a Ray cluster; pip install 'crsbench[ray]')
    address: Optional[str] = None  # ray: a cluster address, or `auto` for the cluster this node belongs to
    shard_images: Optional[int] = Field(None, gt=0)  # ray: images per extraction task (default 4096)
    threads: Optional[int] = Field(None, gt=0)  # torch/BLAS threads per task (default: this process's)
    max_retries: int = Field(3, ge=0)  # ray: reruns of a task whose worker died

    @field_validator("kind")
    @classmethod
    def _known(cls, kind: str) -> str:
        from crsbench.executors import EXECUTORS

        if kind not in EXECUTORS:
            raise ValueError(f"unknown executor {kind!r}; known: {', '.join(EXECUTORS)}")
        return kind

    @model_validator(mode="after")
    def _address_for_ray(self) -> "ExecutorSpec":
        if self.kind == "local" and self.address is not None:
            raise ValueError("address: only the ray executor connects to a cluster")
        return self


MAX_REFITS = 64
# The training-sample term is a t with K - 1 degrees of freedom: two refits would give t(1), a Cauchy whose
# 97.5 % quantile is 12.7 (6.5 times the normal's); three give t(2), 4.30; four, the advised count, t(3),
# 3.18. A task with fewer complete refits gets no term, named in every output (scoring/refits.py).
MIN_REFITS = 3


class Suite(_Strict):
    name: str
    output: str = "crsbench-results"
    cache: Optional[str] = None
    reference: Optional[str] = None
    encoders: list[EncoderChoice] = Field(min_length=1)
    tasks: list[TaskSpec] = Field(min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2, 3, 4], min_length=1)
    fractions: list[float] = Field(default_factory=lambda: list(DEFAULT_FRACTIONS), min_length=1)
    # probes refit at 100 % labels on paired bootstrap resamples of the training split: what puts the spread
    # over training samples inside the intervals (docs/bootstrap.md, "Training samples"); 0: none, the
    # intervals then cover these fitted probes only
    refits: int = Field(0, ge=0, le=MAX_REFITS)
    probe: ProbeSpec = ProbeSpec()
    perturbations: Optional[PerturbationsSpec] = None  # none: clean and shift conditions only
    batch_size: int = Field(32, gt=0)
    num_workers: int = Field(0, ge=0)  # DataLoader workers preparing batches; 0 on small CPUs
    crs: Optional[CRSConfig] = None  # anchors, scales, weights of the score (crs.CRSConfig); None: the defaults
    executor: ExecutorSpec = ExecutorSpec()  # where the work runs; changes no record

    @field_validator("refits")
    @classmethod
    def _a_t_term_or_none(cls, refits: int) -> int:
        if 0 < refits < MIN_REFITS:  # fewer would leave every task without its term
            raise ValueError(f"refits is {refits}: give 0 (none) or at least {MIN_REFITS}; with {refits} the training-sample "
                             f"term's t would have {refits - 1} degree(s) of freedom, so it is not drawn")
        return refits

    @field_validator("encoders", mode="before")
    @classmethod
    def _bare_names(cls, encoders: Any) -> Any:
        """`- raw-pixels` is short for `- {name: raw-pixels}`."""
        if isinstance(encoders, list):
            return [{"name": e} if isinstance(e, str) else e for e in encoders]
        return encoders

    @field_validator("fractions")
    @classmethod
    def _fractions(cls, fractions: list[float]) -> list[float]:
        if any(not 0 < f <= 1 for f in fractions):
            raise ValueError("every label fraction must be in (0, 1]")
        if 1.0 not in fractions:
            raise ValueError("must include 1.0: the discrimination and calibration axes are read at full labels")
        return sorted(set(fractions))

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, seeds: list[int]) -> list[int]:
        out_of_range = [s for s in seeds if not 0 <= s <= MAX_SEED]
        if out_of_range:
            # the probe's solver takes a 32-bit seed, and the store an SQLite integer
            raise ValueError(f"seeds must be integers from 0 to {MAX_SEED}, got {out_of_range}")
        repeated = sorted({s for s in seeds if seeds.count(s) > 1})
        if repeated:
            raise ValueError(f"seeds must be distinct, {repeated} repeated")
        return seeds

    @model_validator(mode="after")
    def _unique_names(self) -> "Suite":
        labels = [e.label for e in self.encoders]
        for what, names in (("encoders", labels), ("tasks", [t.name for t in self.tasks])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{what}: duplicate names {dupes}")
        if self.reference is not None and self.reference not in labels:
            raise ValueError(f"reference: {self.reference!r} is not one of the suite's encoders {labels}")
        return self

    @property
    def baselines(self) -> list[str]:
        """Labels of the encoders marked `baseline: true`."""
        return [e.label for e in self.encoders if e.baseline]

    def crs_config(self, **overrides: Any) -> CRSConfig:
        """The suite's CRS settings (defaults where it has no `crs:` block), with `overrides` applied."""
        base = self.crs.model_dump(exclude_unset=True) if self.crs is not None else {}
        return CRSConfig(**{**base, **overrides})

    def suite_hash(self) -> str:
        """Hash of what is run: the score settings (`crs`, `baseline`) and where it runs (`executor`)
        change no record and are left out."""
        data = self.model_dump(mode="json", exclude={"crs", "executor"})
        if not data["refits"]:
            del data["refits"]  # a suite without refits keeps the hash it had before they existed
        for encoder in data["encoders"]:
            encoder.pop("baseline", None)
            encoder.pop("python_path", None)  # where the code lives on this machine, not what is run
        for task in data["tasks"]:
            for role in ("dataset", "shift"):
                if isinstance(task.get(role), dict):  # subgroup attributes change no record (datasets.subgroups)
                    for option in SUBGROUP_OPTIONS:
                        task[role].pop(option, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _resolve_paths(raw: dict, base: Path) -> dict:
    """Make every path field relative to the suite file, so a suite runs from anywhere.

    Path fields: `output`, `cache`, each encoder's `weights` option, each dataset's `path`, `root` and
    `csv`. `${VARS}` and `~` are expanded in those fields only: names (of the suite, tasks, encoders) are
    stored exactly as written.
    """
    out = dict(raw)
    for key in SUITE_PATHS:
        out[key] = _path(out.get(key), base, key)
    if isinstance(out.get("encoders"), list):
        out["encoders"] = [_resolve_encoder(encoder, base, f"encoders.{i}") for i, encoder in enumerate(out["encoders"])]
    if isinstance(out.get("tasks"), list):
        out["tasks"] = [
            {**task, **{role: _resolve_options(task[role], PATH_OPTIONS, base, f"tasks.{i}.{role}", strict=False)
                        for role in ("dataset", "shift") if isinstance(task.get(role), dict)}}
            if isinstance(task, dict) else task
            for i, task in enumerate(out["tasks"])
        ]
    return {k: v for k, v in out.items() if v is not None or k in raw}


def _resolve_encoder(encoder: Any, base: Path, field: str) -> Any:
    if isinstance(encoder, str) and ":" in encoder:
        encoder = {"name": encoder}
    if isinstance(encoder, dict) and isinstance(encoder.get("python_path"), str):
        encoder = {**encoder, "python_path": _path(encoder["python_path"], base, f"{field}.python_path")}
    elif isinstance(encoder, dict) and _beside(encoder.get("name"), base):
        # user code next to the suite file is found without PYTHONPATH: the suite's folder is its import root
        encoder = {**encoder, "python_path": str(base)}
    if not isinstance(encoder, dict) or not isinstance(encoder.get("options"), dict):
        return encoder
    options = encoder["options"]
    resolved = _resolve_options(options, ENCODER_PATH_OPTIONS, base, f"{field}.options")
    return encoder if resolved == options else {**encoder, "options": resolved}


def _beside(name: Any, base: Path) -> bool:
    """A module:factory whose top-level module is a file or package in the suite's own folder."""
    if not isinstance(name, str) or ":" not in name:
        return False
    top = name.partition(":")[0].split(".")[0]
    return bool(top) and ((base / f"{top}.py").is_file() or (base / top / "__init__.py").is_file())


def _resolve_options(options: dict, keys: tuple[str, ...], base: Path, field: str, strict: bool = True) -> dict:
    return {k: _path(v, base, f"{field}.{k}", strict) if k in keys else v for k, v in options.items()}


class UnsetVariable(ValueError):
    """A path field names an environment variable that is not set."""


def _path(value: Any, base: Path, field: str, strict: bool = True) -> Any:
    """A path field: variables and ~ expanded, then relative paths taken from `base`. An unset ${VAR} in
    a path the run writes or reads itself (output, cache, weights) is an error naming the field and the
    variable, else a folder literally named `${VAR}` would be written; in a dataset path it stays as
    written, so a suite of datasets not on this machine still validates and plans, and the dataset names
    the variable when it is read."""
    if not isinstance(value, str):
        return value
    expanded = os.path.expanduser(os.path.expandvars(value))
    unset = _UNSET_VARIABLE.search(expanded)
    if unset and not strict:
        return expanded
    if unset:
        raise UnsetVariable(f"{field}: {value!r} names {unset.group(0).lstrip('$').strip('{}')}, which is not set "
                            "in the environment")
    if Path(expanded).is_absolute():
        return expanded
    return str(base / expanded)


def _field_path(location: tuple) -> str:
    return ".".join(str(part) for part in location)


def parse_suite(data: Any, source: str = "<suite>", base: Path | None = None) -> Suite:
    if not isinstance(data, dict):
        raise SuiteError(f"{source}: a suite must be a mapping with at least 'name', 'encoders' and 'tasks'")
    try:
        data = _resolve_paths(data, base or Path.cwd())
    except UnsetVariable as error:
        raise SuiteError(f"{source}: {error}") from None
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        location, message = first["loc"], first["msg"].removeprefix("Value error, ")
        nested = first.get("ctx", {}).get("error")
        if hasattr(nested, "location"):  # a dataset option: name the option itself
            location, message = (*location, *nested.location), nested.message
        field = _field_path(location) or "(suite)"
        extra = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise SuiteError(f"{source}: {field}: {message}{extra}") from None


def load_suite(path: str | Path, base: Path | None = None) -> Suite:
    """A suite file; its path fields are relative to its folder (or to `base` when given)."""
    path = Path(path)
    return parse_suite(load_yaml(read_bounded(path), str(path)), source=str(path), base=base or path.resolve().parent)
