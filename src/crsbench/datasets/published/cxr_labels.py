"""The CheXpert labeller's output (CheXpert and MIMIC-CXR-JPG share it) turned into probe targets.

Each observation is 1.0 (positive), 0.0 (negative), -1.0 (uncertain) or blank (not mentioned). Blank
becomes 0; uncertain follows a per-label policy: U-Ones (-> 1), U-Zeros (-> 0) or U-Ignore (-> NaN, a
mask that probes and metrics skip). The default, U-Ones for Atelectasis and Edema and U-Zeros for the
rest, is the best policy per label reported in the CheXpert paper (Irvin et al., 2019).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from crsbench.datasets.published.common import check_allowed
from crsbench.errors import DataError

COMPETITION_LABELS = ("Atelectasis", "Cardiomegaly", "Consolidation", "Edema", "Pleural Effusion")
POLICY_VALUES = {"U-Ones": 1.0, "U-Zeros": 0.0, "U-Ignore": np.nan}
DEFAULT_POLICY = {
    "Atelectasis": "U-Ones",
    "Cardiomegaly": "U-Zeros",
    "Consolidation": "U-Zeros",
    "Edema": "U-Ones",
    "Pleural Effusion": "U-Zeros",
}
UNCERTAIN = "uncertain"
RAW_VALUES = {"1.0": 1.0, "1": 1.0, "0.0": 0.0, "0": 0.0, "-1.0": UNCERTAIN, "-1": UNCERTAIN, "": 0.0}
_POLICY_ALIASES = {
    "uones": "U-Ones", "ones": "U-Ones",
    "uzeros": "U-Zeros", "zeros": "U-Zeros",
    "uignore": "U-Ignore", "ignore": "U-Ignore",
}  # fmt: skip


def policy_name(name: str) -> str:
    key = str(name).lower().replace("-", "").replace("_", "").replace(" ", "")
    if key not in _POLICY_ALIASES:
        raise DataError(f"unknown uncertainty policy {name!r}; expected one of {', '.join(POLICY_VALUES)}")
    return _POLICY_ALIASES[key]


def resolve_policy(uncertainty: str | Mapping[str, str] | None) -> dict[str, str]:
    """A policy per competition label: the default, one policy for all, or the default with overrides."""
    if uncertainty is None:
        return dict(DEFAULT_POLICY)
    if isinstance(uncertainty, str):
        return {label: policy_name(uncertainty) for label in COMPETITION_LABELS}
    unknown = sorted(set(uncertainty) - set(COMPETITION_LABELS))
    if unknown:
        raise DataError(f"uncertainty policy for unknown label(s) {unknown}; labels: {', '.join(COMPETITION_LABELS)}")
    return {**DEFAULT_POLICY, **{label: policy_name(p) for label, p in uncertainty.items()}}


def label_matrix(table: pd.DataFrame, policy: Mapping[str, str], path: Path) -> np.ndarray:
    """float32 [n, 5] in {0, 1, NaN}; an unknown cell value is an error naming its line."""
    columns = []
    for label in COMPETITION_LABELS:
        raw = table[label].str.strip()
        check_allowed(raw, RAW_VALUES, path, label)
        values = {**RAW_VALUES, "-1.0": POLICY_VALUES[policy[label]], "-1": POLICY_VALUES[policy[label]]}
        columns.append(raw.map(values).to_numpy(dtype=np.float32))
    return np.stack(columns, axis=1)


def certain_positives(table: pd.DataFrame) -> np.ndarray:
    """float32 [n, 5]: 1 where the labeller was sure of a finding. Splits are stratified on this, so they
    do not depend on the uncertainty policy and runs under different policies stay paired."""
    return np.stack([(table[label].str.strip().isin(("1.0", "1"))).to_numpy() for label in COMPETITION_LABELS], axis=1).astype(
        np.float32
    )
