"""A suite names an encoder three ways: a registry name, an inline spec, or user code (module:factory)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from crsbench.errors import SuiteError
from crsbench.run.runner import SuiteRun
from crsbench.plan.suite import load_suite, parse_suite

USER_MODULE = '''
from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.registry import encoder_spec


def thumbnail_spec(size=8):
    """User code may hand back a spec, which the registry then builds."""
    return encoder_spec("raw-pixels").replace(name="lab-thumbnail", identifier="lab-thumbnail", resize=size,
                                              embed_dim=size * size * 3)


def channel_means():
    """...or an encoder of its own."""
    spec = encoder_spec("raw-pixels").replace(name="lab-means", source="user", identifier="lab-means", resize=8,
                                              output="pooled", embed_dim=3, adapter={})
    return CallableEncoder(spec, lambda images: images.mean(axis=(1, 2)) / 255.0)
'''

SUITE = """
name: three-ways
output: {output}
cache: {cache}
encoders:
  - raw-pixels
  - name: lab_encoders:thumbnail_spec
    label: thumb-4
    options: {{size: 4}}
  - lab_encoders:channel_means
  - spec:
      name: inline-pixels
      source: builtin
      identifier: raw-pixels
      revision: "1"
      licence: Apache-2.0
      resize: 12
      mean: [0, 0, 0]
      std: [1, 1, 1]
      output: pixels
      embed_dim: 432
      adapter: {{kind: raw-pixels}}
tasks:
  - name: derm
    dataset: {{kind: demo, specialty: derm, n_train: 40, n_val: 20, n_test: 20}}
seeds: [0]
fractions: [1.0]
probe: {{c_grid: [1.0]}}
"""


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    (tmp_path / "lab_encoders.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))


def _suite(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(SUITE.format(output=tmp_path / "out", cache=tmp_path / "cache")))
    return load_suite(path)


def test_each_way_of_naming_an_encoder_builds_it(tmp_path, user_code):
    suite = _suite(tmp_path)
    assert [e.label for e in suite.encoders] == ["raw-pixels", "thumb-4", "lab_encoders:channel_means",
                                                      "inline-pixels"]
    encoders = [choice.build() for choice in suite.encoders]
    assert [e.spec.resize for e in encoders] == [16, 4, 8, 12]
    images = np.random.default_rng(0).integers(0, 256, (2, 12, 12, 3), dtype=np.uint8)
    assert encoders[3].encode(images).shape == (2, 432)
    assert encoders[2].encode(images).shape == (2, 3)


def test_a_suite_with_all_three_runs(tmp_path, user_code):
    summary = SuiteRun(_suite(tmp_path)).run()
    assert summary.written == summary.planned_records > 0
    from crsbench.results.store import ResultsStore

    with ResultsStore(summary.output / "results.sqlite") as store:
        encoders = set(store.records()["encoder"])
    assert encoders == {"raw-pixels", "thumb-4", "lab_encoders:channel_means", "inline-pixels"}


def test_a_name_only_choice_keeps_the_suite_hash():
    """`spec` is left out of the dump when unused: suites written before it hash as they did."""
    suite = parse_suite({"name": "t", "encoders": ["raw-pixels"],
                         "tasks": [{"name": "a", "dataset": {"kind": "demo", "specialty": "derm"}}]})
    assert suite.model_dump(mode="json")["encoders"] == [{"name": "raw-pixels", "options": {}, "label_": None}]


@pytest.mark.parametrize("encoder,message", [
    ("no_such_module:factory", "encoders.0.name: encoder 'no_such_module:factory': cannot import module"),
    ("lab_encoders:absent", "module 'lab_encoders' has no callable 'absent'"),
    ({"spec": {"name": "x", "source": "builtin"}}, "encoders.0.spec."),
    ({"options": {"input_size": 8}}, "encoders.0: give exactly one of `name`"),
])
def test_bad_encoder_references_name_the_field(tmp_path, user_code, encoder, message):
    task = {"name": "a", "dataset": {"kind": "demo", "specialty": "derm"}}
    data = {"name": "t", "encoders": [encoder], "tasks": [task]}
    with pytest.raises(SuiteError, match="suite.yaml: ") as info:
        parse_suite(data, source="suite.yaml")
    assert message in str(info.value) and "\n" not in str(info.value)
