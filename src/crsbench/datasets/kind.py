"""What a dataset kind declares before any data is read: its metadata and its options.

A kind is a class with class-level members:

- `info`: a `DatasetInfo` with what holds for every dataset of the kind (licence, layout, access, and
  task type / classes / modality where they are fixed);
- `Options`: a pydantic model of its options (unknown options rejected by name);
- `info_for(options)`: the info of one dataset, computed from its options alone (no file is opened), so a
  suite can be planned and validated without reading data. A field the data alone decides (a folder's
  classes read from its CSV) stays None here and is known once the dataset is built;
- `from_options(options)`: builds the dataset (this is where files are read).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, Optional, Union

from pydantic import BaseModel, ConfigDict, model_validator

PathLike = Union[str, Path]
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


class KindOptions(BaseModel):
    """Base of every kind's options model: frozen, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


IMAGE_SIZE_REMOVED = (
    "image_size was removed: images are no longer stored at one size; each encoder's input is made from the "
    "original in one resize by its own card's rule. Drop the option, or set max_side to cap very large files"
)


class FileKindOptions(KindOptions):
    """Options of kinds that decode image files: `max_side` caps decoding; `image_size` is refused by name."""

    max_side: Optional[int] = None

    @model_validator(mode="before")
    @classmethod
    def _no_image_size(cls, data: Any) -> Any:
        if isinstance(data, dict) and "image_size" in data:
            raise ValueError(IMAGE_SIZE_REMOVED)
        return data


class DatasetKind:
    """Mixin giving a dataset class the kind interface; subclasses set `info` and `Options`."""

    info: ClassVar[DatasetInfo] = DatasetInfo()
    Options: ClassVar[type[KindOptions]] = KindOptions

    @classmethod
    def info_for(cls, options: KindOptions) -> DatasetInfo:
        return cls.info

    @classmethod
    def from_options(cls, options: KindOptions):
        # only the options given, so the constructor's own defaults apply to the rest
        return cls(**options.model_dump(exclude_unset=True))
