"""Hostile suite files and options, generated here: each is refused with one line naming the file and
what is wrong, exit 2 from the CLI, no traceback, in well under a second, and nothing written."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from crsbench.cli.main import app
from crsbench.errors import DataError, SuiteError
from crsbench.core.safe_yaml import MAX_NODES, load_yaml
from crsbench.selection.duration import parse_duration
from crsbench.plan.suite import MAX_SEED, load_suite

runner = CliRunner()

VALID = """\
name: ok
encoders: [raw-pixels]
tasks:
  - {name: t, dataset: {kind: demo, specialty: derm, n_train: 20, n_val: 8, n_test: 8, image_size: 16}}
"""

# A guard against a hang (expanding a bomb or reading /dev/zero would take hours), not a speed claim:
# how fast refusals are is a benchmark's business, and a loaded machine must not fail this.
HANG_GUARD_S = 30.0


def _alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return VALID + "\n".join(["extra:"] + ["  " + line for line in lines]) + "\n"


def _bomb_in_options(levels: int = 9) -> str:
    """Nested anchors inside one encoder's options: a label built from them would expand every alias."""
    anchors = ['&a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    anchors += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return VALID.replace("encoders: [raw-pixels]", f"encoders:\n  - name: raw-pixels\n    options: {{bomb: [{', '.join(anchors)}]}}")


HOSTILE = {
    "alias bomb in the suite": (_alias_bomb(), "expands to more than"),
    "alias bomb inside an encoder's options": (_bomb_in_options(), "expands to more than"),
    "duplicate tasks key": (VALID + "tasks:\n  - {name: u, dataset: {kind: demo}}\n", "key 'tasks' appears twice"),
    "duplicate seeds key": (VALID + "seeds: [0]\nseeds: [1]\n", "key 'seeds' appears twice (lines"),
    "deep nesting": (VALID + "deep: " + "[" * 200 + "]" * 200 + "\n", "nested"),
    "nesting past the stack": (VALID + "deep: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    "seed beyond the solver's range": (VALID + f"seeds: [{MAX_SEED + 1}]\n", "seeds: seeds must be integers from 0"),
    "seed beyond SQLite's integer": (VALID + f"seeds: [{2 ** 70}]\n", "seeds"),
    "negative seed": (VALID + "seeds: [-1]\n", "seeds must be integers from 0"),
    "NaN in the C grid": (VALID + "probe: {c_grid: [.nan, 1.0]}\n", "positive, finite"),
    "infinite C": (VALID + "probe: {c_grid: [.inf]}\n", "positive, finite"),
    "two refits: a t with one degree of freedom": (VALID + "refits: 2\n", "refits is 2: give 0 (none) or at least 3"),
    "not YAML": (VALID + "  : : [\n", "not valid YAML"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_suite_is_refused_in_one_line_quickly(tmp_path, case):
    text, expected = HOSTILE[case]
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    started = time.perf_counter()
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    assert time.perf_counter() - started < HANG_GUARD_S  # refused, not expanded
    message = str(info.value)
    assert expected in message and str(path) in message and "\n" not in message
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite.yaml"]  # nothing written


def test_the_same_suite_without_the_hostile_part_loads():
    assert load_yaml(VALID, "s")["name"] == "ok"
    anchors = VALID + "common: &c {n_train: 20}\nother: *c\n"  # a few aliases are fine
    assert load_yaml(anchors, "s")["other"] == {"n_train": 20}


def test_expansion_is_measured_not_performed():
    levels = 30  # 10**30 values if expanded
    started = time.perf_counter()
    with pytest.raises(SuiteError, match=f"more than {MAX_NODES:,}"):
        load_yaml(_alias_bomb(levels), "bomb.yaml")
    assert time.perf_counter() - started < HANG_GUARD_S


def test_a_recursive_alias_is_refused():
    with pytest.raises(SuiteError, match="refers to a node that holds it"):
        load_yaml("a: &a [1, *a]\n", "loop.yaml")


@pytest.mark.parametrize("text", ["inf", "nan", "-5m", "0", "1e400", "forever"])
def test_a_budget_must_be_finite_and_positive(text):
    with pytest.raises(DataError, match="--budget") as info:
        parse_duration(text)
    assert "\n" not in str(info.value)


def test_select_refuses_an_absurd_number_of_seeds_before_any_work(tmp_path):
    result = runner.invoke(app, ["select", str(tmp_path), "--encoders", "raw-pixels", "--seeds", "1000000000"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_validate_checks_encoder_options_before_any_run(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(VALID.replace("encoders: [raw-pixels]", "encoders: [{name: raw-pixels, options: {batch: 3}}]"))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "encoders.0" in result.output and "unknown options" in result.output
    assert "Traceback" not in result.output
    path.write_text(VALID.replace("encoders: [raw-pixels]", "encoders: [no-such-encoder]"))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "unknown encoder 'no-such-encoder'" in result.output


@pytest.mark.parametrize("field", ["output", "cache"])
def test_an_unset_variable_in_a_path_the_run_writes_is_named(tmp_path, monkeypatch, field):
    monkeypatch.delenv("CRSBENCH_NO_SUCH_VAR", raising=False)
    path = tmp_path / "suite.yaml"
    path.write_text(VALID + f"{field}: ${{CRSBENCH_NO_SUCH_VAR}}/results\n")
    with pytest.raises(SuiteError, match=f"{field}: .*CRSBENCH_NO_SUCH_VAR, which is not set") as info:
        load_suite(path)
    assert "\n" not in str(info.value)
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2 and not any(p.name.startswith("$") for p in tmp_path.iterdir())


def test_control_codes_are_shown_not_obeyed_in_every_output():
    from rich.text import Text

    from crsbench.cli.console import SafeConsole
    from crsbench.core.printable import printable

    name = "enc\x1b[2Jwiped\x07\u202ereversed\u200b"
    assert printable(name) == "enc\\x1b[2Jwiped\\x07\\u202ereversed\\u200b"
    assert printable("plain name, with a tab\tand\nnewline") == "plain name, with a tab\tand\nnewline"
    console = SafeConsole(record=True, width=200, color_system=None)
    console.print(name)
    console.print(Text(name, style="bold"))
    shown = console.export_text()
    assert not any(c in shown for c in "\x1b\x07\u202e\u200b") and "\\x1b[2Jwiped" in shown


def test_an_endless_or_binary_file_is_refused_without_reading_it_all(tmp_path):
    started = time.perf_counter()
    result = runner.invoke(app, ["validate", "/dev/zero"])
    assert result.exit_code == 2 and "at most" in result.output and time.perf_counter() - started < HANG_GUARD_S
    binary = tmp_path / "suite.yaml"
    binary.write_bytes(b"name: x\n\xff\xfe\x00")
    with pytest.raises(SuiteError, match="not UTF-8 text"):
        load_suite(binary)
