"""The one resize from a decoded image to an encoder's input (crsbench.encoders.pixels), against PIL and torchvision."""

import numpy as np
import pytest
import torch
from PIL import Image

from crsbench.encoders.pixels import PixelRule, prepare_batch

RNG = np.random.default_rng(0)


def _pil_float_resize(image: np.ndarray, size_wh: tuple[int, int], pil_filter) -> np.ndarray:
    """PIL's antialiased resize of each channel as a float ('F') image: no rounding anywhere."""
    return np.stack([np.asarray(Image.fromarray(image[..., c].astype(np.float32), mode="F").resize(size_wh, pil_filter))
                     for c in range(3)], axis=-1)


@pytest.mark.parametrize("filter_name,pil_filter", [("bilinear", Image.BILINEAR), ("bicubic", Image.BICUBIC)])
@pytest.mark.parametrize("shape", [(40, 30), (30, 40), (33, 33)])
def test_squash_matches_pil_float_resize_and_is_not_rounded(filter_name, pil_filter, shape):
    image = RNG.integers(0, 256, (*shape, 3), dtype=np.uint8)
    ours = PixelRule("squash", 16, filter=filter_name).apply(image)
    assert ours.dtype == np.float32 and ours.shape == (16, 16, 3)
    reference = np.clip(_pil_float_resize(image, (16, 16), pil_filter), 0, 255)
    assert np.abs(ours - reference).mean() < 0.5 and np.abs(ours - reference).max() < 4
    assert not np.allclose(ours, np.round(ours))  # float pixels reach the encoder


@pytest.mark.parametrize("shape", [(56, 40), (40, 56), (48, 48), (37, 91)])
@pytest.mark.parametrize("size,crop", [(32, 28), (24, 24)])
def test_shorter_side_then_crop_is_torchvision_resize_and_center_crop(shape, size, crop):
    from torchvision.transforms import CenterCrop, InterpolationMode, Resize

    image = RNG.integers(0, 256, (*shape, 3), dtype=np.uint8)
    ours = PixelRule("shorter-side", size, crop, "bilinear").apply(image)
    x = torch.from_numpy(image).permute(2, 0, 1).float()[None]
    reference = CenterCrop(crop)(Resize(size, InterpolationMode.BILINEAR, antialias=True)(x)).clamp(0, 255)
    np.testing.assert_allclose(ours, reference[0].permute(1, 2, 0).numpy(), atol=1e-3)
    assert ours.shape == (crop, crop, 3)


def test_rules_differ_on_a_non_square_image():
    """The rule decides what the encoder sees: squash keeps the whole field, the crop drops its sides."""
    image = np.zeros((40, 80, 3), np.uint8)
    image[:, :16] = 255  # a bright band at the left edge only
    squash = PixelRule("squash", 20, filter="bilinear").apply(image)
    crop = PixelRule("shorter-side", 20, 20, "bilinear").apply(image)
    pad = PixelRule("pad", 20, filter="bilinear").apply(image)
    assert squash[:, :3].mean() > 250 and crop.mean() < 1  # the band survives squashing, not the crop
    assert pad.shape == (20, 20, 3) and pad[:5].max() == 0 and pad[-5:].max() == 0  # black above and below
    assert pad[5:15, :3].mean() > 250


def test_pad_places_the_resized_image_as_a_pil_paste_would():
    image = RNG.integers(1, 256, (30, 50, 3), dtype=np.uint8)
    ours = PixelRule("pad", 20, filter="bicubic").apply(image)
    h, w = int(30 * 20 / 50), 20  # PIL arithmetic: int(side * ratio)
    top, left = (20 - h) // 2, (20 - w) // 2
    inner = np.clip(_pil_float_resize(image, (w, h), Image.BICUBIC), 0, 255)
    assert np.abs(ours[top:top + h, left:left + w] - inner).mean() < 0.5
    assert ours[:top].max() == 0 and ours[top + h:].max() == 0


def test_without_antialias_a_downscale_is_plain_interpolation():
    """antialias=False is TensorFlow's default bilinear resize (half-pixel centres), as some authors evaluate."""
    image = RNG.integers(0, 256, (64, 48, 3), dtype=np.uint8)
    ours = PixelRule("squash", 16, filter="bilinear", antialias=False).apply(image)
    x = torch.from_numpy(image).permute(2, 0, 1).float()[None]
    plain = torch.nn.functional.interpolate(x, size=(16, 16), mode="bilinear", align_corners=False, antialias=False)
    np.testing.assert_allclose(ours, plain[0].permute(1, 2, 0).numpy(), atol=1e-4)
    assert np.abs(ours - PixelRule("squash", 16, filter="bilinear").apply(image)).mean() > 1  # the setting matters


def test_a_mixed_size_batch_gives_each_image_what_it_gets_alone():
    images = [RNG.integers(0, 256, shape, dtype=np.uint8) for shape in [(40, 30, 3), (30, 40, 3), (40, 30, 3), (64, 64, 3)]]
    rule = PixelRule("shorter-side", 24, 20, "bicubic")
    batch = prepare_batch(images, rule)
    assert batch.shape == (4, 20, 20, 3)
    for image, row in zip(images, batch):
        np.testing.assert_array_equal(row, rule.apply(image))


def test_the_same_size_is_passed_through_untouched():
    image = RNG.integers(0, 256, (20, 20, 3), dtype=np.uint8)
    np.testing.assert_array_equal(PixelRule("shorter-side", 20, 20).apply(image), image.astype(np.float32))


def test_bad_rules_are_refused():
    with pytest.raises(ValueError, match="unknown pixel rule"):
        PixelRule("stretch", 10)
    with pytest.raises(ValueError, match="unknown resize filter"):
        PixelRule("squash", 10, filter="lanczos")
    with pytest.raises(ValueError, match="crop <= size"):
        PixelRule("shorter-side", 10, 12)


def test_an_odd_crop_margin_is_placed_as_the_card_library_places_it():
    from torchvision.transforms import CenterCrop

    image = RNG.integers(0, 256, (30, 45, 3), dtype=np.uint8)  # margin 45 - 30 = 15: odd
    x = torch.from_numpy(image).permute(2, 0, 1).float()
    rounded = PixelRule("shorter-side", 30, 30).apply(image)
    np.testing.assert_array_equal(rounded, CenterCrop(30)(x).permute(1, 2, 0).numpy())  # torchvision: round(7.5) = 8
    floored = PixelRule("shorter-side", 30, 30, crop_offset="floor").apply(image)
    np.testing.assert_array_equal(floored, image[:, 7:37].astype(np.float32))  # transformers: 15 // 2 = 7
