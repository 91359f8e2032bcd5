"""`crsbench perturbations`: the perturbations per modality, or a contact sheet of one image."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from crsbench.cli.console import Output
from crsbench.cli.errors import handled
from crsbench.core.atomic import atomic_write
from crsbench.core.modalities import ALIASES, DEFAULT_MODALITY, MODALITIES, canonical_modality
from crsbench.errors import DataError

MODALITY_HELP = f"{', '.join(MODALITIES)} (also {', '.join(ALIASES)})."


def perturbations(
    preview: Optional[Path] = typer.Option(None, "--preview", help="An image to show every perturbation and severity on."),
    output: Path = typer.Option(Path("perturbations.png"), "--output", "-o", help="Where to write the contact sheet."),
    modality: str = typer.Option(DEFAULT_MODALITY, "--modality", "-m", help=MODALITY_HELP),
    seed: int = typer.Option(0, "--seed", help="Perturbation seed."),
) -> None:
    """List the perturbations per modality, or write a contact sheet (rows: perturbations, columns: severity)."""
    from crsbench import report
    from crsbench.perturbations import contact_sheet, modality_set

    out = Output()
    modality = canonical_modality(modality)
    if preview is None:
        out.result(report.perturbations_table(modality, modality_set(modality)))
        return
    from PIL import Image

    image_format = Image.registered_extensions().get(output.suffix.lower())
    if image_format is None:
        raise DataError(f"{output}: not an image file name (give one ending in .png or .jpg)")
    sheet = contact_sheet(_read_image(preview), modality, seed=seed)
    atomic_write(output, lambda f: sheet.save(f, format=image_format))
    out.result(
        f"wrote {output} ({len(modality_set(modality))} perturbations x 5 severities, {sheet.size[0]}x{sheet.size[1]} px)"
    )


def _read_image(path: Path):
    import numpy as np
    from PIL import UnidentifiedImageError

    from crsbench.datasets.image_files import open_image

    try:
        with open_image(path) as image:
            return np.asarray(image.convert("RGB"))
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        raise DataError(f"{path}: cannot read image ({exc.__class__.__name__})") from None


def register(app: typer.Typer) -> None:
    app.command("perturbations")(handled(perturbations))
