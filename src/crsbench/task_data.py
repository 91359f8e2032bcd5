"""The arrays one (encoder, task) pair needs, from the embedding cache: the training data for every
fit, and the evaluation set of one condition at a time (the caller holds at most one)."""

from __future__ import annotations

from crsbench.conditions import CLEAN, Condition
from crsbench.embed import CachedEmbedder, Embedding, EmbeddingRequest
from crsbench.pipeline import EvalSet, TrainingData
from crsbench.resolve import Resolved
from crsbench.shift import align_shift_labels


class TaskData:
    def __init__(self, embeddings: CachedEmbedder, resolved: Resolved, encoder: str, task: str):
        self.embeddings = embeddings
        self.resolved = resolved
        self.encoder = resolved.encoders[encoder]
        self.task = task
        self.dataset = resolved.datasets[task]

    def _embed(self, dataset, split: str, condition: Condition = CLEAN) -> Embedding:
        return self.embeddings.embed(EmbeddingRequest(self.encoder, dataset, split, condition))

    def training(self) -> TrainingData:
        train, val = self._embed(self.dataset, "train"), self._embed(self.dataset, "val")
        meta = self.dataset.meta
        return TrainingData(
            task_type=meta.task_type, n_classes=meta.n_classes,
            x_train=train.matrix, y_train=self.dataset.split("train").labels,
            x_val=val.matrix, y_val=self.dataset.split("val").labels,
            train_hash=train.content_hash,
        )  # fmt: skip

    def eval_set(self, condition: Condition) -> EvalSet:
        if condition.on_shift_data:
            shift = self.resolved.shifts[self.task]
            embedded = self._embed(shift, "test")
            labels = align_shift_labels(shift.split("test").labels, self.dataset.meta, shift.meta,
                                        self.resolved.shift_maps[self.task])
            return EvalSet(embedded.matrix, labels, embedded.content_hash)
        embedded = self._embed(self.dataset, "test", condition)
        return EvalSet(embedded.matrix, self.dataset.split("test").labels, embedded.content_hash)
