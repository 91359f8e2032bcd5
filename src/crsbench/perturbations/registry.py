"""The declarative perturbation table: one frozen `PerturbationSpec` per perturbation.

Severity parameters were tuned on real images (PH2 at 192 px, RetinaMNIST and PneumoniaMNIST at
28 px, multi-source CXR at 128 px) so that mean SSIM to the clean image falls strictly from
severity 1 to 5 (tests/perturbations/test_perturbations.py, benchmarks/perturbation_ssim.py). One table for all
modalities, so a perturbation name means the same corruption in every modality's results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from crsbench.perturbations import families as fam

SEVERITIES = (1, 2, 3, 4, 5)

PerturbationFn = Callable[[torch.Tensor, Any, Any], torch.Tensor]


@dataclass(frozen=True)
class PerturbationSpec:
    name: str
    fn: PerturbationFn
    params: tuple[Any, ...]  # one entry per severity 1..5
    description: str  # one line: what acquisition problem it simulates
    parameter: str  # what a params entry means (documentation)
    spatial: bool = False  # params are px at REFERENCE_SIZE, scaled to the image size

    def __post_init__(self) -> None:
        if len(self.params) != len(SEVERITIES):
            raise ValueError(f"perturbation {self.name!r}: needs {len(SEVERITIES)} severity params, got {len(self.params)}")

    def param(self, severity: int) -> Any:
        if isinstance(severity, bool) or not isinstance(severity, int) or severity not in SEVERITIES:
            raise ValueError(f"perturbation {self.name!r}: severity must be an int in 1..5, got {severity!r}")
        return self.params[severity - 1]


_SPECS = (
    PerturbationSpec("gaussian_noise", fam.gaussian_noise, (0.015, 0.03, 0.05, 0.075, 0.11),
                     "additive Gaussian sensor noise", "noise std, fraction of full intensity range"),
    PerturbationSpec("speckle_noise", fam.speckle_noise, (0.05, 0.09, 0.14, 0.2, 0.27),
                     "multiplicative noise, stronger in bright regions", "std of the multiplicative factor"),
    PerturbationSpec("shot_noise", fam.shot_noise, (1500, 500, 200, 90, 40),
                     "Poisson photon / quantum noise (low dose, low light)", "expected photon count at full intensity (lower = noisier)"),
    PerturbationSpec("impulse_noise", fam.impulse_noise, (0.004, 0.01, 0.02, 0.04, 0.07),
                     "salt-and-pepper: dead and hot detector pixels", "fraction of values set to 0 or 1"),
    PerturbationSpec("defocus_blur", fam.defocus_blur, (4.0, 6.0, 8.5, 11.5, 15.0),
                     "out-of-focus optics (pillbox kernel)", "disk radius, px at 224 px", spatial=True),
    PerturbationSpec("motion_blur", fam.motion_blur, (8.0, 13.0, 19.0, 26.0, 35.0),
                     "camera or patient motion along a random direction per image", "blur length, px at 224 px", spatial=True),
    PerturbationSpec("gaussian_blur", fam.gaussian_blur, (3.2, 4.4, 5.8, 7.5, 9.5),
                     "soft focus / detector blur (Gaussian point spread)", "Gaussian std, px at 224 px", spatial=True),
    PerturbationSpec("jpeg", fam.jpeg, (60, 40, 27, 18, 11),
                     "lossy JPEG compression (PACS export, teledermatology upload)", "JPEG quality (lower = worse)"),
    PerturbationSpec("pixelate", fam.pixelate, (2.0, 3.0, 4.5, 6.5, 9.0),
                     "low-resolution capture shown blocky", "block size, px at 224 px", spatial=True),
    PerturbationSpec("brightness_up", fam.brightness, (1.08, 1.17, 1.27, 1.38, 1.5),
                     "over-exposure: intensities scaled up, highlights clip", "intensity multiplier"),
    PerturbationSpec("brightness_down", fam.brightness, (0.85, 0.72, 0.6, 0.49, 0.4),
                     "under-exposure: intensities scaled down", "intensity multiplier"),
    PerturbationSpec("contrast_up", fam.contrast, (1.15, 1.3, 1.5, 1.75, 2.0),
                     "contrast stretched about the mean luminance, extremes clip", "contrast factor"),
    PerturbationSpec("contrast_down", fam.contrast, (0.8, 0.66, 0.53, 0.42, 0.33),
                     "contrast compressed toward the mean luminance (flat, hazy image)", "contrast factor"),
    PerturbationSpec("gamma_up", fam.gamma, (1.2, 1.45, 1.75, 2.1, 2.6),
                     "gamma > 1: darker mid-tones (X-ray display / detector curve)", "gamma exponent"),
    PerturbationSpec("gamma_down", fam.gamma, (0.83, 0.69, 0.57, 0.48, 0.39),
                     "gamma < 1: lifted mid-tones, washed-out look", "gamma exponent"),
    PerturbationSpec("black_corners", fam.black_corners, (0.92, 0.84, 0.76, 0.68, 0.6),
                     "dermatoscope field stop: black outside a centred circle", "circle radius / half-diagonal"),
    PerturbationSpec("hair", fam.hair, ((4, 1.2), (8, 1.4), (13, 1.6), (19, 1.8), (26, 2.0)),
                     "dark curved hairs over the skin", "(hair count, hair width px at 224 px)", spatial=True),
)

# The registry: name -> spec (lookup by dict, never by if/elif).
PERTURBATIONS: dict[str, PerturbationSpec] = {spec.name: spec for spec in _SPECS}


def get_perturbation(name: str) -> PerturbationSpec:
    try:
        return PERTURBATIONS[name]
    except KeyError:
        raise ValueError(f"unknown perturbation {name!r}; known: {', '.join(PERTURBATIONS)}") from None
