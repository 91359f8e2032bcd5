"""Small suites run by two groups apart and jointly, and the zip surgery the bundle tests use to build
tampered and hostile bundles."""

from __future__ import annotations

import json
import struct
import zipfile

import numpy as np

from crsbench.bundles.manifest import json_bytes, sha256_hex
from crsbench.results.predictions import CaseSet
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


def central_entries(data: bytes):
    """(offset of each central-directory entry, its member name) in the zip bytes `data`."""
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        yield at, data[at + 46: at + 46 + length].decode()
        at = data.find(b"PK\x01\x02", at + 46 + length)


def patched_member(path, member: str, *, flags: int = 0, method: int | None = None):
    """`member`'s general-purpose flags ORed with `flags` and its compression method set to `method`, in
    its local header and its central-directory entry alike (the data itself untouched)."""
    data = bytearray(path.read_bytes())
    for at, name in list(central_entries(bytes(data))):
        if name != member:
            continue
        local = struct.unpack_from("<I", data, at + 42)[0]
        for header, flag_at, method_at in ((at, 8, 10), (local, 6, 8)):
            struct.pack_into("<H", data, header + flag_at, struct.unpack_from("<H", data, header + flag_at)[0] | flags)
            if method is not None:
                struct.pack_into("<H", data, header + method_at, method)
    path.write_bytes(bytes(data))
    return path


def member_data_offset(data: bytes, member: str) -> tuple[int, int]:
    """(where `member`'s stored bytes start, how many there are) in the zip bytes `data`."""
    for at, name in central_entries(data):
        if name == member:
            local = struct.unpack_from("<I", data, at + 42)[0]
            size = struct.unpack_from("<I", data, at + 20)[0]
            name_length, extra_length = struct.unpack_from("<HH", data, local + 26)
            return local + 30 + name_length + extra_length, size
    raise KeyError(member)


def relabel_test_cases(bundle, task: str = "cxr"):
    """`bundle` with every case id of `task`'s test set renamed: another split of the same task."""
    row = bundle.test_sets[(bundle.test_sets["task"] == task) & (bundle.test_sets["role"] == "test")].iloc[0]
    old = bundle.cases.pop(row["test_set"])
    moved = CaseSet(np.array([f"x{c}" for c in old.case_id]), old.cluster, old.labels, old.task, old.role)
    bundle.cases[moved.identity()] = moved
    for frame in (bundle.test_sets, bundle.index):
        frame["test_set"] = frame["test_set"].replace({row["test_set"]: moved.identity()})
    return bundle
