"""Small image files and label CSVs written for dataset tests."""

from pathlib import Path

import numpy as np
from PIL import Image


def save_image(path: Path, size=(40, 30), mode="RGB", value=None, seed=0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    channels = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    array = np.full(channels, value, np.uint8) if value is not None else rng.integers(0, 256, channels, dtype=np.uint8)
    Image.fromarray(array, mode=mode).save(path)
    return path


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text.strip() + "\n")
    return path
