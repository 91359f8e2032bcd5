"""The shared torch encoder base and the DataLoader batch pipeline."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from crsbench.datasets.base import ArrayImages  # noqa: E402
from crsbench.encoders.spec import EncoderSpec  # noqa: E402
from crsbench.core.hardware import choose_device  # noqa: E402
from crsbench.encoders.torch_base import TorchEncoderBase, resolve_precision  # noqa: E402
from crsbench.embed.extraction import iter_batches  # noqa: E402


class _ListImages:
    """An image source without a vectorised `batch`: the per-image path."""

    def __init__(self, array):
        self.array = array

    def __len__(self):
        return len(self.array)

    def __getitem__(self, i):
        return self.array[i]


def _mark_with_id(batch, ids):
    """A picklable prepare step: writes each image's id number into its first pixel."""
    batch = batch.copy()
    batch[:, 0, 0, 0] = [int(i) for i in ids]
    return batch


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iter_batches_keeps_split_order(num_workers):
    array = np.random.default_rng(0).integers(0, 256, (23, 8, 8, 3), dtype=np.uint8)
    ids = [str(100 + i) for i in range(23)]
    for source in (ArrayImages(array), _ListImages(array)):
        got = list(iter_batches(source, ids, batch_size=5, num_workers=num_workers, pin_memory=False,
                                prepare=partial(_mark_with_id)))
        indices = np.concatenate([index for index, _ in got])
        batches = np.concatenate([batch for _, batch in got])
        np.testing.assert_array_equal(indices, np.arange(23))
        assert [len(b) for _, b in got] == [5, 5, 5, 5, 3] and batches.dtype == np.uint8
        np.testing.assert_array_equal(batches[:, 0, 0, 0], np.arange(100, 123) % 256)
        np.testing.assert_array_equal(batches[:, 1:], array[:, 1:])


def test_iter_batches_rejects_mismatched_ids():
    with pytest.raises(ValueError):
        list(iter_batches(ArrayImages(np.zeros((3, 4, 4, 3), np.uint8)), ["a"], batch_size=2))


@pytest.mark.parametrize("native", [False, True])
def test_device_and_precision_choice(monkeypatch, native):
    import crsbench.encoders.torch_base as torch_base

    asked = []
    monkeypatch.setattr(torch_base, "bfloat16_is_native", lambda device: asked.append(device) or native)
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert choose_device() == expected and choose_device("cpu") == "cpu"
    assert choose_device(mps=False) == ("cuda" if torch.cuda.is_available() else "cpu")  # the probe's choice
    # float32 unless reduced precision is asked for by name: records are compared against float32 vectors
    assert resolve_precision("cpu") == "fp32" and resolve_precision("cuda") == "fp32" and asked == []
    assert resolve_precision("cuda", "fp32") == "fp32" and resolve_precision("cuda", "fp16") == "fp16"
    # bfloat16 only where the device multiplies in it natively, CPUs included; never on mps, fp16 never on a CPU
    assert resolve_precision("cpu", "bf16") == ("bf16" if native else "fp32")
    assert resolve_precision("cuda:1", "bf16") == ("bf16" if native else "fp32") and asked == ["cpu", "cuda:1"]
    assert resolve_precision("mps", "bf16") == "fp32" and resolve_precision("cpu", "fp16") == "fp32"
    with pytest.raises(ValueError):
        resolve_precision("cpu", "int8")


class _Convolutional(TorchEncoderBase):
    def build_model(self):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 32, 3))

    def embed(self, model, pixels):
        return model(pixels).mean(dim=(2, 3))


def test_bfloat16_where_native_runs_autocast_on_channels_last_and_keys_the_vectors_apart(monkeypatch):
    import crsbench.encoders.torch_base as torch_base

    # autocast on a CPU runs without native bfloat16 too, only slower: the decision is planted
    monkeypatch.setattr(torch_base, "bfloat16_is_native", lambda device: True)
    spec = EncoderSpec(name="conv", source="user", identifier="conv", revision="1", licence="-", resize=12,
                       mean=(0.5,) * 3, std=(0.25,) * 3, output="pooled", embed_dim=32, adapter={})
    images = np.random.default_rng(3).integers(0, 256, (4, 12, 12, 3), dtype=np.uint8).astype(np.float32)
    full, reduced = _Convolutional(spec, device="cpu"), _Convolutional(spec, device="cpu", precision="bf16")
    assert full.precision == "fp32" and reduced.precision == "bf16"
    exact, rounded = full.encode(images), reduced.encode(images)
    assert rounded.dtype == np.float32 and rounded.shape == exact.shape
    assert reduced.model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert full.model[0].weight.is_contiguous()  # float32 keeps the layout its records were made with
    assert reduced.preprocess(images).is_contiguous(memory_format=torch.channels_last)
    cosine = (exact * rounded).sum(1) / np.linalg.norm(exact, axis=1) / np.linalg.norm(rounded, axis=1)
    # bfloat16 keeps 8 bits of mantissa: the vectors move (not a float32 run in disguise), but only slightly
    assert not np.array_equal(exact, rounded) and cosine.min() > 0.999
    assert reduced.spec.precision == "bf16" and reduced.spec.fingerprint() != full.spec.fingerprint()


def normalise_batch(images: np.ndarray, mean, std) -> torch.Tensor:
    """The card's normalisation written out in numpy: [n, H, W, 3] on 0-255 -> [n, 3, H, W]."""
    x = (images.astype(np.float64) / 255.0 - np.asarray(mean)) / np.asarray(std)
    return torch.from_numpy(x.transpose(0, 3, 1, 2).astype(np.float32))


class _Linear(TorchEncoderBase):
    builds = 0

    def build_model(self):
        _Linear.builds += 1
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 5))

    def embed(self, model, pixels):
        assert torch.is_inference_mode_enabled() and not torch.is_grad_enabled()
        return model(pixels)


def test_torch_encoder_base_normalises_the_engine_input_and_returns_float32():
    spec = EncoderSpec(name="lin", source="user", identifier="lin", revision="1", licence="-", resize=6, crop=4,
                       mean=(0.1, 0.2, 0.3), std=(0.3, 0.2, 0.1), output="pooled", embed_dim=5, adapter={})
    encoder = _Linear(spec, device="cpu")
    images = np.random.default_rng(1).integers(0, 256, (3, 4, 4, 3), dtype=np.uint8)  # the engine's crop-size input
    expected_pixels = normalise_batch(images, spec.mean, spec.std)
    torch.testing.assert_close(encoder.preprocess(images), expected_pixels)
    first, second = encoder.encode(images), encoder.encode(images)
    assert first.dtype == np.float32 and first.shape == (3, 5) and _Linear.builds == 1  # built once, lazily
    np.testing.assert_array_equal(first, second)
    assert encoder.spec.precision is None and encoder.spec.fingerprint() == spec.fingerprint()  # fp32: same key


def test_bgr_checkpoints_get_their_channels_reversed_before_normalising():
    spec = EncoderSpec(name="lin", source="user", identifier="lin", revision="1", licence="-", resize=4,
                       mean=(0.1, 0.2, 0.3), std=(0.3, 0.2, 0.1), output="pooled", embed_dim=5, adapter={},
                       channel_order="BGR")
    images = np.random.default_rng(2).integers(0, 256, (2, 4, 4, 3), dtype=np.uint8)
    expected = normalise_batch(images[..., ::-1], spec.mean, spec.std)
    torch.testing.assert_close(_Linear(spec, device="cpu").preprocess(images), expected)
    assert spec.fingerprint() != spec.replace(channel_order="RGB").fingerprint()


def test_reduced_precision_is_part_of_the_fingerprint():
    spec = EncoderSpec(name="lin", source="user", identifier="lin", licence="-", resize=4, mean=(0.5,) * 3,
                       std=(0.5,) * 3, output="pooled", embed_dim=5, adapter={})
    assert spec.replace(precision="bf16").fingerprint() != spec.fingerprint()


class _Counting(_Convolutional):
    """Counts which entry the engine used: pixels resized in the workers, or uint8 resized on the device."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = {"encode": 0, "encode_resizing": 0}

    def encode(self, images):
        self.calls["encode"] += 1
        return super().encode(images)

    def encode_resizing(self, images, pixels):
        assert images.dtype == np.uint8  # the decoded pixels as stored, a quarter of float32's bytes
        self.calls["encode_resizing"] += 1
        return super().encode_resizing(images, pixels)


@pytest.mark.parametrize("rule, interpolation", [("shorter-side", "bicubic"), ("squash", "bilinear"), ("pad", "bicubic")])
def test_resizing_on_the_device_gives_the_vectors_of_resizing_in_the_workers(rule, interpolation):
    """A GPU is sent uint8 batches and resizes them itself; forced here on the CPU, the same rule run there
    must give the workers' vectors, for the clean images, a perturbed condition and a batch of mixed sizes."""
    from crsbench.embed.cache import Embedder
    from crsbench.plan.conditions import CLEAN, Condition

    spec = EncoderSpec(name="conv", source="user", identifier="conv", revision="1", licence="-", resize=20,
                       crop=16 if rule == "shorter-side" else None, pixel_rule=rule, interpolation=interpolation,
                       mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3), output="pooled", embed_dim=32, adapter={},
                       channel_order="BGR")
    rng = np.random.default_rng(5)
    uniform = ArrayImages(rng.integers(0, 256, (10, 37, 29, 3), dtype=np.uint8))
    mixed = _ListImages([rng.integers(0, 256, (30 + i % 3, 26, 3), dtype=np.uint8) for i in range(7)])
    for images, condition, uniform_batches in ((uniform, CLEAN, 3), (uniform, Condition.perturbation("gaussian_noise", 3), 3),
                                               (mixed, CLEAN, 0)):
        ids = [str(i) for i in range(len(images))]
        in_workers, on_device = _Counting(spec, device="cpu"), _Counting(spec, device="cpu")
        expected = Embedder(batch_size=4, resize_on_device=False).extract(in_workers, images, ids, condition, "x")
        got = Embedder(batch_size=4, resize_on_device=True).extract(on_device, images, ids, condition, "x")
        assert in_workers.calls == {"encode": 3 if images is uniform else 2, "encode_resizing": 0}
        assert on_device.calls["encode_resizing"] == uniform_batches  # mixed sizes: resized in the workers still
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    assert not _Counting(spec, device="cpu").resizes_on_device  # a CPU's workers resize by default


def test_a_module_handed_over_in_memory_takes_the_device_resize_too():
    from crsbench.embed.cache import Embedder
    from crsbench.encoders.byo import ModuleEncoder
    from crsbench.plan.conditions import CLEAN

    spec = EncoderSpec(name="mod", source="user", identifier="mod", revision="1", licence="-", resize=12,
                       mean=(0.5,) * 3, std=(0.25,) * 3, output="pooled", embed_dim=5, adapter={}, pixel_rule="squash")
    torch.manual_seed(1)
    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 12 * 12, 5))
    images = ArrayImages(np.random.default_rng(6).integers(0, 256, (6, 20, 17, 3), dtype=np.uint8))
    ids = [str(i) for i in range(6)]
    encoder = ModuleEncoder(spec, module, device="cpu")
    assert not encoder.resizes_on_device
    expected = Embedder(batch_size=4, resize_on_device=False).extract(encoder, images, ids, CLEAN, "x")
    resized, runner_entry = [], encoder._runner.encode_resizing
    encoder._runner.encode_resizing = lambda batch, pixels: resized.append(batch.shape) or runner_entry(batch, pixels)
    got = Embedder(batch_size=4, resize_on_device=True).extract(encoder, images, ids, CLEAN, "x")
    assert resized == [(4, 20, 17, 3), (2, 20, 17, 3)]  # the decoded pixels went to the module's runner
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
