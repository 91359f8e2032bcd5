"""Institutional shift on real chest X-rays: each demo encoder's AUROC on PneumoniaMNIST's test split
(paediatric, one hospital) and on the multi-source adult set, with the probe trained on PneumoniaMNIST.

    python benchmarks/real_shift.py [DATA_DIR] [--out DIR] [--smoke]

DATA_DIR (default ../shared/data beside the repository) holds medmnist/pneumoniamnist.npz and
cxr_multisource/cxr_multisource_128.npz. Runs through the real pipeline (suite -> cache -> probe ->
records), 5 seeds at 100% labels, and prints the drop. `--smoke`: the raw-pixels baseline alone (no weights to
fetch, the cheapest features), one seed.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from crsbench import api
from crsbench.core.progress import RichProgress
from crsbench.plan.suite import parse_suite

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
NEEDS_SHARED_DATA = ("medmnist/pneumoniamnist.npz", "cxr_multisource/cxr_multisource_128.npz")
HEADER = "condition_kind"
ENCODERS = [
    {"name": "efficientnet-lite0", "label": "lite0-128", "options": {"input_size": 128}},
    {"name": "efficientnet-lite1", "label": "lite1-128", "options": {"input_size": 128}},
    {"name": "efficientnet-lite2", "label": "lite2-128", "options": {"input_size": 128}},
    "raw-pixels",
    "colour-texture",
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, nargs="?", default=DATA)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--smoke", action="store_true", help="raw pixels alone, one seed")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="crsbench-shift-"))
    encoders, reference, seeds = (["raw-pixels"], "raw-pixels", [0]) if args.smoke else (ENCODERS, "lite0-128", [0, 1, 2, 3, 4])
    suite = parse_suite({
        "name": "pneumonia-shift", "output": str(out), "cache": str(out / "cache"), "reference": reference,
        "encoders": encoders,
        "tasks": [{
            "name": "pneumonia",
            # the copy we test with is re-packed (same images, another order): its md5 is not the official one
            "dataset": {"kind": "medmnist", "name": "pneumoniamnist",
                        "path": str(args.data_dir / "medmnist" / "pneumoniamnist.npz"), "verify_md5": False},
            "shift": {"kind": "npz", "path": str(args.data_dir / "cxr_multisource" / "cxr_multisource_128.npz"),
                      "class_names": ["no finding", "pneumonia"], "modality": "chest_xray", "name": "cxr-multisource"},
            "shift_label_map": {"no finding": "normal"},
        }],
        "seeds": seeds, "fractions": [1.0],
    })
    api.run(suite, progress=RichProgress())
    records = api.records(out)
    table = records.pivot_table(index="encoder", columns="condition_kind", values="auroc", aggfunc="mean")
    table["drop"] = table["clean"] - table["shift"]
    print(table.sort_values("clean", ascending=False).round(3).to_string())


if __name__ == "__main__":
    main()
