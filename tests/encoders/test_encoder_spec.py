"""EncoderSpec: strict, frozen, fingerprinted on what changes the vectors; the registry lists specs
without building anything and takes encoders from installed packages' entry points."""

from __future__ import annotations

import sys
from importlib import metadata

import numpy as np
import pytest
from pydantic import ValidationError

from crsbench.encoders import registry
from crsbench.encoders.registry import encoder_names, encoder_spec, get_encoder
from crsbench.encoders.spec import EncoderSpec, TimmOptions, parse_spec
from crsbench.errors import EncoderError

BASE = dict(name="my-vit", source="timm", identifier="my-lab/vit", licence="mit", resize=256, crop=224,
            interpolation="bicubic", mean=(0.5,) * 3, std=(0.5,) * 3, output="cls", embed_dim=768,
            adapter={"arch": "vit_base_patch16_224"})


def test_adapter_options_are_the_sources_model():
    spec = EncoderSpec(**BASE)
    assert isinstance(spec.adapter, TimmOptions) and spec.revision is None and spec.revision_label == "not pinned"
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        EncoderSpec(**{**BASE, "adapter": {"arch": "x", "kind": "dinov2"}})  # a transformers option on timm
    with pytest.raises(ValidationError):
        EncoderSpec(**{**BASE, "source": "transformers"})  # timm options for a transformers source


@pytest.mark.parametrize("field,value", [("embedding", "cls"), ("input_size", 224), ("resize_to", 256)])
def test_an_unknown_field_is_rejected(field, value):
    with pytest.raises(EncoderError, match=f"{field}: Extra inputs are not permitted"):
        parse_spec({**BASE, field: value}, where="suite.yaml encoders.0.spec")


@pytest.mark.parametrize("field,value", [("output", "mean"), ("interpolation", "nearest"), ("source", "keras"),
                                         ("crop", 300), ("std", (0.5, 0.0, 0.5))])
def test_invalid_values_are_rejected(field, value):
    with pytest.raises(EncoderError, match="my spec: "):
        parse_spec({**BASE, field: value}, where="my spec")


def test_the_spec_is_frozen():
    spec = EncoderSpec(**BASE)
    with pytest.raises(ValidationError):
        spec.resize = 128


@pytest.mark.parametrize("field,value", [
    ("family", "another wording"), ("output_detail", "the CLS token, reworded"), ("card", "new card text"),
    ("notes", "a note"), ("how_to_get", "ask us"), ("status", "unconfirmed: everything"), ("licence", "apache-2.0"),
    ("group", "specialty"), ("specialty", "dermatology"), ("name", "renamed"), ("embed_dim", 769),
])
def test_free_text_and_metadata_keep_the_fingerprint(field, value):
    spec = EncoderSpec(**BASE)
    assert spec.replace(**{field: value}).fingerprint() == spec.fingerprint()


@pytest.mark.parametrize("field,value", [
    ("resize", 248), ("crop", 196), ("crop", None), ("interpolation", "bilinear"), ("mean", (0.4, 0.5, 0.5)),
    ("std", (0.5, 0.5, 0.6)), ("output", "pooled"), ("revision", "3f2a9c1"), ("identifier", "other/vit"),
    ("hub_repo", "other/vit"), ("adapter", {"arch": "vit_base_patch16_224", "create_kwargs": {"global_pool": "avg"}}),
    ("precision", "bf16"),
])
def test_what_changes_the_vectors_changes_the_fingerprint(field, value):
    spec = EncoderSpec(**BASE)
    assert spec.replace(**{field: value}).fingerprint() != spec.fingerprint()


def test_listing_builds_nothing_even_when_no_builder_can_be_imported(monkeypatch):
    modules = list(registry.BUILDERS.values()) + ["crsbench.encoders.torch_base", "torch", "timm", "transformers"]
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # importing any of them now fails
    monkeypatch.setattr(registry, "_ENTRIES", {})
    monkeypatch.setattr(registry, "_loaded", False)
    names = encoder_names()
    assert {"efficientnet-lite0", "raw-pixels", "colour-texture", "rad-dino"} <= set(names)
    assert all(encoder_spec(name).fingerprint() for name in names)
    from crsbench.cli.commands.encoders import registry_table

    assert registry_table().row_count == len(names)
    with pytest.raises(ImportError):
        get_encoder("raw-pixels")  # building is what imports


class _FakeEntryPoint:
    def __init__(self, name, value, obj):
        self.name, self.value, self._obj = name, value, obj

    def load(self):
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def _with_entry_points(monkeypatch, *given):
    """A fake installed distribution: importlib.metadata answers the group with these entry points."""
    real = metadata.entry_points

    def entry_points(**params):
        return list(given) if params.get("group") == registry.ENTRY_POINT_GROUP else real(**params)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_ENTRIES", {})
    monkeypatch.setattr(registry, "_loaded", False)


def test_an_installed_package_adds_encoders_through_the_entry_point_group(monkeypatch):
    plugin = EncoderSpec(**{**BASE, "name": "plugin-vit"})
    pixels = encoder_spec("raw-pixels").replace(name="plugin-pixels", resize=8)
    _with_entry_points(monkeypatch, _FakeEntryPoint("vit", "lab_encoders:SPEC", plugin),
                       _FakeEntryPoint("more", "lab_encoders:specs", lambda: [pixels]))
    assert {"plugin-vit", "plugin-pixels", "raw-pixels"} <= set(encoder_names())
    assert encoder_spec("plugin-vit") is plugin
    assert get_encoder("plugin-pixels").encode(np.zeros((2, 8, 8, 3), np.uint8)).shape == (2, 192)


@pytest.mark.parametrize("obj,message", [(ImportError("no module lab_encoders"), "cannot load"),
                                         ("not a spec", "must give an EncoderSpec")])
def test_a_broken_entry_point_is_one_line_naming_it(monkeypatch, obj, message):
    _with_entry_points(monkeypatch, _FakeEntryPoint("broken", "lab_encoders:SPEC", obj))
    with pytest.raises(EncoderError, match=message) as info:
        encoder_names()
    assert "'broken' (lab_encoders:SPEC)" in str(info.value) and "\n" not in str(info.value)
