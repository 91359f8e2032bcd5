"""The evaluation condition: clean test images, a perturbation at one severity, or a shift dataset.

One value carries everything a condition means downstream: its name in records (kind, name, severity),
the image operation applied to a uint8 batch before the encoder's own preprocessing, and its key
material (`cache_id` for embedding caches, `record_material` for record keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Condition:
    kind: str  # clean | perturbation | shift
    name: str
    severity: int = 0
    seed: int = 0  # perturbations: image i depends only on (id, name, severity, seed)

    @classmethod
    def perturbation(cls, name: str, severity: int, seed: int = 0) -> "Condition":
        return cls("perturbation", name, int(severity), int(seed))

    @classmethod
    def shift(cls, dataset_name: str) -> "Condition":
        """Records name a shift by the dataset evaluated on: `shift:<dataset name>`."""
        return cls("shift", f"shift:{dataset_name}")

    @property
    def on_shift_data(self) -> bool:
        """True when the images are the shift dataset's test split, not the task's own."""
        return self.kind == "shift"

    def cache_id(self) -> str:
        """The image operation's identity in embedding cache keys; unaltered images are `clean`."""
        if self.kind != "perturbation":
            return "clean"
        from crsbench.perturbations.registry import get_perturbation

        spec = get_perturbation(self.name)
        # the parameter is part of the key, so retuning a severity invalidates its cached embeddings
        return f"perturb:{self.name}:s{self.severity}:p{spec.param(self.severity)!r}:seed{self.seed}"

    def apply(self, images, ids: Sequence[str]):
        """A uint8 batch (one array, or a list of images of different sizes) with the condition applied.

        Perturbations act on each image at its own resolution, with sizes relative to the image, so
        a severity means the same physical change whatever encoder's resize follows."""
        if self.kind != "perturbation":
            return images
        from crsbench.perturbations import perturb

        ids = list(ids)
        if isinstance(images, np.ndarray):
            return perturb(images, ids, self.name, self.severity, self.seed)
        out = list(images)
        from crsbench.encoders.pixels import group_by_shape

        for members in group_by_shape(images).values():
            done = perturb(np.stack([images[i] for i in members]), [ids[i] for i in members], self.name,
                           self.severity, self.seed)
            for i, image in zip(members, done):
                out[i] = image
        return out

    def record_material(self, shift_material: str = "") -> str:
        """What, beyond the task's own test split, a record's numbers depend on.

        `shift_material` identifies the resolved shift data (its fingerprint and label map); only the
        shift condition uses it, since a plan knows the shift dataset's name but not its content.
        """
        return {"clean": "", "perturbation": self.cache_id(), "shift": shift_material}[self.kind]

    def sort_key(self) -> tuple:
        return (self.kind, self.name, self.severity)


CLEAN = Condition("clean", "clean")
