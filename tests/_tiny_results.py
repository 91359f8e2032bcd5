"""A results folder scored in a second: two encoders, one generated task, three seeds, one perturbation."""

from __future__ import annotations

import textwrap
from pathlib import Path

from crsbench import api


def tiny_results(root: Path) -> Path:
    """Run the tiny suite into `root`/out and return that folder."""
    suite = root / "s.yaml"
    suite.write_text(textwrap.dedent(f"""
        name: tiny
        output: {root / 'out'}
        cache: {root / 'cache'}
        encoders: [raw-pixels, colour-texture]
        tasks:
          - name: derm
            dataset: {{kind: demo, specialty: derm, n_train: 60, n_val: 20, n_test: 30}}
        seeds: [0, 1, 2]
        fractions: [0.5, 1.0]
        perturbations: {{select: [jpeg], severities: [3]}}
    """))
    api.run(suite)
    return root / "out"
