import os
import textwrap

import pytest
from typer.testing import CliRunner

from crsbench.cli.main import app
from crsbench.errors import SuiteError
from crsbench.plan.suite import load_suite

GOOD = """
name: t
encoders: [raw-pixels, {name: colour-texture, options: {input_size: 32}}]
tasks:
  - name: derm
    dataset: {kind: medmnist, name: dermamnist, path: data/derm.npz}
fractions: [1.0, 0.1]
"""


def write(tmp_path, text):
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_good_suite_loads_with_defaults_and_resolves_paths(tmp_path):
    suite = load_suite(write(tmp_path, GOOD))
    assert [e.label for e in suite.encoders] == ["raw-pixels", "colour-texture@input_size=32"]
    assert suite.seeds == [0, 1, 2, 3, 4] and suite.fractions == [0.1, 1.0]
    assert suite.tasks[0].dataset.options()["path"] == str(tmp_path / "data/derm.npz")
    assert suite.suite_hash() == load_suite(write(tmp_path, GOOD)).suite_hash()


@pytest.mark.parametrize(
    "change,field",
    [
        (("raw-pixels, {", "nope, {"), "encoders.0.name: unknown encoder 'nope'"),
        (("kind: medmnist", "kind: zip"), "tasks.0.dataset.kind: unknown dataset kind 'zip'"),
        (("[1.0, 0.1]", "[0.5, 0.1]"), "fractions: must include 1.0"),
        (("[1.0, 0.1]", "[1.0, 2]"), "fractions: every label fraction must be in (0, 1]"),
        (("name: t\n", "name: t\nseeds: [1, 1]\n"), "seeds: seeds must be distinct, [1] repeated"),
        (("name: t\n", "name: t\nseeds: [0, -1]\n"), "seeds: seeds must be integers from 0 to 4294967295, got [-1]"),
        (("name: t\n", "name: t\nreference: other\n"), "reference: 'other' is not one of"),
        (("name: t\n", "name: t\nbatch_size: 0\n"), "batch_size: Input should be greater than 0"),
        (("name: t\n", "name: t\nprobe: {c_grid: [-1]}\n"), "probe.c_grid: must be a non-empty list"),
        (("name: t\n", "name: t\ncolour: red\n"), "colour: Extra inputs are not permitted"),
        (("    dataset:", "    datasett:"), "tasks.0.dataset: Field required"),
    ],
)
def test_bad_suite_names_file_and_field(tmp_path, change, field):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(SuiteError) as error:
        load_suite(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and field in message and "\n" not in message


def test_invalid_yaml_and_missing_file(tmp_path):
    with pytest.raises(SuiteError, match=r"suite.yaml: line \d+ not valid YAML"):
        load_suite(write(tmp_path, "name: [unclosed\n"))
    with pytest.raises(SuiteError, match="cannot read suite file"):
        load_suite(tmp_path / "absent.yaml")


def test_cli_exits_2_with_one_line_error(tmp_path):
    path = write(tmp_path, GOOD.replace("kind: medmnist", "kind: zip"))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "tasks.0.dataset.kind" in lines[0] and str(path) in lines[0].replace("\n", "")
    ok = CliRunner().invoke(app, ["validate", str(write(tmp_path, GOOD))])
    assert ok.exit_code == 0 and "2 encoders" in ok.output


def test_output_cache_and_weights_are_relative_to_the_suite_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suites").mkdir()
    monkeypatch.setenv("CKPT", "ckpt")
    path = tmp_path / "suites" / "suite.yaml"
    path.write_text(textwrap.dedent(GOOD).replace("name: t\n", "name: t\noutput: out\ncache: ${HOME}/c\n").replace(
        "raw-pixels, {", "{name: radimagenet-resnet50, options: {weights: 'w/${CKPT}.pt'}}, {"))
    suite = load_suite(path)
    assert suite.output == str(tmp_path / "suites" / "out")
    assert suite.cache == os.path.expanduser("~/c")
    choice = suite.encoders[0]
    assert choice.options["weights"] == str(tmp_path / "suites" / "w" / "ckpt.pt")
    assert choice.label == "radimagenet-resnet50@weights=ckpt.pt"  # the file's name, never a folder of this machine


def test_variables_are_expanded_in_path_fields_only(tmp_path, monkeypatch):
    monkeypatch.setenv("WHO", "alice")
    suite = load_suite(write(tmp_path, GOOD.replace("name: t\n", "name: 't-${WHO}'\n").replace(
        "data/derm.npz", "'${WHO}/derm.npz'")))
    assert suite.name == "t-${WHO}"  # a name is stored as written
    assert suite.tasks[0].dataset.options()["path"] == str(tmp_path / "alice" / "derm.npz")
