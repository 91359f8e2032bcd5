"""Options several commands share: which CRS definition ranks (docs/crs.md section 2)."""

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
