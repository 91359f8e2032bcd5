"""The package's top level holds stage packages and a handful of modules; the old flat paths still import."""

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from crsbench.core.moved_modules import MOVED

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "crsbench"
TOP_MODULES = {"__init__.py", "__main__.py", "api.py", "errors.py"}


def test_the_top_level_is_stage_packages():
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == TOP_MODULES, f"put {sorted(modules - TOP_MODULES)} in a stage package"
    for package in (p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        if any(package.glob("*.py")):
            assert (package / "__init__.py").exists(), f"{package.name} has no public face"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_the_same_module_and_warns(old):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        moved = importlib.import_module(f"crsbench.{old}")
    assert moved is importlib.import_module(f"crsbench.{MOVED[old]}")
    assert any(issubclass(w.category, DeprecationWarning) and MOVED[old] in str(w.message) for w in caught)


def test_a_package_named_like_an_old_module_forwards_its_names():
    import crsbench.scoring

    with pytest.warns(DeprecationWarning, match="crsbench.scoring.score.grid_stage"):
        forwarded = crsbench.scoring.grid_stage
    from crsbench.scoring.score import grid_stage

    assert forwarded is grid_stage
    with pytest.raises(AttributeError):
        crsbench.scoring.no_such_name


def test_the_top_face_names_what_a_user_needs():
    import crsbench

    for name in crsbench.__all__:
        assert getattr(crsbench, name) is not None
    assert crsbench.run_suite.__module__ == "crsbench.api"


def test_importing_a_module_does_not_import_its_whole_stage():
    # a face that imported eagerly would make `crsbench.run.resolve` cost the runner and torch
    code = "import sys, crsbench, crsbench.run.resolve, crsbench.scoring; print('torch' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"
