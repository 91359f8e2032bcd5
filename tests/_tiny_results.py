"""A results folder scored in a second: two encoders, one generated task, three seeds, one perturbation."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from crsbench import api


def tiny_suite(root: Path, refits: int = 0, name: str = "tiny", n_boot: int | None = None) -> Path:
    """Write the tiny suite (with `refits` refits at 100 % labels, and its `crs:` block's `n_boot`, when
    given) to `root` and return its path."""
    suite = root / f"{name}.yaml"
    suite.write_text(textwrap.dedent(f"""
        name: {name}
        output: {root / 'out'}
        cache: {root / 'cache'}
        encoders: [raw-pixels, colour-texture]
        tasks:
          - name: derm
            dataset: {{kind: demo, specialty: derm, n_train: 60, n_val: 20, n_test: 30}}
        seeds: [0, 1, 2]
        fractions: [0.5, 1.0]
        perturbations: {{select: [jpeg], severities: [3]}}
    """) + (f"refits: {refits}\n" if refits else "") + (f"crs: {{n_boot: {n_boot}}}\n" if n_boot is not None else ""))
    return suite


def tiny_results(root: Path) -> Path:
    """Run the tiny suite into `root`/out and return that folder."""
    api.run(tiny_suite(root))
    return root / "out"


def copied_results(root: Path, into: Path) -> Path:
    """A copy of a tiny run's folder (suite, out/, cache/) in `into`, for tests that score or report into
    it; returns the copy's out/ folder."""
    shutil.copytree(root, into, dirs_exist_ok=True)
    return into / "out"
