"""The conventions every command shares (docs/cli.md): --version, -q and -v, --json with the values the
tables show, one modality vocabulary, score tables that fit 80 and 160 columns, and a start without torch
for the commands that need no model."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from _tiny_results import copied_results
from crsbench import __version__, api
from crsbench.cli.main import app
from crsbench.errors import DataError
from crsbench.core.modalities import ALIASES, MODALITIES, canonical_modality

runner = CliRunner()


def invoke(*args, columns: int = 200):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def results(tiny_run, tmp_path_factory):
    """Two encoders, one task, three seeds: a results folder scored in a second."""
    return copied_results(tiny_run, tmp_path_factory.mktemp("conventions"))


# ----------------------------------------------------------------------------- --version, -q, -v


def test_version_as_an_option_and_a_command():
    for args in (["--version"], ["version"]):
        result = invoke(*args)
        assert result.exit_code == 0 and result.stdout.strip() == f"crsbench {__version__}"


def test_quiet_and_verbose_together_are_one_line_and_exit_2(results):
    result = invoke("-q", "-v", "results", results)
    assert result.exit_code == 2 and result.stderr.strip() == "error: -q and -v: give one or the other"


def test_quiet_score_prints_only_its_result_lines(results):
    result = invoke("-q", "score", results, "--n-boot", "50")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("Leading tier across tasks") and lines[1].startswith("scores written to")
    normal = invoke("score", results, "--n-boot", "50")
    assert "Across tasks: Clinical Reliability Score" in normal.output and lines[0] in normal.output


def test_quiet_is_reset_for_the_next_invocation(results):
    assert invoke("-q", "results", results).exit_code == 0
    assert "Leading tier across tasks" in invoke("score", results, "--n-boot", "0").output.replace("\n", " ")
    assert "AUROC" in invoke("score", results, "--n-boot", "0").output


def test_quiet_run_shows_no_progress_and_verbose_names_the_suite(results, tmp_path):
    suite = tmp_path / "again.yaml"
    suite.write_text(textwrap.dedent(f"""
        name: again
        output: {tmp_path / 'out'}
        cache: {results.parent / 'cache'}
        encoders: [raw-pixels]
        tasks:
          - name: derm
            dataset: {{kind: demo, specialty: derm, n_train: 60, n_val: 20, n_test: 30}}
        seeds: [0]
        fractions: [1.0]
        perturbations: {{select: none}}
    """))
    quiet = invoke("-q", "run", suite)
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stderr == "" and "records written" in quiet.stdout and "Clean test" not in quiet.stdout
    verbose = invoke("-v", "run", suite)
    assert verbose.exit_code == 0 and "suite again (" in verbose.stdout and "0 records written" in verbose.stdout


# ----------------------------------------------------------------------------- --json


def test_results_json_holds_the_values_of_the_table(results):
    result = invoke("results", results, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == "crsbench.results/1" and data["tasks"] == ["derm"] and data["n_seeds"] == 3
    table = invoke("results", results).stdout
    means = [e["mean_auroc"] for e in data["encoders"]]
    assert means == sorted(means, reverse=True)
    for encoder in data["encoders"]:
        cell = encoder["tasks"]["derm"]
        assert encoder["encoder"] in table and f"{cell['auroc']:.3f} / {cell['ece']:.3f}" in table


def test_score_json_holds_the_values_of_the_tables(results):
    result = invoke("score", results, "--n-boot", "200", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # standard output holds the JSON alone
    assert data["schema"] == "crsbench.score/1" and data["reference"] == "colour-texture"
    scored = api.score(results, n_boot=200)
    assert [e["encoder"] for e in data["encoders"]] == list(scored.point.scores.index)
    for entry in data["encoders"]:
        row = scored.point.scores.loc[entry["encoder"]]
        for key in ("discrimination", "calibration", "label_efficiency", "robustness", "ece", "skill", "crs",
                    "p_rank1", "auroc_rank", "crs_rank"):
            assert entry[key] == pytest.approx(float(row[key])), key
        assert entry["in_leading_tier"] == bool(row["in_leading_tier"])
    assert data["leading_tier"] == list(scored.tier.members)
    assert [t["task"] for t in data["tasks"]] == ["derm"] and data["tasks"][0]["encoders"][0]["crs"] is not None
    assert data["encoders"][0]["ci_low"] is None or data["encoders"][0]["reference"] is False
    reference = next(e for e in data["encoders"] if e["reference"])
    assert reference["encoder"] == "colour-texture" and reference["ci_low"] is None  # null, never NaN
    assert "NaN" not in result.stdout and data["written"].endswith("scores")


def test_encoders_json_is_the_registry_table():
    from crsbench.cli.commands.encoders import COLUMNS
    from crsbench.encoders.registry import encoder_names

    result = invoke("encoders", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == "crsbench.encoders/1"
    assert [e["name"] for e in data["encoders"]] == list(encoder_names())
    assert all(list(e) == list(COLUMNS) for e in data["encoders"])
    shown = json.loads(invoke("encoders", "show", "rad-dino", "--json").stdout)
    assert shown["name"] == "rad-dino" and shown["fields"]["fingerprint"]


# ----------------------------------------------------------------------------- modalities


def test_one_modality_vocabulary_with_the_old_spellings_as_aliases():
    from crsbench.perturbations import MODALITIES as PERTURBATION_SETS

    assert set(MODALITIES) == set(PERTURBATION_SETS)
    assert set(ALIASES.values()) <= set(MODALITIES)
    assert [canonical_modality(m) for m in ("xray", "X-RAY".replace("-", ""), " Other ", "fundus")] == [
        "chest_xray", "chest_xray", "generic", "fundus"]
    with pytest.raises(DataError, match=r"--modality: unknown modality 'ct'; known: dermoscopy, fundus, chest_xray"):
        canonical_modality("ct")


def test_perturbations_takes_the_aliases_and_refuses_the_unknown_in_one_line():
    assert invoke("perturbations", "-m", "xray").stdout == invoke("perturbations", "-m", "chest_xray").stdout
    assert invoke("perturbations", "-m", "other").stdout == invoke("perturbations").stdout
    bad = invoke("perturbations", "-m", "mri")
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1 and "aliases: xray" in bad.stderr


# ----------------------------------------------------------------------------- widths


def _lines_at(results, columns: int) -> list[str]:
    result = invoke("score", results, "--n-boot", "50", columns=columns)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.mark.parametrize("columns", [80, 160])
def test_score_tables_fit_the_width_and_keep_every_name_whole(results, columns):
    lines = _lines_at(results, columns)
    prose = ("AUROC vs CRS", "  reversed:", "Under sampled", "  place depends", "Leading tier", "note:", "scores written",
             "P dom / P dom'd:", "The two CRS definitions order", "  pair:", "subgroup")
    tables = [line for line in lines if not line.startswith(prose)]  # the lines under the tables are soft-wrapped
    assert max(len(line) for line in tables) <= columns
    assert not any("…" in line for line in lines)
    for name in ("raw-pixels", "colour-texture"):
        assert any(name in line for line in tables)


# ----------------------------------------------------------------------------- start-up

_NO_TORCH = """
import sys
from crsbench.cli.main import app
try:
    app(sys.argv[1:], prog_name="crsbench")
except SystemExit as stop:
    code = stop.code
loaded = [m for m in ("torch", "torchvision", "timm", "open_clip", "transformers") if m in sys.modules]
print("LOADED", code, loaded)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["encoders"], ["encoders", "--json"], ["datasets"],
                                  ["select", "--help"], ["score", "--help"]])
def test_commands_that_need_no_model_start_without_torch(args):
    done = subprocess.run([sys.executable, "-c", _NO_TORCH, *args], capture_output=True, text=True, timeout=120)
    last = done.stdout.strip().splitlines()[-1]
    assert last in ("LOADED 0 []", "LOADED None []"), (last, done.stderr[-2000:])


def test_every_command_module_is_put_together_once_and_each_adds_itself_the_same_way():
    import inspect
    import pkgutil

    import crsbench.cli.commands as commands
    from crsbench.cli import main

    modules = {found.name for found in pkgutil.iter_modules(commands.__path__)}
    registered = [module.__name__.rsplit(".", 1)[1] for module in main.COMMANDS]
    assert sorted(registered) == sorted(modules) and len(set(registered)) == len(registered)
    assert all(list(inspect.signature(module.register).parameters) == ["app"] for module in main.COMMANDS)
    listed = [command.name for command in app.registered_commands] + [group.name for group in app.registered_groups]
    assert listed == [name for name in registered if name not in ("datasets", "encoders")] + ["datasets", "encoders"]
