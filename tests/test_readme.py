"""The README's examples stay true: its suite validates and its commands exist."""

import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.suite import parse_suite

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_suite_example_is_a_valid_suite():
    block = re.search(r"```yaml\n(.*?)```", README.read_text(), re.S).group(1)
    suite = parse_suite(yaml.safe_load(block), source="README.md")
    assert suite.reference in [e.label for e in suite.encoder_specs]
    assert suite.perturbations is not None and {t.name for t in suite.tasks} == {"retina", "lesions"}


def test_every_command_in_the_readme_table_has_help():
    commands = set(re.findall(r"^\| `crsbench (\w+)", README.read_text(), re.M))
    assert {"demo", "run", "score", "encoders", "datasets", "perturbations"} <= commands
    for command in commands:
        result = CliRunner().invoke(app, [command, "--help"])
        assert result.exit_code == 0, (command, result.output)
