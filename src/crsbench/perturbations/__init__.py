"""Acquisition perturbations for robustness evaluation (PROTOCOL.md section 4).

Public API:
    perturb(images, ids, name, severity, seed=0) -> images   (uint8 torch [b,3,H,W] or numpy [b,H,W,3])
    modality_set(modality) -> tuple[PerturbationSpec, ...]   ("dermoscopy", "fundus", "chest_xray", "generic")
    get_perturbation(name) -> PerturbationSpec;  PERTURBATIONS: name -> spec
    contact_sheet(image, modality, seed=0, cell=160) -> PIL.Image
See docs/perturbations.md for the parameter table.
"""

import importlib

# name -> the submodule holding it; imported on first use, so that the names alone (a suite's check)
# never import torch
_HOMES = {
    "image_seed": "core", "perturb": "core", "REFERENCE_SIZE": "families", "contact_sheet": "preview",
    "PERTURBATIONS": "registry", "SEVERITIES": "registry", "PerturbationSpec": "registry",
    "get_perturbation": "registry", "MODALITIES": "names", "MODALITY_SETS": "names", "markdown_table": "sets",
    "modality_set": "sets", "ssim": "ssim",
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # also over the submodule of the same name (ssim) its import just set here
    return value


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
