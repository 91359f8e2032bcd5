"""Which embeddings of this cohort the cache already holds, before planning: those cost no encoding.

Looked up by the run's own keys (`Needed.request(...).key()`, the key the embedding step reads and
writes) and the cache's own presence check (`EmbeddingCache.has`, the one the run uses to decide what
to extract), so the plan counts as cached exactly what the run will not encode. No image is read:
a key needs the encoder's fingerprint and the dataset's, not pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

from crsbench.plan.conditions import CLEAN, Condition
from crsbench.datasets.base import Dataset
from crsbench.embed.cache import EmbeddingCache
from crsbench.encoders.base import Encoder
from crsbench.run.resolve import Resolved
from crsbench.plan.perturbation_choice import perturbation_conditions
from crsbench.selection.budget import CachedEmbeddings
from crsbench.selection.compose import TASK_NAME
from crsbench.plan.suite import PerturbationsSpec
from crsbench.run.task_data import Needed


def open_existing_cache(root: Path) -> Optional[EmbeddingCache]:
    """The cache at `root`, or None when there is none yet (looking must not create one)."""
    return EmbeddingCache(root) if Path(root).is_dir() else None


def cached_embeddings(cache: Optional[EmbeddingCache], encoders: Mapping[str, Encoder], dataset: Dataset,
                      shift: Optional[Dataset], perturbations: Sequence[str],
                      severities: Sequence[int]) -> dict[str, CachedEmbeddings]:
    """By encoder label: the clean splits and the (perturbation, severity) test copies of the cohort,
    among those the composed suite may read, that `cache` holds."""
    if cache is None:
        return {label: CachedEmbeddings() for label in encoders}
    resolved = Resolved(dict(encoders), {TASK_NAME: dataset}, {TASK_NAME: shift} if shift is not None else {},
                        {TASK_NAME: None} if shift is not None else {})
    # the composed suite leaves the perturbation seed at its default
    conditions = perturbation_conditions(perturbations, severities, PerturbationsSpec().seed)
    # what each clean split is read as: the shift set's is the shift dataset's clean test split
    clean = {"train": ("train", CLEAN), "val": ("val", CLEAN), "test": ("test", CLEAN)}
    if shift is not None:
        clean["shift"] = ("test", Condition.shift(shift.meta.name))

    def held(label: str, split: str, condition: Condition) -> bool:
        return cache.has(Needed(label, TASK_NAME, split, condition).request(resolved).key())

    return {
        label: CachedEmbeddings(
            frozenset(name for name, (split, condition) in clean.items() if held(label, split, condition)),
            frozenset((c.name, c.severity) for c in conditions if held(label, "test", c)),
        )
        for label in encoders
    }
