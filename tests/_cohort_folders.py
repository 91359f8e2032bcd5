"""A team's cohort folder (images/ and labels.csv) written for `select` tests."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from PIL import Image


def cohort_folder(tmp_path: Path, rows: list[dict], broken: tuple[str, ...] = (), size: int = 16) -> Path:
    """A cohort folder: tiny PNGs under images/ and labels.csv with the given rows."""
    folder = tmp_path / "cohort"
    (folder / "images").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for row in rows:
        path = folder / "images" / row["image"]
        if row["image"] in broken:
            path.write_bytes(b"not an image at all")
        else:
            Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)).save(path)
    with open(folder / "labels.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return folder


def cohort_rows(per_class: dict[str, int], patients: dict[str, int] | None = None) -> list[dict]:
    rows = []
    for cls, n in per_class.items():
        for i in range(n):
            row = {"image": f"{cls}-{i:03d}.png", "diagnosis": cls}
            if patients is not None:
                row["patient_id"] = f"{cls}-p{i % patients[cls]}"
            rows.append(row)
    return rows


def folder_suite(root: Path, folder: Path, dataset_options: str = "") -> Path:
    """A one-encoder, one-seed suite over a cohort folder (the folder kind, label column `diagnosis`), with
    `dataset_options` added to the dataset's mapping (", subgroups: [sex]")."""
    import textwrap

    suite = root / "suite.yaml"
    suite.write_text(textwrap.dedent(f"""
        name: cohort-folder
        output: {root / 'out'}
        cache: {root / 'cache'}
        encoders: [raw-pixels]
        tasks:
          - name: t
            dataset: {{kind: folder, root: {folder / 'images'}, csv: {folder / 'labels.csv'},
                       label_columns: diagnosis{dataset_options}}}
        seeds: [0]
        fractions: [1.0]
        perturbations: {{select: [jpeg], severities: [3]}}
    """))
    return suite
