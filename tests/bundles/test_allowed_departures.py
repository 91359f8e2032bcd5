"""`--allow FIELD` works end to end for every departure it names: group B's bundle is made to differ from
group A's in that field alone, and `compare` and `leaderboard` score the two, the departure stated in
the output and at the top of the page."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from crsbench.bundles import read_bundle, write_bundle
from crsbench.bundles.compare import FIELDS
from crsbench.cli.main import app
from _bundle_fixtures import relabel_test_cases


def _kept(bundle, keep):
    """The bundle with only the records `keep` selects, and the predictions and test sets they use."""
    bundle.records = bundle.records[keep(bundle.records)].reset_index(drop=True)
    bundle.index = bundle.index[bundle.index["record_key"].isin(set(bundle.records["record_key"]))].reset_index(drop=True)
    used = set(bundle.index["test_set"])
    bundle.test_sets = bundle.test_sets[bundle.test_sets["test_set"].isin(used)].reset_index(drop=True)
    bundle.cases = {k: v for k, v in bundle.cases.items() if k in used}
    return bundle


def _facts(**changes):
    def edit(bundle):
        bundle.facts = {**bundle.facts, **changes}
        return bundle
    return edit


def _more_classes(bundle):
    """The derm records scored on one class more (one the test set never holds)."""
    derm = bundle.records["task"] == "derm"
    for column, extra in (("auroc_per_class", None), ("positives_train", 0), ("positives_eval", 0)):
        bundle.records.loc[derm, column] = [json.dumps(json.loads(v) + [extra]) for v in bundle.records.loc[derm, column]]
    return bundle


def _other_dataset(bundle):
    bundle.records.loc[bundle.records["task"] == "derm", "dataset_fingerprint"] = "0" * 64
    return bundle


def _other_split(bundle):
    return relabel_test_cases(bundle)


def _other_crs(bundle):
    bundle.suites[-1]["suite"]["crs"] = {"n_weight_draws": 50}
    return bundle


# field -> how group B's bundle departs from group A's in that field alone
DEPARTS = {
    "protocol": _facts(protocol_version="crs-bench-1-local"),
    "solver": _facts(solver={"name": "another-solver", "probe_fingerprints": ["0123456789abcdef"]}),
    "tasks": lambda b: _kept(b, lambda r: r["task"] == "derm"),
    "classes": _more_classes,
    "dataset": _other_dataset,
    "split": _other_split,
    "seeds": lambda b: _kept(b, lambda r: r["seed"] == 0),
    "fractions": lambda b: _kept(b, lambda r: r["fraction"] == 1.0),
    "conditions": lambda b: _kept(b, lambda r: r["condition_kind"] != "perturbation"),
    "crs": _other_crs,
}


def test_every_departure_field_has_a_case():
    assert sorted(DEPARTS) == sorted(FIELDS)


@pytest.mark.slow  # two bundles scored and a page built for each departure
@pytest.mark.parametrize("field", list(DEPARTS))
def test_an_allowed_departure_scores_on_compare_and_builds_the_leaderboard(bundles, tmp_path, field):
    other, _ = write_bundle(DEPARTS[field](copy.deepcopy(read_bundle(bundles["b"]))), tmp_path / "other.crsb")
    runner = CliRunner()
    sources = [str(bundles["a"]), str(other)]
    refused = runner.invoke(app, ["compare", *sources, "--n-boot", "10"])
    assert refused.exit_code == 2 and f"--allow {field}" in refused.output, refused.output
    compared = runner.invoke(app, ["compare", *sources, "--n-boot", "10", "--allow", field])
    assert compared.exit_code == 0, compared.output
    assert f"departure (--allow {field}): {field} differ" in compared.output
    site = tmp_path / "site"
    built = runner.invoke(app, ["leaderboard", *sources, "-o", str(site), "--n-boot", "10", "--allow", field])
    assert built.exit_code == 0, built.output
    page = (site / "index.html").read_text(encoding="utf-8")
    assert f"departure (--allow {field}): {field} differ" in page
    assert page.index(f"departure (--allow {field})") < page.index("Across tasks")  # at the top of the page
