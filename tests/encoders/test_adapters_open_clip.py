"""open_clip adapter: a tiny custom open_clip config, saved and loaded back; vision tower only."""

from __future__ import annotations

import json

import numpy as np
import pytest

open_clip = pytest.importorskip("open_clip")
torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from crsbench.encoders.registry import build_encoder, encoder_spec  # noqa: E402

from _zoo_helpers import images, offline  # noqa: E402,F401

SIZE = 32
MODEL_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": SIZE, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
}
PREPROCESS_CFG = {
    "mean": list(encoder_spec("biomedclip").mean), "std": list(encoder_spec("biomedclip").std),
    "interpolation": "bicubic", "resize_mode": "shortest",
}


@pytest.fixture(scope="module")
def tiny_clip_dir(tmp_path_factory):
    from safetensors.torch import save_file

    torch.manual_seed(0)
    model = open_clip.CLIP(**MODEL_CFG).eval()
    folder = tmp_path_factory.mktemp("tiny_clip")
    config = {"model_cfg": MODEL_CFG, "preprocess_cfg": PREPROCESS_CFG}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    return folder


def _entry():
    return encoder_spec("biomedclip").replace(name="tiny-clip", resize=SIZE, embed_dim=16)


def test_embeddings_and_preprocessing_match_open_clip(tiny_clip_dir, offline):
    from PIL import Image

    # open_clip's own loading path for the same folder: the reference model and transform
    reference, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{tiny_clip_dir}")
    reference.eval()
    encoder = build_encoder(_entry(), weights=str(tiny_clip_dir))
    batch = images(2, SIZE)
    ours = encoder.preprocess(batch)
    theirs = torch.stack([preprocess(Image.fromarray(image)) for image in batch])
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)

    vectors = encoder.encode(batch)
    assert vectors.shape == (2, 16) and vectors.dtype == np.float32
    with torch.inference_mode():
        expected = reference.encode_image(theirs).numpy()
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(vectors, encoder.encode(batch))


def test_only_the_vision_tower_is_built(tiny_clip_dir, offline):
    encoder = build_encoder(_entry(), weights=str(tiny_clip_dir))
    encoder.encode(images(1, SIZE))
    full = open_clip.CLIP(**MODEL_CFG)
    n_tower = sum(p.numel() for p in encoder.model.parameters())
    assert n_tower == sum(p.numel() for p in full.visual.parameters())
    assert not hasattr(encoder.model, "token_embedding")
