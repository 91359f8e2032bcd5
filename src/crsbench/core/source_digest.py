"""A digest of the source a computation runs: a module of this package and every module of it that the
module imports, directly or through others, read from the installed files.

A stored value keyed by the package version alone would outlive an edit of a development checkout; keyed
by this digest, it is recomputed after any edit of the code that computed it, and only after one.
Imports are read with `ast` (nothing is imported), wherever they sit, lazy ones inside functions
included; those made for annotations alone (`if TYPE_CHECKING:`) run no code and do not count.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the installed crsbench folder


def _file_of(module: str, root: Path) -> Path | None:
    """The file of a dotted module name (`crsbench.scoring.score`) under `root` (the crsbench folder), a package's __init__ for a package."""
    parts = module.split(".")[1:]
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _annotation_only(tree: ast.AST) -> set[int]:
    blocks = [node for node in ast.walk(tree) if isinstance(node, ast.If)
              and "TYPE_CHECKING" in (getattr(node.test, "id", None), getattr(node.test, "attr", None))]
    return {id(inner) for block in blocks for inner in ast.walk(block)}


def imported_modules(path: Path, module: str, root: Path) -> set[str]:
    """The package's modules that the file of `module` imports at run time (`from a import b` counts a.b
    when b is a module of its own, else a; relative imports resolved against `module`)."""
    tree = ast.parse(path.read_bytes())
    skipped = _annotation_only(tree)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    named: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(anchor + ([source] if source else []))
            named.add(source)
            named.update(f"{source}.{alias.name}" for alias in node.names)
    found = set()
    for name in named:
        if name.split(".")[0] != root.name:
            continue
        while name and _file_of(name, root) is None:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def reached_modules(module: str, root: Path = PACKAGE_ROOT) -> dict[str, Path]:
    """`module` and every package module it reaches by imports, with the packages that hold them (their
    `__init__` runs on import): name -> file, sorted by name."""
    seen: dict[str, Path] = {}
    pending = [module]
    while pending:
        name = pending.pop()
        path = _file_of(name, root)
        if name in seen or path is None:
            continue
        seen[name] = path
        pending.extend(imported_modules(path, name, root))
        pending.extend(name.rsplit(".", k)[0] for k in range(1, name.count(".")))
    return dict(sorted(seen.items()))


@functools.cache
def source_digest(module: str, root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 over the name and bytes of every file `reached_modules(module)` names. Read once per process:
    the code a process runs does not change under it."""
    digest = hashlib.sha256()
    for name, path in reached_modules(module, root).items():
        digest.update(f"{name}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()
