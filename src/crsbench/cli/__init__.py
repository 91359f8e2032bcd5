"""The `crsbench` command: each command parses its arguments, calls the library, renders the value."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {"app": "main"})
