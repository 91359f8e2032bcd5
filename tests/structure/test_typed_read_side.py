"""The read side is typed: renderers take the ScoreReport by annotation and read its settings by attribute,
never through string keys (which a renamed field would turn into a silent default)."""

from __future__ import annotations

import ast
import dataclasses
import re
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


# --------------------------------------------------------------------------- no silent default on a score result


def _score_result_types() -> tuple[type, ...]:
    from crsbench.scoring.bootstrap_summary import BootstrapResult
    from crsbench.scoring.case_bootstrap import CaseBootstrap
    from crsbench.scoring.score_report import PART_TYPES, ScoreReport
    from crsbench.scoring.settings import ScoreSettings
    from crsbench.scoring.statistics import SeedBootstrap

    return (ScoreReport, *PART_TYPES.values(), ScoreSettings, BootstrapResult, SeedBootstrap, CaseBootstrap)


def _attribute_names(types: tuple[type, ...]) -> set[str]:
    """Every field and property of these types: what a reader could ask a score result for."""
    names = set()
    for kind in types:
        names |= {f.name for f in dataclasses.fields(kind)}
        names |= {n for n, v in vars(kind).items() if isinstance(v, property)}
    return names


def _annotated_with(function: ast.AST, type_names: set[str]) -> set[str]:
    """The parameters of `function` annotated with one of these types (alone, quoted, or `X | None`)."""
    found = set()
    for arg in function.args.args + function.args.kwonlyargs:
        if arg.annotation is not None and set(re.findall(r"\w+", ast.unparse(arg.annotation))) & type_names:
            found.add(arg.arg)
    return found


def defaulted_reads(tree: ast.AST, names: set[str], type_names: set[str]) -> list[int]:
    """Lines of `getattr(x, "name", default)` where "name" is an attribute of a score result, or x is a
    parameter annotated with a score result's type: whatever the variable is called."""
    lines = []
    for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] + [tree]:
        typed = _annotated_with(function, type_names) if function is not tree else set()
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                    and len(node.args) == 3):
                continue
            target, attribute = node.args[0], node.args[1]
            named = isinstance(attribute, ast.Constant) and attribute.value in names
            if named or (isinstance(target, ast.Name) and target.id in typed):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_no_score_result_is_read_with_a_default():
    types = _score_result_types()
    names, type_names = _attribute_names(types), {t.__name__ for t in types}
    found = {f"{p.relative_to(SRC)}": defaulted_reads(ast.parse(p.read_text()), names, type_names)
             for p in sorted(SRC.rglob("*.py"))}
    found = {path: lines for path, lines in found.items() if lines}
    assert not found, f"getattr with a default on a score result (read the typed attribute): {found}"


def test_the_default_check_finds_a_read_under_any_name():
    """Not vacuous: a defaulted read of a result's attribute is found whatever the variable is called, and
    any defaulted read of a parameter typed as a score result is found whatever the attribute."""
    types = _score_result_types()
    names, type_names = _attribute_names(types), {t.__name__ for t in types}
    source = ("def f(anything):\n    return getattr(anything, 'members_by_task', {})\n"
              "def g(value: ScoreReport | None):\n    return getattr(value, 'renamed_long_ago', None)\n"
              "def h(encoder):\n    return getattr(encoder, 'device', 'cpu')\n")
    assert defaulted_reads(ast.parse(source), names, type_names) == [2, 4]
