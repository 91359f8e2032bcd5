"""The declarative catalogue: 15 families, complete specs, lazy imports, one-line errors."""

from __future__ import annotations

import subprocess
import sys
import numpy as np
import pytest

from crsbench.encoders.base import GROUPS, CallableEncoder
from crsbench.encoders.registry import BUILDERS, encoder_names, encoder_spec, get_encoder, register_encoder
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.zoo import SPECS
from crsbench.errors import EncoderError

FAMILIES = {
    "general": {"ImageNet ResNet-50", "ViT-B/16", "ConvNeXt", "DINOv2", "CLIP", "SigLIP"},
    "broad-medical": {"BiomedCLIP", "MedSigLIP", "MedGemma image encoder", "PubMedCLIP", "RadImageNet ResNet-50"},
    "specialty": {"PanDerm", "RETFound", "RAD-DINO", "CheXzero"},
}
ZOO = {spec.name: spec for spec in SPECS}


def test_the_fifteen_families_of_the_protocol():
    by_group = {}
    for spec in SPECS:
        by_group.setdefault(spec.group, set()).add(spec.family)
    assert by_group == FAMILIES
    assert len(ZOO) == 15 and set(ZOO) <= set(encoder_names())


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_entry_is_complete(name):
    spec = encoder_spec(name)
    assert spec is ZOO[name] and spec.source in BUILDERS and spec.group in GROUPS
    for text in (spec.identifier, spec.licence, spec.output_detail, spec.card):
        assert text
    assert all(s > 0 for s in spec.std)
    assert spec.confirmed or spec.status.startswith("unconfirmed: ")
    assert spec.hub_repo or spec.how_to_get  # a user can always find the weights
    assert (spec.group == "specialty") == (spec.specialty != "none")
    assert spec.crop is None or spec.crop < spec.resize  # a crop that equals the resize is no crop


def test_listing_and_building_import_no_model_library():
    code = (
        "import sys; from crsbench.encoders.registry import get_encoder, encoder_names, encoder_spec;"
        "[encoder_spec(n) for n in encoder_names()];"
        "get_encoder('rad-dino'); get_encoder('biomedclip'); get_encoder('resnet50-in1k');"
        "print(sorted(m for m in ('timm', 'open_clip', 'transformers', 'huggingface_hub') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_missing_library_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # import timm now raises ImportError
    encoder = get_encoder("resnet50-in1k", weights="/")
    with pytest.raises(EncoderError) as info:
        encoder.encode(np.zeros((1, 256, 256, 3), np.uint8))
    assert "pip install 'crsbench[zoo]'" in str(info.value) and "\n" not in str(info.value)


def test_unknown_option_is_rejected():
    with pytest.raises(EncoderError, match="unknown options"):
        get_encoder("rad-dino", batch=3)


def test_revision_and_local_weights_change_the_fingerprint(tmp_path):
    base = get_encoder("rad-dino").spec.fingerprint()
    assert get_encoder("rad-dino").spec.revision == "c3736a62544137a0450cc4fa02c9e37e55f28e32"  # pinned
    assert get_encoder("rad-dino", revision="abc123").spec.revision == "abc123"  # the suite's pin wins
    assert get_encoder("rad-dino", revision="abc123").spec.fingerprint() != base
    assert get_encoder("rad-dino", weights=str(tmp_path)).spec.fingerprint() != base


def test_declaring_a_new_encoder_is_a_few_lines(monkeypatch):
    from crsbench.encoders import registry

    encoder_names()
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))  # leave the global registry as it was
    spec = EncoderSpec(
        name="my-derm-vit", family="my lab's ViT", group="specialty", specialty="dermatology", source="timm",
        identifier="my-lab/derm-vit", revision="v1", licence="internal", resize=224, mean=(0.5,) * 3,
        std=(0.5,) * 3, output="cls", embed_dim=768, card="224x224", adapter={"arch": "vit_base_patch16_224"},
    )
    register_encoder(spec)
    assert "my-derm-vit" in encoder_names() and encoder_spec("my-derm-vit").identifier == "my-lab/derm-vit"
    with pytest.raises(EncoderError, match="already registered"):
        register_encoder(spec)


def test_any_callable_is_an_encoder(monkeypatch):
    from crsbench.encoders import registry

    encoder_names()
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    spec = EncoderSpec(name="mean-colour", family="mean colour", source="user", identifier="mean-colour",
                       revision="1", licence="Apache-2.0", resize=32, mean=(0.0,) * 3, std=(1.0,) * 3,
                       output="pooled", embed_dim=3, group="baseline", adapter={})
    register_encoder(spec, lambda: CallableEncoder(spec, lambda x: x.mean(axis=(1, 2))))
    vectors = get_encoder("mean-colour").encode(np.full((2, 32, 32, 3), 255, np.uint8))
    assert vectors.dtype == np.float32 and vectors.shape == (2, 3)
    assert encoder_spec("mean-colour") is spec


def test_engine_resize_follows_each_card():
    for spec in SPECS:
        expected = "bicubic" if "bicubic" in spec.card else "bilinear"
        assert spec.interpolation == expected, spec.name
