"""The runs and bundles the bundle tests share: made once per test session (the probes take seconds)."""

from __future__ import annotations

import pytest

from crsbench import api
from crsbench.bundles import from_results, write_bundle
from _bundle_fixtures import PIXELS_4, PIXELS_8, suite


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Group A runs the reference and colour-texture, group B the reference and pixels-4, each in its own
    folder; the joint run has all three. The embedding cache is shared: it never changes a number."""
    root = tmp_path_factory.mktemp("bundles")
    out = {}
    for name, encoders in (("a", [PIXELS_8, "colour-texture"]), ("b", [PIXELS_8, PIXELS_4]),
                           ("joint", [PIXELS_8, "colour-texture", PIXELS_4])):
        made = suite(root, name, encoders)
        api.run(made)
        out[name] = made.output
    out["root"] = root
    return out


@pytest.fixture(scope="session")
def bundles(runs):
    root = runs["root"]
    out = {name: write_bundle(from_results(runs[name]), root / f"{name}.crsb")[0] for name in ("a", "b")}
    # group A's results with each case's subgroup attributes (`crsbench bundle --with-subgroups`)
    out["a_subgroups"] = write_bundle(from_results(runs["a"], with_subgroups=True), root / "a-subgroups.crsb")[0]
    return out
