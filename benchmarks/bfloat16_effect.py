"""What bfloat16 extraction does to the results: EfficientNet-Lite0 (real ImageNet weights) in float32 and
under bfloat16 autocast, through the real pipeline (suite -> cache -> probe -> records), on RetinaMNIST
and PH2 dermoscopy.

    python benchmarks/bfloat16_effect.py [DATA_DIR] [--device auto|cpu|cuda] [--smoke]

DATA_DIR (default ../shared/data beside the repository) holds medmnist/retinamnist.npz and ph2/. Per
dataset it prints the cosine between each image's float32 and bfloat16 vectors (every split, read from
the embedding cache) and the clean-test AUROC of the two probes, seed by seed, with their paired
difference, and in how many seeds the two probes chose the same C. bfloat16 runs where the device multiplies in it natively (a CUDA GPU of compute capability
8.0 and above, a CPU with AVX512-BF16); on other hardware the autocast is forced, so the numbers are
still bfloat16's and only its speed is not. `--smoke`: the first SMOKE_IMAGES images of each RetinaMNIST split
at 32 px, one seed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from crsbench import api
from crsbench.core.hardware import choose_device
from crsbench.encoders import torch_base
from crsbench.encoders.registry import build_encoder, encoder_spec
from crsbench.plan.suite import parse_suite

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
NEEDS_SHARED_DATA = ("medmnist/retinamnist.npz", "ph2/labels.csv")
HEADER = "| dataset"
ENCODER = "efficientnet-lite0"
SEEDS, FRACTIONS = [0, 1, 2, 3, 4], [0.1, 1.0]
SMOKE_IMAGES = 80  # per split: the smoke run checks the wiring, and bfloat16 forced on a CPU is slow


def smoke_subset(source: Path, folder: Path) -> Path:
    """The first SMOKE_IMAGES images and labels of each split, as a file of the same layout."""
    with np.load(source) as full:
        arrays = {key: full[key][:SMOKE_IMAGES] for key in full.files}
    target = folder / "retinamnist-smoke.npz"
    np.savez(target, **arrays)
    return target


def datasets(data_dir: Path, smoke: bool) -> dict[str, dict]:
    retina_file = data_dir / "medmnist" / "retinamnist.npz"
    if smoke:
        retina_file = smoke_subset(retina_file, Path(tempfile.mkdtemp(prefix="crsbench-bf16-smoke-")))
    retina = {"kind": "medmnist", "name": "retinamnist", "path": str(retina_file),
              "verify_md5": False}  # the copy tested with is re-packed: same images, not the official md5
    ph2 = {"kind": "folder", "root": str(data_dir / "ph2" / "images"), "csv": str(data_dir / "ph2" / "labels.csv"),
           "image_column": "image", "label_columns": "diagnosis", "task_type": "single_label",
           "modality": "dermoscopy"}
    return {"retinamnist": retina} if smoke else {"retinamnist": retina, "ph2": ph2}


def cosines(cache: Path, fingerprints: dict[str, str]) -> np.ndarray:
    """Per image, cosine between the float32 and the bfloat16 vector, over every cached split."""
    by_item: dict[tuple, dict[str, Path]] = {}
    for sidecar in cache.glob("*.json"):
        meta = json.loads(sidecar.read_text())
        precision = fingerprints.get(meta.get("encoder_fingerprint"))
        if precision is not None:
            item = (meta["dataset"], meta["split"], meta["condition"])
            by_item.setdefault(item, {})[precision] = sidecar.with_suffix(".npy")
    values = []
    for item, paths in sorted(by_item.items()):
        if set(paths) != {"fp32", "bf16"}:
            raise SystemExit(f"the cache holds {item} in {sorted(paths)} only")
        full, reduced = (np.load(paths[p]).astype(np.float64) for p in ("fp32", "bf16"))
        values.append((full * reduced).sum(1) / (np.linalg.norm(full, axis=1) * np.linalg.norm(reduced, axis=1)))
    return np.concatenate(values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, nargs="?", default=DATA)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--smoke", action="store_true", help="RetinaMNIST alone, a few images per split at 32 px, one seed")
    args = parser.parse_args(argv)
    device = choose_device(args.device)
    native = torch_base.bfloat16_is_native(device)
    if not native:  # the numbers are bfloat16's either way; only the speed needs the hardware
        torch_base.bfloat16_is_native = lambda device: True
    options = {"device": device, **({"input_size": 32} if args.smoke else {})}
    entries = [{"name": ENCODER, "label": f"lite0-{p}", "options": {**options, "precision": p}} for p in ("fp32", "bf16")]
    fingerprints = {build_encoder(encoder_spec(ENCODER), **entry["options"]).spec.fingerprint(): entry["options"]["precision"]
                    for entry in entries}
    seeds, fractions = ([0], [1.0]) if args.smoke else (SEEDS, FRACTIONS)
    rows = []
    for name, dataset in datasets(args.data_dir, args.smoke).items():
        out = Path(tempfile.mkdtemp(prefix=f"crsbench-bf16-{name}-"))
        suite = parse_suite({"name": f"bf16-{name}", "output": str(out / "results"), "cache": str(out / "cache"),
                             "reference": "lite0-fp32", "encoders": entries,
                             "tasks": [{"name": name, "dataset": dataset}], "seeds": seeds, "fractions": fractions,
                             "perturbations": {"select": "none"}})
        api.run(suite)
        cosine = cosines(out / "cache", fingerprints)
        records = api.records(out / "results")
        clean = records[records.condition_kind == "clean"]
        table = clean.pivot_table(index=["fraction", "seed"], columns="encoder", values=["auroc", "probe_c"])
        test_cases = int(clean.n_eval.iloc[0])
        for fraction, group in table.groupby(level="fraction"):
            auroc, chosen_c = group["auroc"], group["probe_c"]
            difference = auroc["lite0-bf16"] - auroc["lite0-fp32"]
            same_c = int((chosen_c["lite0-bf16"] == chosen_c["lite0-fp32"]).sum())
            rows.append((name, len(cosine), cosine.mean(), cosine.min(), test_cases, fraction, len(group), same_c,
                         auroc["lite0-fp32"].mean(), auroc["lite0-bf16"].mean(), difference.mean(), difference.abs().max()))
    print(f"device {device}: bfloat16 {'native' if native else 'not native (autocast forced)'}; "
          f"{ENCODER}{' at 32 px' if args.smoke else ''}; clean test AUROC, seeds {seeds}")
    print(f"{HEADER} | images | cosine mean | cosine min | test cases | fraction | seeds | same C | AUROC fp32 | AUROC bf16 "
          "| mean diff | max abs diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, n, mean, low, cases, fraction, k, same_c, full, reduced, diff, worst in rows:
        print(f"| {name} | {n} | {mean:.6f} | {low:.6f} | {cases} | {fraction:g} | {k} | {same_c} of {k} | {full:.4f} "
              f"| {reduced:.4f} | {diff:+.4f} | {worst:.4f} |")


if __name__ == "__main__":
    main()
