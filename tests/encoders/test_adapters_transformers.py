"""transformers adapter: tiny random Dinov2 / SigLIP / CLIP vision models and a Gemma-3-style
checkpoint, saved to disk and loaded back; preprocessing equals each model's image processor."""

from __future__ import annotations

import json
import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from crsbench.encoders.registry import build_encoder, encoder_spec  # noqa: E402

from _zoo_helpers import images, offline  # noqa: E402,F401

TINY = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, patch_size=8)


def _save(model, folder):
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder


# kind -> (catalogue entry it stands in for, model factory, image processor, crop (or size), resize before a crop)
CASES = {
    "dinov2": (
        "rad-dino",
        lambda: transformers.Dinov2Model(transformers.Dinov2Config(image_size=32, **TINY)),
        lambda e: transformers.BitImageProcessor(
            size={"shortest_edge": e.resize},
            crop_size={"height": (e.crop or e.resize), "width": (e.crop or e.resize)},
            resample=3, image_mean=list(e.mean), image_std=list(e.std)),
        32, 40,
    ),
    "siglip": (
        "siglip-base",
        lambda: transformers.SiglipVisionModel(transformers.SiglipVisionConfig(image_size=32, **TINY)),
        lambda e: transformers.SiglipImageProcessor(
            size={"height": (e.crop or e.resize), "width": (e.crop or e.resize)}, resample=3,
            image_mean=list(e.mean), image_std=list(e.std)),
        32, None,
    ),
    "clip": (
        "pubmedclip-vit-b32",
        lambda: transformers.CLIPVisionModelWithProjection(
            transformers.CLIPVisionConfig(image_size=32, projection_dim=16, **TINY)),
        lambda e: transformers.CLIPImageProcessor(
            size={"shortest_edge": (e.crop or e.resize)}, crop_size={"height": (e.crop or e.resize), "width": (e.crop or e.resize)},
            resample=3, image_mean=list(e.mean), image_std=list(e.std)),
        32, None,
    ),
}
OUTPUTS = {"dinov2": "pooler_output", "siglip": "pooler_output", "clip": "image_embeds"}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_vision_tower_embeddings_and_processor(kind, tmp_path, offline):
    zoo_name, make_model, make_processor, size, resize_to = CASES[kind]
    torch.manual_seed(0)
    model = make_model().eval()
    folder = _save(model, tmp_path / kind)
    crop = size if resize_to else None
    entry = encoder_spec(zoo_name).replace(name=f"tiny-{kind}", resize=resize_to or size, crop=crop, embed_dim=32)
    encoder = build_encoder(entry, weights=str(folder))

    batch = images(2, resize_to or size)
    engine = entry.pixels().apply_batch(batch)  # the engine's resize and crop, before the encoder
    ours = encoder.preprocess(engine)
    theirs = make_processor(entry)(images=list(batch), return_tensors="pt")["pixel_values"]
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-5)

    vectors = encoder.encode(engine)
    with torch.inference_mode():
        expected = getattr(model(pixel_values=theirs), OUTPUTS[kind]).numpy()
    assert vectors.dtype == np.float32 and vectors.shape == expected.shape == (2, expected.shape[1])
    np.testing.assert_allclose(vectors, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(vectors, encoder.encode(engine))


def test_gemma3_vision_tower_never_reads_the_language_model(tmp_path, offline):
    """A MedGemma-style sharded checkpoint: the vision tower in one shard, a 'language model' shard
    that is not even a valid file. Loading must read only the first."""
    from safetensors.torch import save_file

    torch.manual_seed(0)
    vision_config = transformers.SiglipVisionConfig(image_size=32, vision_use_head=False, **TINY)
    tower = transformers.SiglipVisionModel(vision_config).eval()
    folder = tmp_path / "gemma3"
    folder.mkdir()
    vision_state = {f"vision_tower.{k}": v.contiguous() for k, v in tower.state_dict().items()}
    save_file(vision_state, str(folder / "model-00001-of-00002.safetensors"))
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"not a safetensors file: must never be opened")
    weight_map = {k: "model-00001-of-00002.safetensors" for k in vision_state}
    weight_map["language_model.model.embed_tokens.weight"] = "model-00002-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    vision = {"model_type": "siglip_vision_model", **vision_config.to_diff_dict()}
    config = {"model_type": "gemma3", "vision_config": vision}
    (folder / "config.json").write_text(json.dumps(config))

    entry = encoder_spec("medgemma-4b-vision").replace(name="tiny-gemma3", resize=32, embed_dim=32)
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(2, 32)
    vectors = encoder.encode(batch)
    with torch.inference_mode():
        expected = tower(pixel_values=encoder.preprocess(batch)).last_hidden_state.mean(dim=1).numpy()
    assert vectors.shape == (2, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-5)


TEXT = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, vocab_size=50,
            max_position_embeddings=16)
# full image-text checkpoints (as MedSigLIP, SigLIP and PubMedCLIP are published) -> vision tower only
FULL = {
    "siglip": lambda: transformers.SiglipModel(transformers.SiglipConfig(
        text_config=TEXT, vision_config=dict(image_size=32, **TINY))),
    "clip": lambda: transformers.CLIPModel(transformers.CLIPConfig(
        text_config=TEXT, vision_config=dict(image_size=32, **TINY), projection_dim=16)),
}
ZOO_NAME = {"siglip": "medsiglip-448", "clip": "pubmedclip-vit-b32"}


@pytest.mark.parametrize("kind", sorted(FULL))
def test_full_image_text_checkpoint_loads_its_vision_tower(kind, tmp_path, offline):
    torch.manual_seed(0)
    full = FULL[kind]().eval()
    folder = _save(full, tmp_path / kind)
    entry = encoder_spec(ZOO_NAME[kind]).replace(name=f"tiny-full-{kind}", resize=32, crop=None, embed_dim=16)
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(2, 32)
    vectors = encoder.encode(batch)
    with torch.inference_mode():
        expected = full.get_image_features(pixel_values=encoder.preprocess(batch))
    expected = getattr(expected, "pooler_output", expected).numpy()
    np.testing.assert_allclose(vectors, expected, rtol=1e-4, atol=1e-5)
    assert not any(name.startswith("text") for name, _ in encoder.model.named_parameters())


def test_a_checkpoint_missing_tensors_is_an_error(tmp_path, offline):
    from safetensors.torch import load_file, save_file

    from crsbench.errors import EncoderError

    torch.manual_seed(0)
    folder = _save(CASES["dinov2"][1]().eval(), tmp_path / "partial")
    state = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in state.items() if "layer.0.attention" not in k}, str(folder / "model.safetensors"))
    entry = encoder_spec("rad-dino").replace(name="tiny-partial", resize=32, embed_dim=32)
    with pytest.raises(EncoderError, match="lacks"):
        build_encoder(entry, weights=str(folder)).encode(images(1, 32))


def _bin_folder(model, folder):
    """A repository as older transformers wrote it: config.json and pytorch_model.bin, no safetensors."""
    folder.mkdir()
    model.config.save_pretrained(str(folder))
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


def test_a_bin_only_repository_loads_through_our_safe_reader(tmp_path, offline):
    torch.manual_seed(0)
    model = CASES["dinov2"][1]().eval()
    folder = _bin_folder(model, tmp_path / "bin-only")
    entry = encoder_spec("rad-dino").replace(name="tiny-bin", resize=32, crop=None, embed_dim=32)
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(2, 32)
    with torch.inference_mode():
        expected = model(pixel_values=encoder.preprocess(batch)).pooler_output.numpy()
    np.testing.assert_allclose(encoder.encode(batch), expected, rtol=1e-5, atol=1e-5)


def test_safetensors_is_preferred_and_a_code_carrying_bin_is_refused(tmp_path, offline):
    from crsbench.errors import EncoderError

    from _zoo_helpers import CodeOnLoad

    torch.manual_seed(0)
    model = CASES["dinov2"][1]().eval()
    marker = tmp_path / "ran"
    entry = encoder_spec("rad-dino").replace(name="tiny-poisoned", resize=32, crop=None, embed_dim=32)
    both = _save(model, tmp_path / "both")
    torch.save({"payload": CodeOnLoad(str(marker))}, both / "pytorch_model.bin")
    assert build_encoder(entry, weights=str(both)).encode(images(1, 32)).shape == (1, 32)  # never opened the .bin

    only_bin = _bin_folder(model, tmp_path / "only-bin")
    torch.save({"payload": CodeOnLoad(str(marker))}, only_bin / "pytorch_model.bin")
    with pytest.raises(EncoderError, match="weights_only=True") as info:
        build_encoder(entry, weights=str(only_bin)).encode(images(1, 32))
    assert "\n" not in str(info.value) and not marker.exists()
