"""The arrays one (encoder, task) pair needs, from the embedding cache: the training data for every
fit, and the evaluation set of one condition at a time (the caller holds at most one)."""

from __future__ import annotations

from dataclasses import dataclass

from crsbench.plan.conditions import CLEAN, Condition
from crsbench.embed.cache import CachedEmbedder, Embedding, EmbeddingRequest
from crsbench.run.evaluate import EvalSet, TrainingData
from crsbench.results.predictions import CaseSet, case_set_of
from crsbench.run.resolve import Resolved
from crsbench.run.shift import align_shift_labels


@dataclass(frozen=True)
class Needed:
    """One embedding matrix a pair reads, named by suite labels (small, so it travels to workers)."""

    encoder: str
    task: str
    split: str
    condition: Condition = CLEAN

    def request(self, resolved: Resolved) -> EmbeddingRequest:
        """A shift condition reads the shift dataset's clean test split; the others the task's own data."""
        encoder = resolved.encoders[self.encoder]
        if self.condition.on_shift_data:
            return EmbeddingRequest(encoder, resolved.shifts[self.task], "test", CLEAN)
        return EmbeddingRequest(encoder, resolved.datasets[self.task], self.split, self.condition)


def pair_needs(encoder: str, task: str, conditions) -> list[Needed]:
    """What fitting and scoring a pair on `conditions` reads: train, val, then one test set each."""
    return [Needed(encoder, task, "train"), Needed(encoder, task, "val"),
            *(Needed(encoder, task, "test", c) for c in conditions)]


class TaskData:
    def __init__(self, embeddings: CachedEmbedder, resolved: Resolved, encoder: str, task: str):
        self.embeddings = embeddings
        self.resolved = resolved
        self.encoder_label = encoder
        self.encoder = resolved.encoders[encoder]
        self.task = task
        self.dataset = resolved.datasets[task]
        self._cases: dict[str, CaseSet] = {}

    def _embed(self, split: str, condition: Condition = CLEAN) -> Embedding:
        return self.embeddings.embed(Needed(self.encoder_label, self.task, split, condition).request(self.resolved))

    def training(self) -> TrainingData:
        train, val = self._embed("train"), self._embed("val")
        meta = self.dataset.meta
        return TrainingData(
            task_type=meta.task_type, n_classes=meta.n_classes,
            x_train=train.matrix, y_train=self.dataset.split("train").labels,
            x_val=val.matrix, y_val=self.dataset.split("val").labels,
            train_hash=train.content_hash,
        )  # fmt: skip

    def _shift_labels(self):
        return shift_labels(self.resolved, self.task)

    def eval_set(self, condition: Condition) -> EvalSet:
        embedded = self._embed("test", condition)
        if condition.on_shift_data:
            return EvalSet(embedded.matrix, self._shift_labels(), embedded.content_hash,
                           dict(self.resolved.shifts[self.task].split("test").subgroups))
        split = self.dataset.split("test")
        return EvalSet(embedded.matrix, split.labels, embedded.content_hash, dict(split.subgroups))

    def case_set(self, condition: Condition) -> CaseSet:
        """The test set a condition is scored on: the task's own (clean and perturbed copies share
        it) or the shift set, with case ids, cluster ids and labels as scored."""
        role = "shift" if condition.on_shift_data else "test"
        if role not in self._cases:
            self._cases[role] = task_case_set(self.resolved, self.task, role)
        return self._cases[role]


def shift_labels(resolved: Resolved, task: str):
    """The shift set's labels in the task's class order."""
    shift = resolved.shifts[task]
    return align_shift_labels(shift.split("test").labels, resolved.datasets[task].meta, shift.meta,
                              resolved.shift_maps[task])


def task_case_set(resolved: Resolved, task: str, role: str) -> CaseSet:
    """A task's test set ("test") or its shift set ("shift"), as scored."""
    if role == "shift":
        return case_set_of(resolved.shifts[task].split("test"), shift_labels(resolved, task), task, role)
    split = resolved.datasets[task].split("test")
    return case_set_of(split, split.labels, task, role)
