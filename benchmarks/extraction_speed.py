"""Extraction speed: our path against a plain loop over the same model and images, in one run.

  - ours: `crsbench.embed.extraction.iter_batches` (DataLoader, split order, the engine's resize as the
    prepare step) feeding the real timm adapter (`TimmEncoder`: lazy build, strict safetensors load,
    centre crop, normalisation, inference_mode, float32 numpy out);
  - plain: a for-loop slicing the array, `normalise_batch`, `model(x)` under inference_mode.
Same weights (a random ResNet saved as model.safetensors), same images, same batch size; the two
alternate for `--repeats` rounds and the best round of each counts. The vectors must agree. The
ratio ours/plain must be at least 0.9 (exit status 1 otherwise). On a GPU machine run it there too:
it picks cuda automatically (`--device`), with autocast off so the vectors stay comparable.
Run: python benchmarks/extraction_speed.py [--arch resnet18 --images 192 --batch-size 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch

from crsbench.datasets.base import ArrayImages
from crsbench.embed.cache import resize_batch
from crsbench.encoders.base import normalise_batch
from crsbench.encoders.registry import build_encoder, encoder_spec
from crsbench.encoders.torch_base import select_device
from crsbench.embed.extraction import iter_batches

SIZE = 224


def _resize(size, batch, ids):
    return resize_batch(batch, size)


def ours(encoder, images: ArrayImages, batch_size: int, workers: int) -> np.ndarray:
    ids = [str(i) for i in range(len(images))]
    chunks = [
        encoder.encode(batch)
        for _, batch in iter_batches(images, ids, batch_size, num_workers=workers, prepare=partial(_resize, SIZE))
    ]
    return np.concatenate(chunks)


def plain(model, array: np.ndarray, batch_size: int, mean, std, device: str) -> np.ndarray:
    chunks = []
    for start in range(0, len(array), batch_size):
        x = normalise_batch(array[start : start + batch_size], mean, std).to(device)
        with torch.inference_mode():
            chunks.append(model(x).float().cpu().numpy())
    return np.concatenate(chunks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="resnet18")
    parser.add_argument("--images", type=int, default=192)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    import timm
    from safetensors.torch import save_file

    torch.set_num_threads(args.threads)
    device = select_device(args.device)
    torch.manual_seed(0)
    reference = timm.create_model(args.arch, pretrained=False, num_classes=0).eval().to(device)
    array = np.random.default_rng(0).integers(0, 256, (args.images, SIZE, SIZE, 3), dtype=np.uint8)
    entry = encoder_spec("resnet50-in1k").replace(name=f"bench-{args.arch}", resize=SIZE, crop=None,
                                                  adapter={"arch": args.arch})

    with tempfile.TemporaryDirectory() as folder:
        save_file({k: v.contiguous().cpu() for k, v in reference.state_dict().items()},
                  str(Path(folder) / "model.safetensors"))
        encoder = build_encoder(entry, weights=folder, device=device, precision="fp32")
        encoder.encode(array[:2])  # build and load outside the timed rounds, as a run does once
        plain(reference, array[:2], 2, entry.mean, entry.std, device)  # same warm-up for the loop

        best = {"ours": float("inf"), "plain": float("inf")}
        for _ in range(args.repeats):
            for name, run in (
                ("plain", lambda: plain(reference, array, args.batch_size, entry.mean, entry.std, device)),
                ("ours", lambda: ours(encoder, ArrayImages(array), args.batch_size, args.workers)),
            ):
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                started = time.perf_counter()
                vectors = run()
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                best[name] = min(best[name], time.perf_counter() - started)
                if name == "plain":
                    expected = vectors
                else:
                    np.testing.assert_allclose(vectors, expected, rtol=1e-4, atol=1e-4)

    rate = {name: args.images / seconds for name, seconds in best.items()}
    ratio = rate["ours"] / rate["plain"]
    print(f"device={device} arch={args.arch} images={args.images} batch={args.batch_size} "
          f"workers={args.workers} threads={args.threads}")
    print(f"plain loop : {rate['plain']:8.1f} images/s")
    print(f"ours       : {rate['ours']:8.1f} images/s")
    print(f"ratio      : {ratio:.3f} (must be >= 0.9)")
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
