"""A stage package's public face, imported on first use.

Importing one module of a package runs the package's `__init__` first; a face that imported its
modules eagerly would make `crsbench.run.resolve` cost the whole run stage (and torch), so `validate`
and `--help` would pay for models they never load. The face names what a user reaches for; each name is
imported from its module when first read.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Callable


def lazy_face(package: str, face: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """`__getattr__`, `__dir__` and `__all__` for `package`: `face` maps a public name to the module
    (relative to the package) that defines it, or to `module:attribute` where the public name differs; a
    submodule's name is that submodule."""

    def __getattr__(name: str) -> object:
        if name in face:
            module, _, attribute = face[name].partition(":")
            return getattr(importlib.import_module(f"{package}.{module}"), attribute or name)
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(face)

    return __getattr__, __dir__, sorted(face)
