"""The declarative zoo: 15 families, complete metadata, lazy imports, one-line errors."""

from __future__ import annotations

import subprocess
import sys
import numpy as np
import pytest

from crsbench.encoders.base import GROUPS, CallableEncoder, EncoderMeta
from crsbench.encoders.registry import encoder_names, get_encoder, register_encoder
from crsbench.encoders.zoo import ADAPTERS, ZOO, ZooEntry, describe, register_zoo_entry
from crsbench.errors import EncoderError

FAMILIES = {
    "general": {"ImageNet ResNet-50", "ViT-B/16", "ConvNeXt", "DINOv2", "CLIP", "SigLIP"},
    "broad-medical": {"BiomedCLIP", "MedSigLIP", "MedGemma image encoder", "PubMedCLIP", "RadImageNet ResNet-50"},
    "specialty": {"PanDerm", "RETFound", "RAD-DINO", "CheXzero"},
}


def test_the_fifteen_families_of_the_protocol():
    by_group = {}
    for entry in ZOO.values():
        by_group.setdefault(entry.group, set()).add(entry.family)
    assert by_group == FAMILIES
    assert len(ZOO) == 15 and set(ZOO) <= set(encoder_names())


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_entry_is_complete(name):
    entry = ZOO[name]
    assert entry.source in ADAPTERS and entry.group in GROUPS
    for text in (entry.identifier, entry.revision, entry.licence, entry.embedding, entry.card):
        assert text
    assert len(entry.mean) == len(entry.std) == 3 and all(s > 0 for s in entry.std)
    assert entry.confirmed or entry.status.startswith("unconfirmed: ")
    assert entry.hub_repo or entry.how_to_get  # a user can always find the weights
    assert (entry.group == "specialty") == (entry.specialty != "none")
    meta = describe(name)
    assert meta.input_size == (entry.resize_to or entry.input_size)
    assert meta.extra.get("crop", entry.input_size) == entry.input_size <= meta.input_size


def test_listing_and_building_import_no_model_library():
    code = (
        "import sys; from crsbench.encoders.registry import get_encoder, encoder_names;"
        "from crsbench.encoders.zoo import describe; [describe(n) for n in encoder_names()];"
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
    base = get_encoder("rad-dino").meta.fingerprint()
    assert get_encoder("rad-dino", revision="abc123").meta.fingerprint() != base
    assert get_encoder("rad-dino", weights=str(tmp_path)).meta.fingerprint() != base


def test_declaring_a_new_encoder_is_a_few_lines():
    entry = ZooEntry(
        name="my-derm-vit", family="my lab's ViT", group="specialty", specialty="dermatology", source="timm",
        identifier="my-lab/derm-vit", revision="v1", licence="internal", input_size=224, mean=(0.5,) * 3,
        std=(0.5,) * 3, embedding="cls", embed_dim=768, card="224x224", options={"arch": "vit_base_patch16_224"},
    )
    register_zoo_entry(entry)
    try:
        assert "my-derm-vit" in encoder_names() and describe("my-derm-vit").identifier == "my-lab/derm-vit"
        with pytest.raises(EncoderError, match="already registered"):
            register_zoo_entry(entry)
    finally:
        from crsbench.encoders import registry

        registry._FACTORIES.pop("my-derm-vit")
        ZOO.pop("my-derm-vit")


def test_any_callable_is_an_encoder():
    meta = EncoderMeta(name="mean-colour", family="mean colour", source="builtin", identifier="mean-colour",
                       revision="1", licence="Apache-2.0", input_size=32, group="baseline")
    register_encoder("mean-colour", lambda: CallableEncoder(meta, lambda x: x.mean(axis=(1, 2))))
    try:
        vectors = get_encoder("mean-colour").encode(np.full((2, 32, 32, 3), 255, np.uint8))
        assert vectors.dtype == np.float32 and vectors.shape == (2, 3)
        assert describe("mean-colour").name == "mean-colour"
    finally:
        from crsbench.encoders import registry

        registry._FACTORIES.pop("mean-colour")


def test_engine_resize_follows_each_card():
    from crsbench.encoders.zoo import ZOO

    for name, entry in ZOO.items():
        expected = "bicubic" if "bicubic" in entry.card else "bilinear"
        assert entry.meta().resize == f"{expected}-antialias", name
