"""The perturbations' and modality sets' names, without the functions (and without torch): what a suite
is checked against. `registry` holds the functions; a test keeps the two in step."""

from __future__ import annotations

PERTURBATION_NAMES: tuple[str, ...] = (
    "gaussian_noise", "speckle_noise", "shot_noise", "impulse_noise", "defocus_blur", "motion_blur",
    "gaussian_blur", "jpeg", "pixelate", "brightness_up", "brightness_down", "contrast_up", "contrast_down",
    "gamma_up", "gamma_down", "black_corners", "hair",
)

MODALITY_SETS: dict[str, tuple[str, ...]] = {
    # Handheld digital dermatoscope / phone: focus, motion, exposure, upload compression, plus the
    # modality's own occlusions (hair, the dermatoscope's round field stop).
    "dermoscopy": (
        "gaussian_noise", "shot_noise", "defocus_blur", "motion_blur", "jpeg", "pixelate",
        "brightness_up", "brightness_down", "contrast_up", "contrast_down", "black_corners", "hair",
    ),
    # Fundus camera: defocus and eye movement, flash under/over-exposure, media haze (low contrast),
    # sensor noise and JPEG storage.
    "fundus": (
        "gaussian_noise", "speckle_noise", "shot_noise", "defocus_blur", "motion_blur", "jpeg",
        "brightness_up", "brightness_down", "contrast_down",
    ),
    # Radiography: quantum mottle (shot), detector noise and dead pixels, patient motion, detector
    # blur, exposure and display-curve (gamma) differences, lossy PACS export.
    "chest_xray": (
        "gaussian_noise", "shot_noise", "impulse_noise", "gaussian_blur", "motion_blur", "jpeg",
        "brightness_up", "brightness_down", "contrast_up", "contrast_down", "gamma_up", "gamma_down",
    ),
    # Anything else: modality-neutral noise, blur, compression and intensity changes.
    "generic": (
        "gaussian_noise", "speckle_noise", "shot_noise", "impulse_noise", "gaussian_blur",
        "defocus_blur", "motion_blur", "jpeg", "brightness_up", "brightness_down", "contrast_up",
        "contrast_down",
    ),
}

MODALITIES = tuple(MODALITY_SETS)
