"""What a dataset kind declares before any data is read: its metadata and its options.

A kind is a class with class-level members:

- `info`: a `DatasetInfo` with what holds for every dataset of the kind (licence, layout, access, and
  task type / classes / modality where they are fixed);
- `Options`: a pydantic model of its options (unknown options refused by name). It is the kind's one
  parameter list: the constructor takes the model, or its fields by name or by position (in declaration
  order), and every setting is read from `self.options`, so no second list of defaults can drift from it;
- `info_for(options)`: the info of one dataset, computed from its options alone (no file is opened), so a
  suite can be planned and validated without reading data. A field the data alone decides (a folder's
  classes read from its CSV) stays None here and is known once the dataset is built; the built dataset's
  `meta` is `info_for(options).to_meta(...)` plus those fields, so name, task type, classes, modality and
  licence are written once;
- `from_options(options)`: builds the dataset (this is where files are read).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, model_validator

from crsbench.datasets.base import DatasetMeta
from crsbench.errors import DataError

PathLike = Union[str, Path]


def _modality(name: str) -> str:
    from crsbench.core.modalities import canonical_modality

    try:
        return canonical_modality(name, "modality")
    except DataError as error:  # pydantic reports a ValueError as this field's error
        raise ValueError(str(error).removeprefix("modality: ")) from None


# a `modality:` option: the one vocabulary, old spellings (xray, other) read as aliases
ModalityName = Annotated[str, AfterValidator(_modality)]
Number = Union[int, float]  # an int stays an int: option values feed dataset fingerprints as given


@dataclass(frozen=True)
class DatasetInfo:
    name: Optional[str] = None  # the name records carry; None: the kind gives it from options
    task_type: Optional[str] = None  # None: read from the data
    class_names: Optional[tuple[str, ...]] = None  # None: read from the data
    modality: str = "generic"  # dermoscopy | fundus | chest_xray | generic: picks perturbation sets
    licence: str = ""
    layout: str = ""  # what files it reads
    access: str = ""  # how to obtain them
    title: str = ""
    summary: str = ""  # one line: specialty, classes, grouping
    env_var: str = ""  # where the data is found when no `root` option is given

    def but(self, **changes: Any) -> "DatasetInfo":
        return replace(self, **changes)

    def to_meta(self, description: str = "", source: str = "", **known: Any) -> DatasetMeta:
        """The built dataset's meta: this declaration plus what the data adds (`known`, e.g. the classes a
        folder's CSV names). Raises ValueError as `DatasetMeta` does (a caller names its file)."""
        declared = {"name": self.name, "task_type": self.task_type, "class_names": self.class_names,
                    "modality": self.modality, "licence": self.licence}
        fields = {**declared, **known}
        unknown = [name for name, value in fields.items() if value is None]
        if unknown:  # a kind that leaves a field to the data must pass it here
            raise ValueError(f"dataset {fields['name']!r}: {', '.join(unknown)} neither declared nor read from the data")
        return DatasetMeta(description=description, source=source, **fields)


class KindOptions(BaseModel):
    """Base of every kind's options model: frozen, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


IMAGE_SIZE_REMOVED = (
    "image_size was removed: images are no longer stored at one size; each encoder's input is made from the "
    "original in one resize by its own card's rule. Drop the option, or set max_side to cap very large files"
)


class FileKindOptions(KindOptions):
    """Options of kinds that decode image files: `image_size` is refused by name.

    Each such kind declares `max_side` (None: the original; caps decoding) where it falls in its own
    parameter order: fields map onto positional arguments in declaration order, and a field declared
    here would come before `root`.
    """

    @model_validator(mode="before")
    @classmethod
    def _no_image_size(cls, data: Any) -> Any:
        if isinstance(data, dict) and "image_size" in data:
            raise ValueError(IMAGE_SIZE_REMOVED)
        return data


MaxSide = Optional[int]  # the type of every file kind's `max_side`


def first_problem(error: ValidationError) -> tuple[tuple, str]:
    """The option to name for a failed validation, and what is wrong with it (one line)."""
    # a misspelt option also leaves a required one missing: the misspelling is the better hint
    first = min(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    return tuple(first["loc"]), first["msg"].removeprefix("Value error, ")


def bad_options(who: str, location: tuple, message: str) -> DataError:
    where = "".join(f"{part}: " for part in location)  # a whole-model check names no field
    return DataError(f"{who}: bad options: {where}{message}")


class DatasetKind:
    """Base giving a dataset class the kind interface; subclasses set `info` and `Options` and implement
    `_build()`, which reads what `self.options` names."""

    info: ClassVar[DatasetInfo] = DatasetInfo()
    Options: ClassVar[type[KindOptions]] = KindOptions
    options: KindOptions  # this dataset's settings, validated: the only place a kind reads them from

    def __init__(self, *args: Any, **kwargs: Any):
        self.options = type(self).options_from(args, kwargs)
        self._build()

    def _build(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement _build()")

    @classmethod
    def options_from(cls, args: tuple, kwargs: dict[str, Any]) -> KindOptions:
        """The options model of a constructor call: the model itself, or its fields by name and, in
        declaration order, by position. A bad option is a one-line DataError naming it."""
        if len(args) == 1 and not kwargs and isinstance(args[0], KindOptions):
            if not isinstance(args[0], cls.Options):
                raise TypeError(f"{cls.__name__} takes {cls.Options.__name__}, got {type(args[0]).__name__}")
            return args[0]
        names = list(cls.Options.model_fields)
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__} takes at most {len(names)} options by position ({', '.join(names)}), "
                            f"got {len(args)}")
        by_position = dict(zip(names, args))
        twice = [name for name in by_position if name in kwargs]
        if twice:
            raise TypeError(f"{cls.__name__} got option {twice[0]!r} both by position and by name")
        try:
            return cls.Options.model_validate({**by_position, **kwargs})
        except ValidationError as error:
            raise bad_options(cls.__name__, *first_problem(error)) from None

    @classmethod
    def info_for(cls, options: KindOptions) -> DatasetInfo:
        return cls.info

    @classmethod
    def from_options(cls, options: KindOptions):
        if cls.__init__ is DatasetKind.__init__:  # the model is the constructor's parameter list
            return cls(options)
        # a kind with a constructor of its own: only the options given, so its own defaults apply to the rest
        return cls(**options.model_dump(exclude_unset=True))
