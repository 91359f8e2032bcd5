"""Mean SSIM to the clean image by perturbation x severity, per modality set, on real images.

    python benchmarks/perturbation_ssim.py [--n 32] [--ph2 8] [--seed 0] [--smoke]

Data from ../shared/data relative to the repo root (see its README): PH2 dermoscopy (resized and
centre-cropped to 192 px), RetinaMNIST test (28 px RGB), PneumoniaMNIST test (28 px grey) and the
multi-source CXR set (128 px grey). Each set is checked on the data of its modality; "generic" on
all four. `min gap` is the smallest drop between consecutive severities (must be > 0).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps

from crsbench.perturbations import MODALITY_SETS, SEVERITIES, perturb, ssim

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# what it reads under DATA: the smoke test skips, naming the first one absent
NEEDS_SHARED_DATA = ("ph2/images", "medmnist/retinamnist.npz", "medmnist/pneumoniamnist.npz",
                     "cxr_multisource/cxr_multisource_128.npz")
HEADER = "## "
SMOKE = dict(n=4, ph2=2)


def load(n: int, n_ph2: int) -> dict[str, np.ndarray]:
    """name -> uint8 [b, H, W, 3]."""
    ph2 = sorted((DATA / "ph2" / "images").glob("*.jpg"))[:n_ph2]
    grey = lambda a: np.repeat(a[..., None], 3, axis=-1)  # noqa: E731
    return {
        "ph2@192": np.stack([np.asarray(ImageOps.fit(Image.open(p).convert("RGB"), (192, 192))) for p in ph2]),
        "retinamnist@28": np.load(DATA / "medmnist" / "retinamnist.npz")["test_images"][:n],
        "pneumoniamnist@28": grey(np.load(DATA / "medmnist" / "pneumoniamnist.npz")["test_images"][:n]),
        "cxr_multisource@128": grey(np.load(DATA / "cxr_multisource" / "cxr_multisource_128.npz")["images"][:n]),
    }


DATASETS_FOR = {
    "dermoscopy": ("ph2@192",),
    "fundus": ("retinamnist@28",),
    "chest_xray": ("pneumoniamnist@28", "cxr_multisource@128"),
    "generic": ("ph2@192", "retinamnist@28", "pneumoniamnist@28", "cxr_multisource@128"),
}


def mean_ssim_table(images: np.ndarray, dataset: str, names: tuple[str, ...], seed: int) -> dict[str, list[float]]:
    clean = torch.from_numpy(images).permute(0, 3, 1, 2)
    ids = [f"{dataset}/{i}" for i in range(len(images))]
    return {
        name: [float(ssim(clean, perturb(clean, ids, name, s, seed)).mean()) for s in SEVERITIES]
        for name in names
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=32, help="images per MedMNIST / CXR dataset")
    ap.add_argument("--ph2", type=int, default=8, help="PH2 images")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core box)")
    ap.add_argument("--smoke", action="store_true", help=f"seconds: {SMOKE}")
    args = ap.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    torch.set_num_threads(args.threads)
    if not DATA.is_dir():
        raise SystemExit(f"no data at {DATA}")
    data = load(args.n, args.ph2)
    t0 = time.perf_counter()
    bad = 0
    for modality, names in MODALITY_SETS.items():
        for dataset in DATASETS_FOR[modality]:
            table = mean_ssim_table(data[dataset], dataset, names, args.seed)
            print(f"\n{HEADER}{modality} on {dataset} ({len(data[dataset])} images): mean SSIM to clean")
            print(f"| {'perturbation':<16} | " + " | ".join(f"  s{s}  " for s in SEVERITIES) + " | min gap |")
            print(f"|{'-' * 18}|" + "|".join("-" * 8 for _ in SEVERITIES) + "|---------|")
            for name, row in table.items():
                gap = min(a - b for a, b in zip(row, row[1:]))
                bad += gap <= 0
                flag = "" if gap > 0 else "  NOT MONOTONE"
                print(f"| {name:<16} | " + " | ".join(f"{v:.4f}" for v in row) + f" | {gap:7.4f} |{flag}")
    print(f"\n{time.perf_counter() - t0:.1f} s; {bad} non-monotone rows")


if __name__ == "__main__":
    main()
