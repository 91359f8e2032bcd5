"""timm adapter: a tiny random timm model saved to disk loads back through the real loading path."""

from __future__ import annotations

import numpy as np
import pytest

timm = pytest.importorskip("timm")
torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from crsbench.encoders.registry import build_encoder, encoder_spec  # noqa: E402
from crsbench.errors import EncoderError  # noqa: E402

from _zoo_helpers import images, offline  # noqa: E402,F401


@pytest.fixture(scope="module")
def tiny_vit(tmp_path_factory):
    """test_vit (timm's own tiny test model), random weights with its classifier, as model.safetensors."""
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = timm.create_model("test_vit", pretrained=False).eval()
    folder = tmp_path_factory.mktemp("tiny_vit")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    return model, folder


def _entry():
    cfg = timm.create_model("test_vit", pretrained=False).pretrained_cfg
    crop = cfg["input_size"][-1]
    return encoder_spec("vit-b16-in21k").replace(
        name="tiny-vit", crop=crop, resize=int(crop / cfg["crop_pct"]),
        mean=tuple(cfg["mean"]), std=tuple(cfg["std"]), embed_dim=64, adapter={"arch": "test_vit"},
    )


def test_embeddings_match_timm_pre_logits(tiny_vit, offline):
    model, folder = tiny_vit
    entry = _entry()
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(3, entry.input_size)  # the engine hands the encoder its input_size squares
    vectors = encoder.encode(batch)
    assert vectors.shape == (3, 64) and vectors.dtype == np.float32
    with torch.inference_mode():
        expected = model.forward_head(model.forward_features(encoder.preprocess(batch)), pre_logits=True)
    np.testing.assert_allclose(vectors, expected.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(vectors, encoder.encode(batch))  # deterministic


def test_preprocessing_equals_timm_transform(tiny_vit):
    from PIL import Image

    model, _ = tiny_vit
    entry = _entry()
    encoder = build_encoder(entry, weights="/")  # preprocessing needs no weights
    transform = timm.data.create_transform(**timm.data.resolve_data_config({}, model=model))
    image = images(1, entry.resize, seed=3)
    ours = encoder.preprocess(entry.pixels().apply_batch(image))[0]  # the engine's resize + crop, then ours
    theirs = transform(Image.fromarray(image[0]))
    assert ours.shape == theirs.shape == (3, entry.crop, entry.crop)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)


def test_a_single_weights_file_works_and_mismatch_is_one_line(tiny_vit, tmp_path, offline):
    from safetensors.torch import save_file

    model, folder = tiny_vit
    encoder = build_encoder(_entry(), weights=str(folder / "model.safetensors"))
    assert encoder.encode(images(1, _entry().input_size)).shape == (1, 64)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("blocks.0.")}
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "broken.safetensors"))
    with pytest.raises(EncoderError, match="missing keys") as info:
        build_encoder(_entry(), weights=str(tmp_path / "broken.safetensors")).encode(images(1, _entry().input_size))
    assert "\n" not in str(info.value)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An isolated Hugging Face cache (the library reads its location at call time from constants)."""
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_weights_come_from_the_hub_cache_offline(tiny_vit, hub_cache, offline):
    """No `weights:` option: the file is found in the local cache, laid out as the hub client writes it."""
    import shutil

    _, folder = tiny_vit
    repo = hub_cache / "models--timm--tiny-test"
    commit = "0" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "snapshots" / commit).mkdir(parents=True)
    shutil.copy(folder / "model.safetensors", repo / "snapshots" / commit / "model.safetensors")
    encoder = build_encoder(_entry().replace(hub_repo="timm/tiny-test", revision=None))  # refs/main above
    assert encoder.encode(images(1, _entry().input_size)).shape == (1, 64)


def test_missing_weights_offline_is_one_actionable_line(offline, hub_cache):
    encoder = build_encoder(_entry().replace(hub_repo="timm/no-such-model"))
    with pytest.raises(EncoderError) as info:
        encoder.encode(images(1, _entry().input_size))
    message = str(info.value)
    assert "\n" not in message and "timm/no-such-model" in message and "offline" in message
    assert "weights: /path" in message and "hf download" in message
