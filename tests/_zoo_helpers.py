"""Shared by the zoo/adapter tests: offline guards and tiny images. (Not collected: no test_ prefix.)"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def offline(monkeypatch):
    """No test may reach a model hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def images(n: int, size: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, size, size, 3), dtype=np.uint8)


def touch(path: str) -> None:
    """What a malicious pickle runs when it is loaded: here, only leaves a file behind."""
    with open(path, "w") as f:
        f.write("pickled code ran")


class CodeOnLoad:
    """An object whose unpickling calls `touch(path)`, as an attacker's payload would call anything."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return touch, (self.path,)
