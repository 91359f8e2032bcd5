"""Checkpoints no library packages (RadImageNet, RETFound, PanDerm, CheXzero): a state dict from a
local file (or a bare hub file), loaded safely into an architecture that timm or open_clip builds.

Declare `adapter={"arch_library": "timm", "arch": "resnet50", "files": ("resnet50_torch.pt",)}`; where
the authors saved other key names, `"layout": "radimagenet"` renames them first (see `layouts`), and
where the checkpoint holds leftovers such as a pretraining decoder, `"ignore_prefixes": ("decoder",)`.
Small or non-default architectures come from `create_kwargs` (timm) or `config_overrides` (open_clip).
"""

from __future__ import annotations

from crsbench.encoders.adapters import from_model, open_clip_adapter, timm_adapter
from crsbench.encoders.adapters.layouts import LAYOUTS
from crsbench.encoders.adapters.weights import resolve_weights
from crsbench.encoders.spec import EncoderSpec


class _AuthorsLayout:
    """Renames the checkpoint's keys from the authors' layout (option `layout`) before the strict load."""

    def read_state(self, path):
        return LAYOUTS[self.spec.adapter.layout](super().read_state(path))


class LocalTimmEncoder(_AuthorsLayout, timm_adapter.TimmEncoder):
    pass


class LocalOpenClipEncoder(_AuthorsLayout, open_clip_adapter.OpenClipEncoder):
    pass


# the library that builds the architecture -> its encoder class (same safe loading, same strictness)
ARCHITECTURES = {
    "timm": LocalTimmEncoder,
    "open_clip": LocalOpenClipEncoder,
}


def build(spec: EncoderSpec, **options):
    encoder_class = ARCHITECTURES[spec.adapter.arch_library]  # the spec's type allows only these
    spec, weights, runtime = resolve_weights(spec, options)
    spec = from_model.resolve(spec, weights)  # preprocessing: from_model -> the model config's values
    return encoder_class(spec, weights, **runtime)
