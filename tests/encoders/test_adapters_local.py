"""Local checkpoints: safe loading (safetensors, torch.load weights_only with a small allow-list),
training-script wrappers, and one-line errors when weights are missing or unsafe. The catalogue's
authors' layouts (PanDerm, RadImageNet, RETFound, CheXzero, PubMedCLIP) are in test_adapters_authors."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")

from crsbench.encoders.adapters.weights import load_state_dict  # noqa: E402
from crsbench.encoders.registry import build_encoder, encoder_spec  # noqa: E402
from crsbench.errors import EncoderError  # noqa: E402

from _zoo_helpers import CodeOnLoad, images, offline  # noqa: E402,F401


def test_training_script_checkpoint_with_args_loads(tmp_path):
    """{'model': ..., 'args': argparse.Namespace (numpy scalars inside), 'optimizer': ...}: the allow-list
    reads it with weights_only=True; the state dict under 'model' comes back."""
    args = argparse.Namespace(lr=np.float64(1e-3), seed=np.int64(0), dtype=np.dtype("float32"), name="mae")
    torch.save({"model": {"w": torch.ones(2)}, "args": args, "optimizer": {"state": {}, "param_groups": []},
                "epoch": 3}, tmp_path / "ckpt.pth")
    state = load_state_dict(tmp_path / "ckpt.pth", "x")
    assert list(state) == ["w"] and torch.equal(state["w"], torch.ones(2))


def test_pickled_code_is_refused_in_one_line_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    torch.save({"model": {"w": torch.zeros(1)}, "payload": CodeOnLoad(str(marker))}, tmp_path / "unsafe.pth")
    torch.load(tmp_path / "unsafe.pth", weights_only=False)  # the payload is real: a full unpickle runs it
    assert marker.exists()
    marker.unlink()
    with pytest.raises(EncoderError, match="weights_only=True") as info:
        load_state_dict(tmp_path / "unsafe.pth", "x")
    message = str(info.value)
    assert "\n" not in message and "touch" in message and "not allowed" in message
    assert not marker.exists()


def test_pickled_code_in_a_catalogue_checkpoint_is_refused(tmp_path, offline):
    marker = tmp_path / "ran"
    torch.save({"model": {}, "args": CodeOnLoad(str(marker))}, tmp_path / "RETFound_mae_natureCFP.pth")
    encoder = build_encoder(encoder_spec("retfound-cfp"), weights=str(tmp_path))
    with pytest.raises(EncoderError, match="weights_only=True") as info:
        encoder.encode(images(1, 224))
    assert "\n" not in str(info.value) and not marker.exists()


def test_module_prefix_is_removed(tmp_path):
    torch.save({"state_dict": {"module.a": torch.ones(1)}}, tmp_path / "dp.pt")
    assert list(load_state_dict(tmp_path / "dp.pt", "x")) == ["a"]


def test_weights_off_the_hub_need_a_path(offline):
    encoder = build_encoder(encoder_spec("panderm-large"))
    with pytest.raises(EncoderError) as info:
        encoder.encode(images(1, 224))
    message = str(info.value)
    assert "\n" not in message and "weights: /path" in message and "SiyuanYan1/PanDerm" in message


def test_weights_path_that_does_not_exist(tmp_path):
    with pytest.raises(EncoderError, match="does not exist"):
        build_encoder(encoder_spec("chexzero"), weights=str(tmp_path / "nope.pt"))
