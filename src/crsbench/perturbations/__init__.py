"""Acquisition perturbations for robustness evaluation (PROTOCOL.md section 4).

Public API:
    perturb(images, ids, name, severity, seed=0) -> images   (uint8 torch [b,3,H,W] or numpy [b,H,W,3])
    modality_set(modality) -> tuple[PerturbationSpec, ...]   ("dermoscopy", "fundus", "chest_xray", "generic")
    get_perturbation(name) -> PerturbationSpec;  PERTURBATIONS: name -> spec
    contact_sheet(image, modality, seed=0, cell=160) -> PIL.Image
See docs/perturbations.md for the parameter table.
"""

from crsbench.perturbations.core import image_seed, perturb
from crsbench.perturbations.families import REFERENCE_SIZE
from crsbench.perturbations.preview import contact_sheet
from crsbench.perturbations.registry import PERTURBATIONS, SEVERITIES, PerturbationSpec, get_perturbation
from crsbench.perturbations.sets import MODALITIES, MODALITY_SETS, markdown_table, modality_set
from crsbench.perturbations.ssim import ssim

__all__ = [
    "MODALITIES",
    "MODALITY_SETS",
    "PERTURBATIONS",
    "REFERENCE_SIZE",
    "SEVERITIES",
    "PerturbationSpec",
    "contact_sheet",
    "get_perturbation",
    "image_seed",
    "markdown_table",
    "modality_set",
    "perturb",
    "ssim",
]
