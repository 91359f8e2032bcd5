import numpy as np
import pytest

from crsbench.core.hashing import sha256_of
from crsbench.datasets.base import ArrayImages, DatasetMeta, SplitData
from crsbench.embed.cache import CachedEmbedder, Embedder, EmbeddingCache, EmbeddingRequest, content_hash
from crsbench.encoders.pixels import PixelRule
from crsbench.encoders.base import EncoderBase
from crsbench.encoders.spec import EncoderSpec


class CountingEncoder(EncoderBase):
    """Mean colour per image; counts forward passes so the cache can be checked."""

    def __init__(self, revision="1"):
        self.spec = EncoderSpec(name="counting", source="user", identifier="counting", revision=revision,
                                licence="MIT", resize=16, mean=(0.0,) * 3, std=(1.0,) * 3, output="pooled",
                                embed_dim=3, adapter={})
        self.calls = 0

    def encode(self, images):
        self.calls += 1
        return images.reshape(len(images), -1, 3).mean(axis=1).astype(np.float32)


class RecordingEncoder(CountingEncoder):
    """Keeps every batch it was given, to check what the engine feeds an encoder."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def encode(self, images):
        self.seen.append(images)
        return super().encode(images)


class TinyDataset:
    def __init__(self, n=50, seed=0):
        self.meta = DatasetMeta(name="tiny", task_type="single_label", class_names=("a", "b"))
        rng = np.random.default_rng(seed)
        self._images = rng.integers(0, 256, (n, 20, 20, 3), dtype=np.uint8)
        self._labels = rng.integers(0, 2, n)
        self.seed = seed

    def fingerprint(self):
        return sha256_of("tiny", str(self.seed))

    def split(self, name):
        return SplitData(ids=[f"{name}-{i}" for i in range(len(self._images))], images=ArrayImages(self._images),
                         labels=self._labels)


def _setup(tmp_path, batch_size=8):
    encoder, dataset = CountingEncoder(), TinyDataset()
    cache = EmbeddingCache(tmp_path / "cache")
    return encoder, dataset, cache, CachedEmbedder(Embedder(batch_size=batch_size), cache)


def test_warm_cache_runs_no_forward_pass(tmp_path):
    encoder, dataset, cache, cached = _setup(tmp_path)
    request = EmbeddingRequest(encoder, dataset, "train")
    first = cached.embed(request)
    assert encoder.calls == 7 and not first.from_cache
    second = CachedEmbedder(Embedder(batch_size=8), EmbeddingCache(tmp_path / "cache")).embed(request)
    assert encoder.calls == 7 and second.from_cache
    np.testing.assert_array_equal(first.matrix, second.matrix)
    assert first.content_hash == second.content_hash == content_hash(second.matrix)
    assert isinstance(second.matrix, np.memmap) and not second.matrix.flags.writeable  # served from disk, never altered


def test_content_hash_is_the_digest_of_header_and_bytes():
    import hashlib

    rng = np.random.default_rng(0)
    for matrix in (rng.normal(size=(7, 5)).astype(np.float32), rng.normal(size=(6, 4))[:, ::2], np.zeros((0, 3), np.float32)):
        header = f"{matrix.dtype.str}{matrix.shape}".encode()
        expected = hashlib.sha256(header + np.ascontiguousarray(matrix).tobytes()).hexdigest()[:32]
        assert content_hash(matrix) == expected


def test_embeddings_do_not_depend_on_batch_size(tmp_path):
    encoder, dataset = CountingEncoder(), TinyDataset()
    a = Embedder(batch_size=7).embed(EmbeddingRequest(encoder, dataset, "train"))
    b = Embedder(batch_size=50).embed(EmbeddingRequest(encoder, dataset, "train"))
    np.testing.assert_array_equal(a.matrix, b.matrix)


@pytest.mark.parametrize("damage", ["truncate", "flip-byte", "sidecar-hash", "delete-sidecar"])
def test_damaged_cache_file_is_detected_and_recomputed(tmp_path, damage):
    encoder, dataset, cache, cached = _setup(tmp_path)
    request = EmbeddingRequest(encoder, dataset, "train")
    original = cached.embed(request).matrix
    array_path, meta_path = cache.root / f"{request.key()}.npy", cache.root / f"{request.key()}.json"
    if damage == "truncate":
        array_path.write_bytes(array_path.read_bytes()[:-40])
    elif damage == "flip-byte":
        raw = bytearray(array_path.read_bytes())
        raw[-5] ^= 0xFF
        array_path.write_bytes(bytes(raw))
    elif damage == "sidecar-hash":
        meta_path.write_text(meta_path.read_text().replace('"content_hash": "', '"content_hash": "0'))
    else:
        meta_path.unlink()
    calls = encoder.calls
    again = CachedEmbedder(Embedder(batch_size=8), cache).embed(request)
    assert encoder.calls > calls and not again.from_cache
    np.testing.assert_array_equal(again.matrix, original)
    if damage != "delete-sidecar":
        assert request.key() in cache.rejected
    assert cache.load(request.key()) is not None  # rewritten whole


def test_cache_key_separates_everything_that_changes_the_vectors(tmp_path):
    dataset = TinyDataset()
    base = EmbeddingRequest(CountingEncoder(), dataset, "train")
    variants = [
        EmbeddingRequest(CountingEncoder(revision="2"), dataset, "train"),
        EmbeddingRequest(CountingEncoder(), TinyDataset(seed=1), "train"),
        EmbeddingRequest(CountingEncoder(), dataset, "test"),
    ]
    keys = {base.key()} | {v.key() for v in variants}
    assert len(keys) == 4


def test_upsampled_pixels_reach_the_encoder_in_float(tmp_path):
    """28 -> 64 upsampling: the encoder sees the float resize, not one rounded back to uint8."""
    encoder = RecordingEncoder()
    seen = encoder.seen
    encoder.spec = encoder.spec.replace(resize=64)
    dataset = TinyDataset(n=4)
    Embedder(batch_size=4).embed(EmbeddingRequest(encoder, dataset, "test"))
    pixels = seen[0]
    assert pixels.dtype == np.float32 and pixels.shape == (4, 64, 64, 3)
    np.testing.assert_allclose(pixels, PixelRule("shorter-side", 64, 64).apply_batch(dataset._images), rtol=0, atol=1e-4)
    assert np.abs(pixels - np.round(pixels)).max() > 0.1


def test_perturbation_runs_on_the_stored_image_before_the_one_resize(tmp_path):
    from crsbench.plan.conditions import Condition
    from crsbench.perturbations import perturb

    encoder = RecordingEncoder()
    seen = encoder.seen
    encoder.spec = encoder.spec.replace(resize=32)
    dataset = TinyDataset(n=3)
    condition = Condition.perturbation("gaussian_noise", 3, seed=1)
    Embedder(batch_size=3).embed(EmbeddingRequest(encoder, dataset, "test", condition))
    ids = [f"test-{i}" for i in range(3)]
    expected = PixelRule("shorter-side", 32, 32).apply_batch(perturb(dataset._images, ids, "gaussian_noise", 3, 1))
    np.testing.assert_allclose(seen[0], expected, atol=1e-4)


def test_cache_key_carries_the_embedding_version(monkeypatch):
    import crsbench.embed.cache as embed

    request = EmbeddingRequest(CountingEncoder(), TinyDataset(), "test")
    before = request.key()
    assert request.describe()["embedding_version"] == embed.EMBEDDING_VERSION
    monkeypatch.setattr(embed, "EMBEDDING_VERSION", "embed-older")
    assert request.key() != before


class _MixedSizes:
    """Images of different sizes, as file-backed datasets give them."""

    def __init__(self, shapes):
        rng = np.random.default_rng(5)
        self.images = [rng.integers(0, 256, (*shape, 3), dtype=np.uint8) for shape in shapes]

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.images[i]


@pytest.mark.parametrize("rule,size,crop", [("shorter-side", 24, 20), ("squash", 20, None), ("pad", 20, None)])
def test_each_encoder_gets_one_resize_of_the_perturbed_original(rule, size, crop):
    """Mixed sizes in one batch: image i's input is the encoder's rule applied to the perturbed original,
    the perturbation made once at the original's resolution whatever the encoder's input size."""
    from crsbench.plan.conditions import Condition
    from crsbench.perturbations import perturb

    encoder = RecordingEncoder()
    seen = encoder.seen
    encoder.spec = encoder.spec.replace(resize=size, crop=crop, pixel_rule=rule, interpolation="bicubic")
    images = _MixedSizes([(40, 30), (30, 48), (40, 30), (26, 26)])
    ids = [f"x{i}" for i in range(4)]
    condition = Condition.perturbation("gaussian_blur", 3, seed=2)
    Embedder(batch_size=4).extract(encoder, images, ids, condition, "test")
    pixel_rule = encoder.spec.pixels()
    for i, original in enumerate(images.images):
        expected = pixel_rule.apply(perturb(original[None], [ids[i]], "gaussian_blur", 3, 2)[0])
        np.testing.assert_allclose(seen[0][i], expected, atol=1e-4)
    assert seen[0].shape == (4, pixel_rule.input_size, pixel_rule.input_size, 3)
