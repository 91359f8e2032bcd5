"""The catalogue's local checkpoints in their authors' own key layouts.

For PanDerm, RadImageNet, RETFound, CheXzero and PubMedCLIP a tiny, randomly initialised model is
built in the authors' layout (a reference module written here from the authors' architecture, or the
library class they use), saved exactly as their code saves it, loaded through the catalogue path, and
its features compared with the reference's on the same input. Tolerance: float32 round-off only
(rtol 1e-5, atol 1e-5 or tighter; fused attention kernels versus an explicit softmax). A renamed or
missing key still stops the load with the differing keys named.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import OrderedDict
from typing import get_args

import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from crsbench.encoders.adapters.layouts import LAYOUTS  # noqa: E402
from crsbench.encoders.adapters.weights import allowed_globals  # noqa: E402
from crsbench.encoders.registry import build_encoder, encoder_spec  # noqa: E402
from crsbench.encoders.spec import LocalOptions  # noqa: E402
from crsbench.errors import EncoderError  # noqa: E402

from _zoo_helpers import images, offline  # noqa: E402,F401

TOL = dict(rtol=1e-5, atol=1e-5)
SIZE, PATCH, DIM, DEPTH, HEADS = 32, 8, 32, 2, 2
TINY_VIT = dict(img_size=SIZE, patch_size=PATCH, embed_dim=DIM, depth=DEPTH, num_heads=HEADS)


def _tiny(name: str, create_kwargs: dict, **changes):
    """A catalogue entry with a tiny architecture (through its own `create_kwargs`): same layout,
    preprocessing and declared leftovers, a smaller model."""
    spec = encoder_spec(name)
    options = spec.adapter.model_dump()
    options["create_kwargs"] = {**options["create_kwargs"], **create_kwargs}
    return spec.replace(name=f"tiny-{name}", adapter=options, **changes)


def _randomise(module: nn.Module, seed: int = 0) -> nn.Module:
    """Every tensor random (norm affines, biases, BatchNorm statistics included), so no key can be
    dropped or swapped without changing the features."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if tensor.is_floating_point():
                noise = torch.randn(tensor.shape, generator=generator) * 0.2
                tensor.copy_(noise.abs() + 0.5 if name.endswith("running_var") else noise)
    return module.eval()


def test_every_layout_option_has_a_mapping():
    assert set(LAYOUTS) == set(get_args(LocalOptions.model_fields["layout"].annotation))


# --- PanDerm: CAE encoder under 'encoder.', in a {'model': ..., 'args': Namespace} checkpoint -------------------


def _sincos_2d(grid: int, dim: int) -> torch.Tensor:
    """A fixed 2-D sin-cos table with a zero row for the class token (its values only need to be fixed)."""
    ys, xs = torch.meshgrid(torch.arange(grid, dtype=torch.float32), torch.arange(grid, dtype=torch.float32),
                            indexing="ij")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float32) / (dim // 4))
    angles_x, angles_y = xs.flatten()[:, None] * omega, ys.flatten()[:, None] * omega
    table = torch.cat([angles_x.sin(), angles_x.cos(), angles_y.sin(), angles_y.cos()], dim=1)
    return torch.cat([torch.zeros(1, dim), table])[None]


class CaeAttention(nn.Module):
    """Bias-free qkv projection; the bias is q_bias, zeros for k, v_bias."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(dim))
        self.v_bias = nn.Parameter(torch.zeros(dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        n, tokens, dim = x.shape
        bias = torch.cat([self.q_bias, torch.zeros_like(self.v_bias), self.v_bias])
        qkv = F.linear(x, self.qkv.weight, bias).reshape(n, tokens, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        weights = ((q * (dim // self.heads) ** -0.5) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(n, tokens, dim))


class CaeBlock(nn.Module):
    """Pre-norm block with layer scale gamma_1 / gamma_2."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = CaeAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Module()
        self.mlp.fc1, self.mlp.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma_1 = nn.Parameter(torch.ones(dim))
        self.gamma_2 = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x + self.gamma_1 * self.attn(self.norm1(x))
        return x + self.gamma_2 * self.mlp.fc2(F.gelu(self.mlp.fc1(self.norm2(x))))


class CaeEncoder(nn.Module):
    """The PanDerm / CAE encoder's layout; output = class token after the final norm (linear probe)."""

    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, DIM, PATCH, PATCH)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(_sincos_2d(SIZE // PATCH, DIM), requires_grad=False)
        self.blocks = nn.ModuleList(CaeBlock(DIM, HEADS) for _ in range(DEPTH))
        self.norm = nn.LayerNorm(DIM, eps=1e-6)

    def forward(self, pixels):
        x = self.patch_embed.proj(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(len(x), -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.norm(x)[:, 0]


def _panderm_checkpoint(reference: CaeEncoder) -> dict:
    """As the CAE pretraining script saves it: the whole pretraining model under 'model' (encoder,
    alignment encoder, regressor, decoder), beside optimiser state, epoch, scaler and args."""
    pos_embed = reference.state_dict()["pos_embed"]
    encoder = {f"encoder.{k}": v for k, v in reference.state_dict().items()}
    leftovers = {
        "alignment_encoder.blocks.0.gamma_1": torch.ones(DIM), "alignment_encoder.norm.weight": torch.ones(DIM),
        "rd_pos_embed": pos_embed.clone(), "mask_token": torch.zeros(1, 1, DIM),
        "regresser.regressor_blocks.0.norm1_q.weight": torch.ones(DIM), "regresser.norm.bias": torch.zeros(DIM),
        "decoder.head.weight": torch.zeros(8, DIM), "decoder.norm.weight": torch.ones(DIM),
    }
    args = argparse.Namespace(model="cae_large_patch16_224_8k_vocab", lr=np.float64(1.5e-3), input_size=224)
    return {"model": {**encoder, **leftovers}, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-3}]},
            "epoch": 499, "scaler": {"scale": 65536.0}, "args": args}


@pytest.fixture
def panderm(tmp_path):
    reference = _randomise(CaeEncoder(), seed=1)
    torch.save(_panderm_checkpoint(reference), tmp_path / "panderm_ll_data6_checkpoint-499.pth")
    entry = _tiny("panderm-large", TINY_VIT, resize=40, crop=SIZE, embed_dim=DIM)
    return reference, entry, tmp_path


def test_panderm_checkpoint_loads_as_the_authors_model(panderm, offline):
    reference, entry, folder = panderm
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(3, SIZE)
    with torch.inference_mode():
        expected = reference(encoder.preprocess(batch)).numpy()
    vectors = encoder.encode(batch)
    assert vectors.shape == (3, DIM)
    np.testing.assert_allclose(vectors, expected, **TOL)


def test_panderm_normalisation_is_the_authors(panderm):
    _, entry, _ = panderm
    batch = images(2, SIZE, seed=4)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.228, 0.224, 0.225])  # builder.py
    expected = torch.from_numpy(((batch / 255.0 - mean) / std).transpose(0, 3, 1, 2)).float()
    torch.testing.assert_close(build_encoder(entry).preprocess(batch), expected, rtol=0, atol=1e-6)
    assert (entry.pixel_rule, entry.resize, entry.crop) == ("shorter-side", 40, SIZE)
    zoo = encoder_spec("panderm-large")
    assert (zoo.resize, zoo.crop, zoo.interpolation, zoo.output) == (256, 224, "bilinear", "cls")


# --- RadImageNet: nn.Sequential(*resnet50().children()[:9]) saved under 'backbone.' -------------------------------


class RadImageNetBackbone(nn.Module):
    """The authors' example Backbone: torchvision's ResNet without its classifier, as a Sequential."""

    def __init__(self):
        super().__init__()
        from torchvision.models.resnet import Bottleneck, ResNet

        self.backbone = nn.Sequential(*list(ResNet(Bottleneck, [1, 1, 1, 1]).children())[:9])

    def forward(self, pixels):
        return self.backbone(pixels).flatten(1)


@pytest.fixture
def radimagenet(tmp_path):
    pytest.importorskip("torchvision")
    reference = _randomise(RadImageNetBackbone(), seed=2)
    torch.save(reference.state_dict(), tmp_path / "resnet50_torch.pt")
    entry = _tiny("radimagenet-resnet50", {"layers": [1, 1, 1, 1]}, resize=64, embed_dim=2048)
    return reference, entry, tmp_path


def test_radimagenet_sequential_keys_load_into_timm_resnet50(radimagenet, offline):
    reference, entry, folder = radimagenet
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(2, 64)
    with torch.inference_mode():
        expected = reference(encoder.preprocess(batch)).numpy()
    vectors = encoder.encode(batch)
    assert vectors.shape == (2, 2048)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_radimagenet_pixels_are_bgr_on_minus_one_to_one(radimagenet):
    _, entry, _ = radimagenet
    batch = images(2, 64, seed=5)
    authors = (batch[..., ::-1].astype(np.float64) - 127.5) * 2 / 255  # cv2.imread order, their scaling
    expected = torch.from_numpy(authors.transpose(0, 3, 1, 2).copy()).float()
    torch.testing.assert_close(build_encoder(entry).preprocess(batch), expected, rtol=0, atol=1e-6)
    zoo = encoder_spec("radimagenet-resnet50")
    assert (zoo.pixel_rule, zoo.resize, zoo.interpolation, zoo.antialias) == ("squash", 224, "bilinear", False)


# --- RETFound: {'model': MAE encoder + decoder, 'args': Namespace}; features = fresh LayerNorm of the patch mean ------


def _retfound_features(mae_encoder, pixels):
    """models_vit.VisionTransformer.forward_features with global_pool=True: the class token is
    prepended, the blocks run, the patch tokens are averaged and go through a LayerNorm the authors
    create fresh (weight 1, bias 0); the pretrained final norm is deleted, never applied."""
    x = mae_encoder.patch_embed(pixels)
    x = torch.cat([mae_encoder.cls_token.expand(len(x), -1, -1), x], dim=1) + mae_encoder.pos_embed
    for block in mae_encoder.blocks:
        x = block(x)
    return F.layer_norm(x[:, 1:].mean(dim=1), (x.shape[-1],), eps=1e-6)


@pytest.fixture
def retfound(tmp_path):
    mae_encoder = _randomise(timm.create_model("vit_large_patch16_224", pretrained=False, num_classes=0,
                                               global_pool="token", **TINY_VIT), seed=3)
    decoder = {"decoder_embed.weight": torch.zeros(16, DIM), "decoder_pos_embed": torch.zeros(1, 17, 16),
               "decoder_blocks.0.norm1.weight": torch.ones(16), "decoder_pred.weight": torch.zeros(192, 16),
               "mask_token": torch.zeros(1, 1, 16)}
    args = argparse.Namespace(model="mae_vit_large_patch16", input_size=224, blr=1.5e-4, norm_pix_loss=True)
    checkpoint = {"model": {**mae_encoder.state_dict(), **decoder}, "optimizer": {"state": {}, "param_groups": []},
                  "epoch": 799, "scaler": {"scale": 1024.0}, "args": args}
    torch.save(checkpoint, tmp_path / "RETFound_mae_natureCFP.pth")
    entry = _tiny("retfound-cfp", TINY_VIT, resize=40, crop=SIZE, embed_dim=DIM)
    return mae_encoder, entry, tmp_path


def test_retfound_checkpoint_with_args_loads_safely_and_pools_like_the_authors(retfound, offline):
    mae_encoder, entry, folder = retfound
    with pytest.raises(Exception):  # the Namespace is why a plain weights_only load fails
        torch.load(folder / "RETFound_mae_natureCFP.pth", weights_only=True)
    encoder = build_encoder(entry, weights=str(folder))
    batch = images(3, SIZE)
    with torch.inference_mode():
        pixels = encoder.preprocess(batch)
        expected = _retfound_features(mae_encoder, pixels).numpy()
        with_pretrained_norm = mae_encoder.forward_head(mae_encoder.forward_features(pixels), pre_logits=True)
    vectors = encoder.encode(batch)
    assert vectors.shape == (3, DIM) and encoder.spec.output == "pooled"
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(vectors, with_pretrained_norm.numpy(), atol=1e-3)  # not the class token output


# --- CheXzero: torch.save(model.state_dict()) of OpenAI's CLIP, text tower included -------------------------------


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class OpenAIBlock(nn.Module):
    """OpenAI CLIP's residual block, sequence-first as in their code."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln_1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(OrderedDict(
            c_fc=nn.Linear(width, 4 * width), gelu=QuickGELU(), c_proj=nn.Linear(4 * width, width)))
        self.ln_2 = nn.LayerNorm(width)

    def forward(self, x):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class OpenAIVisual(nn.Module):
    """OpenAI CLIP's VisionTransformer: encode_image = ln_post(class token) @ proj."""

    def __init__(self, embed_dim: int):
        super().__init__()
        self.conv1 = nn.Conv2d(3, DIM, PATCH, PATCH, bias=False)
        self.class_embedding = nn.Parameter(torch.zeros(DIM))
        self.positional_embedding = nn.Parameter(torch.zeros((SIZE // PATCH) ** 2 + 1, DIM))
        self.ln_pre = nn.LayerNorm(DIM)
        self.transformer = nn.Module()
        self.transformer.resblocks = nn.Sequential(*[OpenAIBlock(DIM, HEADS) for _ in range(DEPTH)])
        self.ln_post = nn.LayerNorm(DIM)
        self.proj = nn.Parameter(torch.zeros(DIM, embed_dim))

    def forward(self, pixels):
        x = self.conv1(pixels).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_embedding.expand(len(x), 1, -1), x], dim=1) + self.positional_embedding
        x = self.transformer.resblocks(self.ln_pre(x).permute(1, 0, 2)).permute(1, 0, 2)
        return self.ln_post(x[:, 0]) @ self.proj


def _openai_clip_state(visual: OpenAIVisual, embed_dim: int) -> OrderedDict:
    """What torch.save(model.state_dict()) writes for OpenAI's CLIP: visual.* and the text tower."""
    text = OpenAIBlock(DIM, HEADS)
    state = OrderedDict((f"visual.{k}", v) for k, v in visual.state_dict().items())
    state.update({"positional_embedding": torch.zeros(8, DIM), "text_projection": torch.zeros(DIM, embed_dim),
                  "logit_scale": torch.tensor(math.log(1 / 0.07)), "token_embedding.weight": torch.zeros(64, DIM)})
    state.update((f"transformer.resblocks.0.{k}", v) for k, v in text.state_dict().items())
    state.update({"ln_final.weight": torch.ones(DIM), "ln_final.bias": torch.zeros(DIM)})
    return state


def test_chexzero_openai_state_dict_loads_into_open_clip_tower(tmp_path, offline):
    open_clip = pytest.importorskip("open_clip")
    embed_dim = 16
    config = {
        "embed_dim": embed_dim, "quick_gelu": True,
        "vision_cfg": {"image_size": SIZE, "layers": DEPTH, "width": DIM, "head_width": DIM // HEADS,
                       "patch_size": PATCH},
        "text_cfg": {"context_length": 8, "vocab_size": 64, "width": DIM, "heads": HEADS, "layers": 1},
    }
    (tmp_path / "tiny-chexzero-clip.json").write_text(json.dumps(config))
    open_clip.add_model_config(tmp_path / "tiny-chexzero-clip.json")
    visual = _randomise(OpenAIVisual(embed_dim), seed=4)
    weights = tmp_path / "best_64_5e-05_original_22000_0.864.pt"
    torch.save(_openai_clip_state(visual, embed_dim), weights)

    spec = encoder_spec("chexzero")
    adapter = {**spec.adapter.model_dump(), "model": "tiny-chexzero-clip"}
    encoder = build_encoder(spec.replace(name="tiny-chexzero", resize=SIZE, embed_dim=embed_dim, adapter=adapter),
                            weights=str(tmp_path))
    batch = images(2, SIZE)
    with torch.inference_mode():
        expected = visual(encoder.preprocess(batch)).numpy()
    np.testing.assert_allclose(encoder.encode(batch), expected, **TOL)
    assert not hasattr(encoder.model, "token_embedding")  # the text tower is never built


# --- PubMedCLIP: a hub-style folder with pytorch_model.bin and config.json only ----------------------------------


def _pubmedclip_folder(folder):
    transformers = pytest.importorskip("transformers")
    text = dict(hidden_size=DIM, num_hidden_layers=1, num_attention_heads=HEADS, intermediate_size=64,
                vocab_size=50, max_position_embeddings=16)
    vision = dict(hidden_size=DIM, num_hidden_layers=DEPTH, num_attention_heads=HEADS, intermediate_size=64,
                  patch_size=PATCH, image_size=SIZE)
    full = transformers.CLIPModel(transformers.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    full = _randomise(full, seed=5)
    folder.mkdir()
    full.config.save_pretrained(str(folder))
    state = dict(full.state_dict())
    # the older transformers that wrote the hub's .bin also saved these buffers
    state["vision_model.embeddings.position_ids"] = torch.arange((SIZE // PATCH) ** 2 + 1)[None]
    state["text_model.embeddings.position_ids"] = torch.arange(16)[None]
    torch.save(state, folder / "pytorch_model.bin")
    return full


def test_pubmedclip_bin_only_folder_loads_safely(tmp_path, offline):
    full = _pubmedclip_folder(tmp_path / "pubmedclip")
    assert not list((tmp_path / "pubmedclip").glob("*.safetensors"))
    entry = encoder_spec("pubmedclip-vit-b32").replace(name="tiny-pubmedclip", resize=SIZE, crop=None, embed_dim=16)
    encoder = build_encoder(entry, weights=str(tmp_path / "pubmedclip"))
    batch = images(2, SIZE)
    with torch.inference_mode():
        expected = full.get_image_features(pixel_values=encoder.preprocess(batch))
    expected = getattr(expected, "pooler_output", expected).numpy()
    np.testing.assert_allclose(encoder.encode(batch), expected, **TOL)


# --- a renamed or missing key still stops the load, naming it ----------------------------------------------------


def _rename(path, old: str, new: str | None):
    """Rewrite a saved checkpoint with one key renamed (or removed, new=None), wrappers kept."""
    with torch.serialization.safe_globals(allowed_globals()):
        checkpoint = torch.load(path, weights_only=True)
    state = checkpoint["model"] if "model" in checkpoint else checkpoint
    value = state.pop(old)
    if new is not None:
        state[new] = value
    torch.save(checkpoint, path)


CASES = {  # fixture -> (file, key to change, the architecture's name for it)
    "panderm": ("panderm_ll_data6_checkpoint-499.pth", "encoder.blocks.1.gamma_2", "blocks.1.gamma_2"),
    "radimagenet": ("resnet50_torch.pt", "backbone.7.0.bn3.running_var", "layer4.0.bn3.running_var"),
    "retfound": ("RETFound_mae_natureCFP.pth", "blocks.0.attn.qkv.bias", "blocks.0.attn.qkv.bias"),
}


@pytest.mark.parametrize("removed", [False, True], ids=["renamed", "missing"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_changed_key_stops_the_load_and_is_named(case, removed, request, offline):
    _, entry, folder = request.getfixturevalue(case)
    filename, key, architecture_key = CASES[case]
    _rename(folder / filename, key, None if removed else key + "_renamed")
    with pytest.raises(EncoderError) as info:
        build_encoder(entry, weights=str(folder)).encode(images(1, entry.input_size))
    message = str(info.value)
    assert "\n" not in message and "does not match" in message and architecture_key in message
    if not removed:
        assert "_renamed" in message  # the unexpected key is named too
