"""The package's top level holds stage packages and a handful of modules, each package behind a lazy face."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "crsbench"
TOP_MODULES = {"__init__.py", "__main__.py", "api.py", "errors.py"}


def test_the_top_level_is_stage_packages():
    modules = {p.name for p in PACKAGE.glob("*.py")}
    assert modules == TOP_MODULES, f"put {sorted(modules - TOP_MODULES)} in a stage package"
    for package in (p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        if any(package.glob("*.py")):
            assert (package / "__init__.py").exists(), f"{package.name} has no public face"


def test_a_package_face_names_its_modules_and_nothing_else():
    import crsbench.scoring

    assert crsbench.scoring.score is importlib.import_module("crsbench.scoring.score")
    assert crsbench.scoring.ScoreReport is crsbench.scoring.score.ScoreReport
    with pytest.raises(AttributeError):
        crsbench.scoring.grid_stage  # a name of one of its modules is read from that module
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


MAX_MODULE_LINES = 600  # past this a module holds two jobs a reader would look for in two places


def test_no_module_is_longer_than_a_reader_holds_at_once():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split by responsibility: {long}"
