"""The cohort checks of `cohort_checks`, run on a built dataset, each failure one line naming the file
and the rows: an unreadable image, a class held by too few patients, too few images for a fraction."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import UnidentifiedImageError

from crsbench.core.vocabulary import SPLITS
from crsbench.run.class_support import check_class_support, split_class_counts
from crsbench.datasets.image_files import open_image
from crsbench.errors import DataError
from crsbench.selection.cohort_checks import (
    MIN_GROUPS_PER_CLASS,
    MIN_PER_CLASS,
    fraction_shortfalls,
    thin_classes,
)
from crsbench.selection.source import Cohort

SHOWN = 5
# Decoding for the check only: a JPEG is decoded at its smallest DCT scale, which still reads every byte of
# it (a truncated file fails), at a fraction of the full decode's cost; other formats decode in full.
CHECK_SIDE = 8


def _shown(items: Sequence[str]) -> str:
    return ", ".join(items[:SHOWN]) + (", ..." if len(items) > SHOWN else "")


def located(cohort: Cohort, image_ids) -> str:
    """`line 4` / `lines 3, 5, 7, ...` of a CSV; `train rows 3, 5; val row 2` / `rows 3, 5` of arrays."""
    places = [cohort.row(str(i)) for i in image_ids]
    if cohort.csv is not None:
        return f"line{'s' if len(places) > 1 else ''} {_shown(places) or 'none'}"
    by_part: dict[str, list[str]] = {}
    for place in places:
        part, _, index = place.rpartition(" ")
        by_part.setdefault(part, []).append(index)
    return "; ".join(f"{part}{'s' if len(indices) > 1 else ''} {_shown(indices)}"
                     for part, indices in by_part.items()) or "no rows"


def check_images_readable(cohort: Cohort, dataset) -> int:
    """Every image file decodes in full, under the decompression-bomb guard: a truncated or corrupt file fails
    here, naming its CSV line, not an hour into the run."""
    files = getattr(dataset, "files", None)
    if files is None:
        return 0
    for image_id, path in zip(dataset.ids, files):
        where = cohort.where(str(image_id))
        try:
            with open_image(Path(path), CHECK_SIDE):
                pass
        except DataError as error:  # a bomb, named with its file
            raise DataError(f"{where}: {error}") from None
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as error:
            raise DataError(f"{where}: image {path} cannot be read "
                            f"({error.__class__.__name__}: {error})") from None
    return len(files)


def _all_splits(dataset):
    parts = [dataset.split(s) for s in SPLITS]
    return (np.concatenate([p.ids for p in parts]), np.concatenate([p.labels for p in parts]),
            np.concatenate([p.groups for p in parts]))


def check_groups(cohort: Cohort, dataset) -> None:
    if dataset.meta.task_type == "multi_label" or not cohort.group_column:
        return
    ids, labels, groups = _all_splits(dataset)
    thin = thin_classes(labels, groups, dataset.meta.class_names)
    if thin:
        first = thin[0]
        source = cohort.csv or cohort.path
        raise DataError(
            f"{source}: class '{first.name}' has images from only {len(first.groups)} patient(s) in column "
            f"'{cohort.group_column}' ({_shown(list(first.groups))}; at {located(cohort, ids[list(first.rows)])}): "
            "train, val and test "
            f"each need a patient of every class, so at least {MIN_GROUPS_PER_CLASS}; add patients, or merge or "
            "drop the class"
        )


def check_fractions(cohort: Cohort, dataset, fractions: Sequence[float]) -> None:
    """Requested label fractions: every class keeps MIN_PER_CLASS training images at the smallest."""
    if dataset.meta.task_type == "multi_label":
        return
    train = dataset.split("train")
    counts = np.bincount(train.labels, minlength=dataset.meta.n_classes)
    short = fraction_shortfalls(counts, dataset.meta.class_names, fractions)
    if short:
        s = short[0]
        cls = dataset.meta.class_names.index(s.name)
        source = cohort.csv or cohort.path
        rows = located(cohort, train.ids[train.labels == cls])
        raise DataError(
            f"{source}: class '{s.name}' has {s.train_images} training image(s) ({rows}); at "
            f"label fraction {s.fraction:g} the probe would see {s.kept}, fewer than {MIN_PER_CLASS}: drop that "
            "fraction from --fractions, or add images of the class"
        )


def check_cohort(cohort: Cohort, dataset, fractions: Sequence[float] | None) -> dict[str, np.ndarray]:
    """All checks in the order a user would fix them; returns the class counts per split."""
    check_images_readable(cohort, dataset)
    check_groups(cohort, dataset)
    counts = split_class_counts(dataset)
    check_class_support("cohort", dataset, counts)
    if fractions:
        check_fractions(cohort, dataset, fractions)
    return counts
