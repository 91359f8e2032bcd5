"""Options several commands share: which CRS definition ranks (docs/crs.md section 2), which records, which
sources and what the intervals cover."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer


class CRSDefinition(str, Enum):
    mean_of_skills = "mean_of_skills"
    components = "components"


CRS_DEFINITION = typer.Option(
    None, "--crs-definition", case_sensitive=False,
    help="Which CRS ranks: mean_of_skills (the default) or components (dominance over the reference, profile "
         "balance, worst axis); default: the suite's crs block. The other is shown beside it.")


def definition_settings(definition: Optional[CRSDefinition]) -> dict[str, str]:
    """The CRS settings by name the option adds: none when it is not given, so the suite's block holds."""
    return {} if definition is None else {"definition": CRSDefinition(definition).value}


SUBGROUP_AXIS = typer.Option(
    None, "--subgroup-axis",
    help="Add the optional fifth axis: the AUROC of the worst assessable subgroup of this patient attribute (e.g. "
         "sex, age_band); repeatable. Default: the suite's crs block (`subgroup_axis`), else off (four axes).")


def subgroup_axis_settings(attributes: Optional[list[str]]) -> dict[str, list[str]]:
    """The CRS setting --subgroup-axis adds: none when it is not given, so the suite's block holds."""
    return {"subgroup_axis": list(attributes)} if attributes else {}


SUITE_ARGUMENT = typer.Argument(..., help="Suite YAML file, or a built-in suite: demo, demo-quick, crs-bench.")
SUITE_HASH = typer.Option(None, "--suite-hash", help="Only the records of this suite (a unique prefix of its hash).")
PARTIAL = typer.Option(
    False, "--partial",
    help="Show an incomplete grid as a labelled partial view (only the evaluations every encoder has).",
)
JSON = typer.Option(False, "--json", help="Print the result as one JSON document (docs/cli.md).")

SOURCES = typer.Argument(..., help="Bundle files (.crsb) and results folders.")
ALLOW = typer.Option(None, "--allow", help="Score despite this field differing, stating it in every output "
                     "(protocol, solver, tasks, dataset, split, seeds, fractions, conditions, crs); repeatable.")
REFERENCE = typer.Option(None, "--reference", "-r", help="Reference encoder (default: the first source's suite's).")
N_BOOT = typer.Option(10_000, "--n-boot", min=0, help="Bootstrap draws (0: none).")

TARGET = typer.Option(
    "training-samples", "--target",
    help="What the intervals and the tier cover: training-samples (the CRS expected over training samples of the "
         "run's size, where the records hold refits) or fitted-probes (these fitted probes only: test cases and seeds).")


def target_settings(target: str) -> dict[str, str]:
    """The CRS setting --target adds: none for the default, so a suite's own block holds."""
    if target not in ("training-samples", "fitted-probes"):
        raise typer.BadParameter(f"--target must be training-samples or fitted-probes, got {target!r}")
    return {"target": target} if target != "training-samples" else {}
