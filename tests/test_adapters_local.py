"""Local checkpoints: safe loading (safetensors, torch.load weights_only), training-script wrappers,
architectures from timm and open_clip, and one-line errors when weights are missing or unsafe."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
open_clip = pytest.importorskip("open_clip")

from crsbench.encoders.adapters.weights import load_state_dict  # noqa: E402
from crsbench.encoders.registry import build_encoder, encoder_spec  # noqa: E402
from crsbench.errors import EncoderError  # noqa: E402

from _zoo_helpers import images, offline  # noqa: E402,F401


def _retfound_like(arch="test_vit"):
    return encoder_spec("retfound-cfp").replace(
        name="tiny-retfound", hub_repo=None, crop=160, resize=168, embed_dim=64,
        adapter={**encoder_spec("retfound-cfp").adapter.model_dump(), "arch": arch, "files": ("ckpt.pth",)})


def test_mae_style_checkpoint_with_wrapper_and_decoder_loads(tmp_path, offline):
    """RETFound layout: {'model': encoder + MAE decoder tensors}, read with weights_only=True."""
    torch.manual_seed(0)
    model = timm.create_model("test_vit", pretrained=False, num_classes=0).eval()
    state = dict(model.state_dict(), **{"decoder_embed.weight": torch.zeros(2, 2), "mask_token": torch.zeros(1, 1, 2)})
    torch.save({"model": state, "epoch": 3}, tmp_path / "ckpt.pth")
    encoder = build_encoder(_retfound_like(), weights=str(tmp_path))
    batch = images(2, 168)
    vectors = encoder.encode(batch)
    with torch.inference_mode():
        expected = model(encoder.preprocess(batch)).numpy()
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-5)
    assert encoder.spec.revision == "local:" + tmp_path.name  # the cache key says the weights are local


def test_pickled_code_is_refused_in_one_line(tmp_path):
    torch.save({"model": {"w": torch.zeros(1)}, "args": argparse.Namespace(lr=1)}, tmp_path / "unsafe.pth")
    with pytest.raises(EncoderError, match="weights_only=True") as info:
        load_state_dict(tmp_path / "unsafe.pth", "x")
    assert "\n" not in str(info.value)


def test_module_prefix_is_removed(tmp_path):
    torch.save({"state_dict": {"module.a": torch.ones(1)}}, tmp_path / "dp.pt")
    assert list(load_state_dict(tmp_path / "dp.pt", "x")) == ["a"]


def test_openai_format_clip_checkpoint_into_open_clip_tower(tmp_path, offline):
    """CheXzero layout: a bare OpenAI-CLIP state dict (.pt) loaded into an open_clip built-in config."""
    config = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
        "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
        "quick_gelu": True,
    }
    (tmp_path / "tiny-openai-clip.json").write_text(json.dumps(config))
    open_clip.add_model_config(tmp_path / "tiny-openai-clip.json")
    torch.manual_seed(0)
    reference = open_clip.create_model("tiny-openai-clip").eval()
    torch.save(reference.state_dict(), tmp_path / "chexzero.pt")
    adapter = {**encoder_spec("chexzero").adapter.model_dump(), "model": "tiny-openai-clip"}
    entry = encoder_spec("chexzero").replace(name="tiny-chexzero", resize=32, embed_dim=16, adapter=adapter)
    encoder = build_encoder(entry, weights=str(tmp_path / "chexzero.pt"))
    batch = images(2, 32)
    with torch.inference_mode():
        expected = reference.encode_image(encoder.preprocess(batch)).numpy()
    np.testing.assert_allclose(encoder.encode(batch), expected, rtol=1e-5, atol=1e-5)


def test_weights_off_the_hub_need_a_path(offline):
    encoder = build_encoder(encoder_spec("panderm-large"))
    with pytest.raises(EncoderError) as info:
        encoder.encode(images(1, 224))
    message = str(info.value)
    assert "\n" not in message and "weights: /path" in message and "SiyuanYan1/PanDerm" in message


def test_weights_path_that_does_not_exist(tmp_path):
    with pytest.raises(EncoderError, match="does not exist"):
        build_encoder(encoder_spec("chexzero"), weights=str(tmp_path / "nope.pt"))
