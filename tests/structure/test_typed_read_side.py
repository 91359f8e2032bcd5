"""The read side is typed: renderers take the ScoreReport by annotation and read its settings by attribute,
never through string keys (which a renamed field would turn into a silent default)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "crsbench"
READERS = ("report", "selection", "bundles", "cli")
SCORED_NAMES = {"report", "scored"}


def _modules():
    return sorted(p for package in READERS for p in (SRC / package).rglob("*.py"))


def _is_settings(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "settings" or (
        isinstance(node, ast.Name) and node.id == "settings")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_settings_are_read_by_attribute(path):
    by_key = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Subscript) and _is_settings(node.value):
            by_key.append(node.lineno)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and _is_settings(node.func.value)):
            by_key.append(node.lineno)
    assert not by_key, f"{path.name}: settings read by key on lines {by_key} (use ScoreSettings' attributes)"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_renderer_annotates_the_scored_value(path):
    bare = [f"{node.name}({arg.arg})" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for arg in node.args.args + node.args.kwonlyargs
            if arg.arg in SCORED_NAMES and arg.annotation is None]
    assert not bare, f"{path.name}: unannotated {bare}"


def test_the_check_finds_a_read_by_key(tmp_path):
    """The walk is not vacuous: a module reading settings by key is caught."""
    module = tmp_path / "m.py"
    module.write_text("def f(report):\n    return report.settings.get('level', 0.95), report.settings['tasks']\n")
    tree = ast.parse(module.read_text())
    hits = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript) and _is_settings(n.value)]
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "get" and _is_settings(n.func.value)]
    assert len(hits) == 1 and len(calls) == 1
