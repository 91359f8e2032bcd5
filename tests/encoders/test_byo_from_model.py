"""`preprocessing: from_model`: timm, open_clip and transformers models take their pixel rule, filter,
mean and std from their own config. Tiny random models built from configs, offline; the project's input
(the engine's resize, then the encoder's normalisation) is compared with the library's own transform."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from crsbench.encoders import registry  # noqa: E402
from crsbench.encoders.registry import build_encoder  # noqa: E402
from crsbench.encoders.spec import EncoderSpec, parse_spec  # noqa: E402
from crsbench.errors import EncoderError  # noqa: E402

from _zoo_helpers import offline  # noqa: E402,F401

# the parity bounds of tests/encoders/test_pixel_parity.py, in grey levels: the library resizes rounded uint8
# images, the project float ones (max, mean)
TOL = {"bilinear": (1.5, 0.4), "bicubic": (4.0, 0.4)}


def smooth_images(shapes, seed=0) -> list[np.ndarray]:
    """Non-square photographs' stand-ins: low-frequency colour fields (noise would measure the filters'
    rounding, not the rule)."""
    rng = np.random.default_rng(seed)
    out = []
    for height, width in shapes:
        small = Image.fromarray(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8))
        out.append(np.array(small.resize((width, height), Image.BILINEAR)))
    return out


def ours(encoder, image: np.ndarray):
    """What the engine and the encoder make of a decoded image: one float resize, then normalisation."""
    return encoder.preprocess(encoder.spec.pixels().apply(image)[None])[0]


def assert_levels(a, b, spec):
    """|a - b| within the filter's bound, per channel in grey levels."""
    std = torch.tensor(spec.std).view(3, 1, 1)
    levels = ((a - b).abs() * 255 * std)
    bound = TOL[spec.interpolation]
    assert a.shape == b.shape
    assert levels.max() <= bound[0] and levels.mean() <= bound[1], (levels.max(), levels.mean())


def test_a_from_model_spec_needs_no_pixel_values_and_refuses_them():
    spec = EncoderSpec(name="m", source="timm", output="cls", adapter={"arch": "test_vit"},
                       preprocessing="from_model")
    assert spec.identifier == "m" and not spec.resolved
    with pytest.raises(EncoderError, match="read from the model's config when the encoder is built"):
        spec.pixels()
    with pytest.raises(EncoderError, match="leave out resize, interpolation"):
        parse_spec({**spec.as_dict(), "resize": 224, "interpolation": "bicubic"})
    with pytest.raises(EncoderError, match="source 'builtin' has no model config"):
        parse_spec({"name": "b", "source": "builtin", "output": "pixels", "adapter": {"kind": "raw-pixels"},
                    "preprocessing": "from_model"})
    with pytest.raises(EncoderError, match="resize: field required"):
        parse_spec({"name": "c", "source": "timm", "output": "cls", "adapter": {"arch": "test_vit"}})


# --------------------------------------------------------------------------- timm


def test_timm_from_model_equals_timm_own_transform(offline):
    timm = pytest.importorskip("timm")
    spec = EncoderSpec(name="tiny-vit", source="timm", output="cls", adapter={"arch": "test_vit"},
                       preprocessing="from_model")
    encoder = build_encoder(spec, weights="/", device="cpu")  # preprocessing needs no weights
    built = encoder.spec
    model = timm.create_model("test_vit", pretrained=False)
    config = timm.data.resolve_data_config({}, model=model)
    assert (built.pixel_rule, built.crop, built.interpolation) == ("shorter-side", config["input_size"][-1],
                                                                   config["interpolation"])
    assert built.resize == int(config["input_size"][-1] / config["crop_pct"])
    assert (built.mean, built.std) == (tuple(config["mean"]), tuple(config["std"]))
    assert built.card.startswith("from_model: timm pretrained_cfg of test_vit")
    transform = timm.data.create_transform(**config)
    square = np.random.default_rng(0).integers(0, 256, (built.resize, built.resize, 3), dtype=np.uint8)
    torch.testing.assert_close(ours(encoder, square), transform(Image.fromarray(square)), rtol=0, atol=1e-6)
    for image in smooth_images([(287, 384), (300, 200)]):
        assert_levels(ours(encoder, image), transform(Image.fromarray(image)), built)
    # the comparison can fail: crop_pct ignored (resize straight to the crop, 8 pixels short) is outside the bound
    off = build_encoder(built.replace(resize=built.crop), weights="/", device="cpu")
    image = smooth_images([(287, 384)])[0]
    with pytest.raises(AssertionError):
        assert_levels(ours(off, image), transform(Image.fromarray(image)), built)


# --------------------------------------------------------------------------- open_clip

SIZE = 32
MODEL_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": SIZE, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
}


@pytest.mark.parametrize("resize_mode, rule", [("shortest", "shorter-side"), ("squash", "squash")])
def test_open_clip_from_model_equals_its_preprocess(tmp_path, offline, resize_mode, rule):
    open_clip = pytest.importorskip("open_clip")
    from safetensors.torch import save_file

    preprocess_cfg = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "interpolation": "bilinear",
                      "resize_mode": resize_mode}
    torch.manual_seed(0)
    model = open_clip.CLIP(**MODEL_CFG).eval()
    (tmp_path / "open_clip_config.json").write_text(json.dumps({"model_cfg": MODEL_CFG,
                                                                "preprocess_cfg": preprocess_cfg}))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()},
              str(tmp_path / "open_clip_model.safetensors"))
    spec = EncoderSpec(name="tiny-clip", source="open_clip", output="projected", adapter={},
                       preprocessing="from_model")
    encoder = build_encoder(spec, weights=str(tmp_path), device="cpu")
    built = encoder.spec
    assert (built.pixel_rule, built.resize, built.interpolation) == (rule, SIZE, "bilinear")
    assert (list(built.mean), list(built.std)) == (preprocess_cfg["mean"], preprocess_cfg["std"])
    _, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{tmp_path}")
    for image in smooth_images([(287, 384), (64, 40)]):
        assert_levels(ours(encoder, image), preprocess(Image.fromarray(image)), built)
    assert encoder.encode(encoder.spec.pixels().apply(smooth_images([(50, 60)])[0])[None]).shape == (1, 16)


# --------------------------------------------------------------------------- transformers


def test_transformers_from_model_equals_its_image_processor(tmp_path, offline):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    model = transformers.Dinov2Model(transformers.Dinov2Config(
        image_size=32, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        patch_size=8)).eval()
    model.save_pretrained(str(tmp_path), safe_serialization=True)
    processor = transformers.BitImageProcessor(
        size={"shortest_edge": 40}, crop_size={"height": 32, "width": 32}, resample=2,  # bilinear
        image_mean=[0.4, 0.5, 0.6], image_std=[0.2, 0.25, 0.3])
    processor.save_pretrained(str(tmp_path))
    spec = EncoderSpec(name="tiny-dino", source="transformers", output="cls", adapter={"kind": "dinov2"},
                       preprocessing="from_model")
    encoder = build_encoder(spec, weights=str(tmp_path), device="cpu")
    built = encoder.spec
    assert (built.pixel_rule, built.resize, built.crop, built.interpolation) == ("shorter-side", 40, 32, "bilinear")
    assert (built.mean, built.std) == ((0.4, 0.5, 0.6), (0.2, 0.25, 0.3))
    for image in smooth_images([(287, 384), (90, 60)]):
        theirs = processor(images=[image], return_tensors="pt")["pixel_values"][0]
        assert_levels(ours(encoder, image), theirs, built)


# --------------------------------------------------------------------------- what `encoders show` prints


@pytest.fixture
def registered():
    pytest.importorskip("timm")
    spec = EncoderSpec(name="my-vit", source="timm", output="cls", adapter={"arch": "test_vit"},
                       preprocessing="from_model", identifier="timm/test_vit")
    registry.register_encoder(spec)
    yield spec
    registry.unregister_encoder("my-vit")


def test_encoders_show_prints_where_the_values_come_from_and_the_values(registered):
    from crsbench.cli.commands.encoders import COLUMNS, _row, encoders_app

    shown = CliRunner().invoke(encoders_app, ["show", "my-vit"], terminal_width=120)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "from_model: timm pretrained_cfg of test_vit" in text
    assert "shorter-side 168 bicubic, centre-crop 160" in text and "[0.5, 0.5, 0.5]" in text
    assert _row("my-vit")[COLUMNS.index("input")] == "from the model's config"
    as_json = CliRunner().invoke(encoders_app, ["show", "my-vit", "--json"])
    fields = json.loads(as_json.output)["fields"]
    assert fields["resize"] == 168 and fields["crop"] == 160 and len(fields["fingerprint"]) == 16
