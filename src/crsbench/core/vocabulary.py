"""The words every stage shares, defined once: task types, condition kinds and split names."""

from __future__ import annotations

from typing import Literal, get_args

TaskType = Literal["single_label", "multi_label", "ordinal"]
ConditionKind = Literal["clean", "perturbation", "shift"]
SplitName = Literal["train", "val", "test"]

TASK_TYPES: tuple[str, ...] = get_args(TaskType)
CONDITION_KINDS: tuple[str, ...] = get_args(ConditionKind)
SPLITS: tuple[str, ...] = get_args(SplitName)
