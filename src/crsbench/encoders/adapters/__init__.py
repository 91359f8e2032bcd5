"""Adapters from model libraries (timm, open_clip, transformers, local checkpoints) to the Encoder protocol.

Each adapter imports its library only when an encoder is built, so `import crsbench` never needs them.
"""

from __future__ import annotations

import importlib

from crsbench.errors import EncoderError

ZOO_INSTALL_HINT = "pip install 'crsbench[zoo]'"


def require(module: str, encoder: str):
    """Import a zoo library or fail with one line that says how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise EncoderError(
            f"encoder {encoder!r} needs the Python package {module.split('.')[0]!r}, which is not installed: "
            f"{ZOO_INSTALL_HINT}"
        ) from None
