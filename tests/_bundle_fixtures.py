"""Small suites run by two groups apart and jointly, and the zip surgery the bundle tests use to build
tampered and hostile bundles."""

from __future__ import annotations

import json
import zipfile

from crsbench.bundles.manifest import json_bytes, sha256_hex
from crsbench.plan.suite import parse_suite

SIZES = {"n_train": 40, "n_val": 16, "n_test": 24, "image_size": 32}
# small raw-pixel encoders keep the probes quick: 8 x 8 and 4 x 4 pixels, 192 and 48 dimensions
PIXELS_8 = {"name": "raw-pixels", "label": "pixels-8", "options": {"input_size": 8}}
PIXELS_4 = {"name": "raw-pixels", "label": "pixels-4", "options": {"input_size": 4}}
N_BOOT = 200


def suite(root, name, encoders, c_grid=(0.1,), seeds=(0, 1), reference="pixels-8"):
    return parse_suite({
        "name": name, "output": str(root / name), "cache": str(root / "cache"), "reference": reference,
        "encoders": encoders,
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES},
                   "shift": {"kind": "demo", "specialty": "derm", "site": "B", **SIZES}},
                  {"name": "cxr", "dataset": {"kind": "demo", "specialty": "cxr", **SIZES}}],
        "seeds": list(seeds), "fractions": [0.5, 1.0], "probe": {"c_grid": list(c_grid)},
        "perturbations": {"select": ["gaussian_noise"], "severities": [1, 3]},
    })


def bundle_members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {n: archive.read(n) for n in archive.namelist()}


def rehashed_manifest(members: dict[str, bytes]) -> bytes:
    """The manifest rewritten to match `members` (what a careful forger does)."""
    manifest = json.loads(members["manifest.json"])
    manifest["files"] = {n: {"sha256": sha256_hex(d), "bytes": len(d)} for n, d in sorted(members.items())
                         if n != "manifest.json"}
    return json_bytes(manifest)


def zipped(path, members, rehash: bool = False):
    """A zip of `members` (a mapping, or (name, bytes) pairs where a name may repeat); `rehash`: with the
    manifest rewritten to match."""
    if rehash:
        members = {**members, "manifest.json": rehashed_manifest(members)}
    pairs = list(members.items()) if isinstance(members, dict) else list(members)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in pairs:
            archive.writestr(name, data)
    return path
