"""Extraction speed: our path against a strong plain loop over the same model and images, in one run.

  - ours: the extraction engine (`crsbench.embed.cache.Embedder.extract`: batches in split order from
    `iter_batches`, the clean condition, the encoder's pixel rule as its one float resize) feeding the
    real timm adapter (`TimmEncoder`: lazy build, strict safetensors load, normalisation on the device,
    inference_mode, autocast by `precision`, float32 numpy out);
  - plain: the loop a practitioner writes for speed: slice the uint8 array, move it to the device,
    convert and normalise there, `model(x)` under inference_mode and the same autocast (channels-last
    weights and input with it, as oneDNN and cuDNN run reduced precision fastest).
Same weights (a random timm model saved as model.safetensors), same images, same batch size; the two
alternate for `--repeats` rounds and the best round of each counts. The vectors must agree (float32:
to 1e-4; bfloat16: cosine above 0.99, since the two may round differently). The ratio ours/plain must be
at least 0.9 (exit status 1 otherwise; not at `--smoke` size, whose timings are noise).
`--precision bf16` autocasts both where the device multiplies bfloat16 natively (a GPU of compute
capability 8.0 and above, a CPU with AVX512-BF16); elsewhere the project resolves it to float32 and the
loop does the same, so the comparison stays like for like.
Run: python benchmarks/extraction_speed.py [--arch resnet18 --images 192 --batch-size 32 --precision fp32|bf16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from crsbench.datasets.base import ArrayImages
from crsbench.embed.cache import Embedder
from crsbench.encoders.registry import build_encoder, encoder_spec
from crsbench.core.hardware import choose_device
from crsbench.encoders.torch_base import autocast_context, resolve_precision
from crsbench.plan.conditions import CLEAN

HEADER = "extraction speed:"
SMOKE = dict(arch="resnet18", images=8, size=64, batch_size=4, repeats=1)


def ours(encoder, array: np.ndarray, batch_size: int, workers: int) -> np.ndarray:
    ids = [str(i) for i in range(len(array))]
    return Embedder(batch_size=batch_size, num_workers=workers).extract(encoder, ArrayImages(array), ids, CLEAN, "bench")


def plain(model, array: np.ndarray, batch_size: int, mean, std, device: str, precision: str) -> np.ndarray:
    """uint8 to the device, normalised there (a quarter of the bytes a host-side float32 batch moves)."""
    mean = torch.tensor(mean, dtype=torch.float32, device=device).view(1, 3, 1, 1) * 255.0
    std = torch.tensor(std, dtype=torch.float32, device=device).view(1, 3, 1, 1) * 255.0
    layout = torch.contiguous_format if precision == "fp32" else torch.channels_last
    model = model.to(memory_format=layout)
    chunks = []
    with torch.inference_mode(), autocast_context(device, precision):
        for start in range(0, len(array), batch_size):
            x = torch.from_numpy(array[start : start + batch_size]).to(device, non_blocking=True)
            x = ((x.permute(0, 3, 1, 2).float() - mean) / std).contiguous(memory_format=layout)
            chunks.append(model(x).float().cpu().numpy())
    return np.concatenate(chunks)


def agree(vectors: np.ndarray, expected: np.ndarray, precision: str) -> None:
    if precision == "fp32":
        np.testing.assert_allclose(vectors, expected, rtol=1e-4, atol=1e-4)
        return
    cosine = (vectors * expected).sum(1) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(expected, axis=1))
    if cosine.min() < 0.99:
        raise AssertionError(f"our {precision} vectors and the loop's differ: lowest cosine {cosine.min():.4f}")


def timed(run, device: str) -> tuple[float, np.ndarray]:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    started = time.perf_counter()
    vectors = run()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - started, vectors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="resnet18", help="a timm architecture (vit_base_patch16_224, resnet50, ...)")
    parser.add_argument("--images", type=int, default=192)
    parser.add_argument("--size", type=int, default=224, help="image side; the encoder's input is this square")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--smoke", action="store_true", help=f"seconds, ratio not enforced: {SMOKE}")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)

    import timm
    from safetensors.torch import save_file

    torch.set_num_threads(args.threads)
    device = choose_device(args.device)
    precision = resolve_precision(device, args.precision)
    torch.manual_seed(0)
    reference = timm.create_model(args.arch, pretrained=False, num_classes=0).eval().to(device)
    array = np.random.default_rng(0).integers(0, 256, (args.images, args.size, args.size, 3), dtype=np.uint8)
    # the image is already the encoder's square: the pixel rule's resize is the identity, as in the loop
    entry = encoder_spec("resnet50-in1k").replace(name=f"bench-{args.arch}", resize=args.size, crop=None,
                                                  adapter={"arch": args.arch})

    with tempfile.TemporaryDirectory() as folder:
        save_file({k: v.contiguous().cpu() for k, v in reference.state_dict().items()},
                  str(Path(folder) / "model.safetensors"))
        encoder = build_encoder(entry, weights=folder, device=device, precision=precision)
        encoder.encode(array[:2])  # build and load outside the timed rounds, as a run does once
        plain(reference, array[:2], 2, entry.mean, entry.std, device, precision)  # same warm-up for the loop

        best = {"ours": float("inf"), "plain": float("inf")}
        for _ in range(args.repeats):
            seconds, expected = timed(
                lambda: plain(reference, array, args.batch_size, entry.mean, entry.std, device, precision), device)
            best["plain"] = min(best["plain"], seconds)
            seconds, vectors = timed(lambda: ours(encoder, array, args.batch_size, args.workers), device)
            best["ours"] = min(best["ours"], seconds)
            agree(vectors, expected, precision)

    rate = {name: args.images / seconds for name, seconds in best.items()}
    ratio = rate["ours"] / rate["plain"]
    enforced = not args.smoke
    print(f"{HEADER} device={device} arch={args.arch} precision={precision} images={args.images} size={args.size} "
          f"batch={args.batch_size} workers={args.workers} threads={args.threads}")
    print(f"plain loop : {rate['plain']:8.1f} images/s")
    print(f"ours       : {rate['ours']:8.1f} images/s")
    print(f"ratio      : {ratio:.3f} ({'must be >= 0.9' if enforced else 'not enforced at smoke size'})")
    return 0 if ratio >= 0.9 or not enforced else 1


if __name__ == "__main__":
    raise SystemExit(main())
