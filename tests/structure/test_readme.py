"""The README's examples stay true: its suite validates and its commands exist."""

import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from crsbench.cli.main import app
from crsbench.plan.suite import parse_suite

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_suite_example_is_a_valid_suite():
    block = re.search(r"```yaml\n(.*?)```", README.read_text(), re.S).group(1)
    suite = parse_suite(yaml.safe_load(block), source="README.md")
    assert suite.reference in [e.label for e in suite.encoders]
    assert suite.perturbations is not None and {t.name for t in suite.tasks} == {"retina", "lesions"}


def test_every_command_in_the_readme_table_has_help():
    commands = set(re.findall(r"^\| `crsbench (\w+)", README.read_text(), re.M))
    assert {"demo", "run", "score", "encoders", "datasets", "perturbations"} <= commands
    for command in commands:
        result = CliRunner().invoke(app, [command, "--help"])
        assert result.exit_code == 0, (command, result.output)


def test_readme_and_encoder_docs_python_examples_run(monkeypatch):
    """Every Python example that declares an encoder runs as written and registers the name it gives."""
    from crsbench.encoders import registry

    original = dict(registry._ENTRIES) if registry.encoder_names() else {}
    docs = README.parent / "docs" / "encoders.md"
    blocks = [b for text in (README.read_text(), docs.read_text())
              for b in re.findall(r"```python\n(.*?)```", text, re.S) if "register_encoder" in b]
    assert len(blocks) == 4
    for block in blocks:
        monkeypatch.setattr(registry, "_ENTRIES", dict(original))  # each example on the untouched registry
        exec(compile(block, "example", "exec"), {})
        name = re.search(r'name="([^"]+)"', block).group(1)
        assert name in registry.encoder_names() and name not in original
