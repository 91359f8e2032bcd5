"""Authors' checkpoint key layouts, renamed onto the architecture that timm or open_clip builds.

A layout function takes the flat state dict `load_state_dict` returns and renames keys: it never drops
a tensor it does not know, so the strict load that follows still names every key that is missing or
left over. Known pretraining leftovers are dropped by the entry's `ignore_prefixes`, in the open.
Option `layout` of a local entry picks the function (`LocalOptions.layout`).
"""

from __future__ import annotations

from typing import Callable

StateDict = dict


def native(state: StateDict) -> StateDict:
    """The checkpoint already uses the architecture's key names."""
    return state


def panderm(state: StateDict) -> StateDict:
    """PanDerm (CAE pretraining): the ViT is the model's `encoder.` submodule. Its names (q_bias/v_bias
    beside a bias-free qkv, layer scale gamma_1/gamma_2, a fixed sin-cos pos_embed, final `norm`) are
    those of timm's BEiT, so removing the prefix is the whole mapping; the authors do the same."""
    return {key.removeprefix("encoder."): value for key, value in state.items()}


# nn.Sequential(*list(resnet50().children())[:9]) -> the ResNet attribute each index held;
# 2 (relu), 3 (maxpool) and 8 (avgpool) hold no tensors
RADIMAGENET_CHILDREN = {"0": "conv1", "1": "bn1", "4": "layer1", "5": "layer2", "6": "layer3", "7": "layer4"}


def _resnet_key(key: str) -> str:
    """'backbone.4.0.conv1.weight' -> 'layer1.0.conv1.weight'; any other key is left to the strict load."""
    head, _, rest = key.partition(".")
    index, _, leaf = rest.partition(".")
    if head == "backbone" and index in RADIMAGENET_CHILDREN and leaf:
        return f"{RADIMAGENET_CHILDREN[index]}.{leaf}"
    return key


def radimagenet(state: StateDict) -> StateDict:
    """RadImageNet's PyTorch ResNet-50: saved from a module whose `backbone` is an nn.Sequential of
    torchvision's first nine ResNet-50 children, so keys read `backbone.N.*`."""
    return {_resnet_key(key): value for key, value in state.items()}


def retfound(state: StateDict) -> StateDict:
    """RETFound's features (models_vit.VisionTransformer with global_pool=True): the mean of the patch
    tokens through `fc_norm`, a LayerNorm the authors create fresh while deleting the pretrained final
    `norm`; their linear probe trains only the head, so fc_norm keeps its initial weight 1, bias 0.
    The checkpoint's `norm.*` are replaced by exactly that LayerNorm, for timm's `global_pool="avg"`."""
    mapped = {key: value for key, value in state.items() if not key.startswith("norm.")}
    if "norm.weight" in state and "norm.bias" in state:  # else fc_norm stays missing: the load names it
        import torch

        mapped["fc_norm.weight"] = torch.ones_like(state["norm.weight"])
        mapped["fc_norm.bias"] = torch.zeros_like(state["norm.bias"])
    return mapped


# the values of LocalOptions.layout
LAYOUTS: dict[str, Callable[[StateDict], StateDict]] = {
    "native": native,
    "panderm": panderm,
    "radimagenet": radimagenet,
    "retfound": retfound,
}
