"""Whether scoring runs on a GPU is torch's answer, asked once, and torch is imported only where the answer
can be yes (tested with torch and the driver's signs replaced: no GPU is needed)."""

from __future__ import annotations

import sys
import types

import pytest

from crsbench.core import hardware


class _FakeTorch(types.SimpleNamespace):
    def __init__(self, available: bool):
        self.asked = 0

        def is_available():
            self.asked += 1
            return available

        super().__init__(cuda=types.SimpleNamespace(is_available=is_available))


@pytest.fixture
def detection(monkeypatch):
    """A process without torch loaded and a fresh cache: `torch` is what an import would give, `imports`
    counts the imports made."""
    hardware.gpu_present.cache_clear()
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # restored after the test
    state = types.SimpleNamespace(imports=0, torch=None)

    def imported():
        state.imports += 1
        return state.torch

    monkeypatch.setattr(hardware, "_import_torch", imported)
    yield state
    hardware.gpu_present.cache_clear()


def _driver(monkeypatch, files: bool, library: bool):
    monkeypatch.setattr(hardware.os.path, "exists", lambda path: files)

    def load(name):
        if not library:
            raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(hardware.ctypes, "CDLL", load)


@pytest.mark.parametrize("files, library", [(True, False), (False, True)])
def test_torch_is_asked_once_where_the_driver_shows_by_its_files_or_only_its_library(monkeypatch, detection, files, library):
    _driver(monkeypatch, files, library)
    detection.torch = _FakeTorch(available=True)
    assert all(hardware.gpu_present() for _ in range(3))
    assert detection.imports == 1 and detection.torch.asked == 1


def test_torch_answers_no_where_the_driver_shows_but_no_device_is_usable(monkeypatch, detection):
    _driver(monkeypatch, files=False, library=True)
    detection.torch = _FakeTorch(available=False)
    assert not hardware.gpu_present()
    assert hardware.scoring_device() is None  # the numpy kernel


def test_no_torch_import_without_the_driver_or_without_torch_installed(monkeypatch, detection):
    detection.torch = _FakeTorch(available=True)
    _driver(monkeypatch, files=False, library=False)
    assert not hardware.gpu_present()
    hardware.gpu_present.cache_clear()
    _driver(monkeypatch, files=True, library=True)
    monkeypatch.setattr(hardware.importlib.util, "find_spec", lambda name: None)
    assert not hardware.gpu_present()
    assert detection.imports == 0 and "torch" not in sys.modules


def test_torch_already_loaded_is_asked_whatever_the_driver_shows(monkeypatch, detection):
    _driver(monkeypatch, files=False, library=False)
    loaded = _FakeTorch(available=True)
    monkeypatch.setitem(sys.modules, "torch", loaded)
    assert hardware.gpu_present() and hardware.gpu_present()
    assert loaded.asked == 1 and detection.imports == 0
