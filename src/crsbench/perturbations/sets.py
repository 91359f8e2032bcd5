"""Modality-aware perturbation sets (in the style of MedMNIST-C): which acquisition problems are
plausible for each imaging modality. Names match `DatasetMeta.modality`.

Pixelate is only in the dermoscopy set: its scaled block fixes an effective resolution of
224 / block px, so on 28 px MedMNIST fundus / X-ray data (and possibly on "generic" data) its mild
severities would do nothing; loss of resolution there is covered by the blurs and JPEG.
"""

from __future__ import annotations

from crsbench.perturbations.registry import PERTURBATIONS, PerturbationSpec

from crsbench.perturbations.names import MODALITIES, MODALITY_SETS  # noqa: E402 - names only, no torch


def modality_set(modality: str) -> tuple[PerturbationSpec, ...]:
    """The perturbations for `modality`; an unknown modality is an error (use "generic" explicitly)."""
    try:
        names = MODALITY_SETS[modality]
    except KeyError:
        raise ValueError(f"unknown modality {modality!r}; known: {', '.join(MODALITIES)}") from None
    return tuple(PERTURBATIONS[n] for n in names)


def _fmt(p: object) -> str:
    return ", ".join(_fmt(v) for v in p) if isinstance(p, tuple) else f"{p:g}"


def markdown_table() -> str:
    """The parameter table of docs/perturbations.md, generated from the specs (a test keeps them in sync)."""
    lines = [
        "| perturbation | parameter | s1 | s2 | s3 | s4 | s5 | scaled | sets | what it simulates |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for spec in PERTURBATIONS.values():
        sets = ", ".join(m for m, names in MODALITY_SETS.items() if spec.name in names)
        cells = " | ".join(_fmt(p) for p in spec.params)
        lines.append(f"| `{spec.name}` | {spec.parameter} | {cells} | {'yes' if spec.spatial else 'no'} | {sets} | {spec.description} |")
    return "\n".join(lines) + "\n"
