"""Every module name written in a docstring or a comment names a module that exists: a dotted name such as
`crsbench.cli.errors.handled`, `scoring.score`, `records.aggregate_seeds` or `Records.load` is resolved
against the package's own files (read with `ast`, nothing imported), so a module renamed or moved cannot
leave prose pointing at it. Schema ids (`crsbench.scored/1`), dot-files (`.crsbench.lock`) and file
names (`summary.json`) are not module names."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from functools import lru_cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "crsbench"

# a dotted name standing alone: not part of a path, a schema id, a dot-file, an option or a longer word
DOTTED = re.compile(r"(?<![\w./\-$~@:])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/\-])")
FILE_SUFFIXES = frozenset({"bin", "crsb", "csv", "gz", "html", "jpg", "json", "lock", "md", "npz", "parquet", "png",
                           "pt", "py", "safetensors", "sqlite", "svg", "toml", "tsv", "txt", "yaml", "yml", "zip"})
NOT_MODULES = frozenset({"self", "cls"})  # an instance's attribute, whatever its name


class Package:
    """The modules of a package tree and the names each defines, read from source."""

    def __init__(self, root: Path, name: str = "crsbench"):
        self.root, self.name = root, name
        self.files: dict[str, Path] = {}
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            self.files[".".join(parts)] = path
        self.short = {module.split(".")[-1] for module in self.files if module}
        self.defined = {name for module in self.files for name, node in self.top_level(module).items()
                        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}

    @lru_cache(maxsize=None)
    def tree(self, module: str) -> ast.Module:
        return ast.parse(self.files[module].read_text())

    @lru_cache(maxsize=None)
    def top_level(self, module: str) -> dict[str, ast.AST | None]:
        """Name -> its definition (None for an import, an assignment or a lazy face's entry)."""
        names: dict[str, ast.AST | None] = {}
        for node in self.tree(module).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names[node.name] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update({(a.asname or a.name).split(".")[0]: None for a in node.names})
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update({n.id: None for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)})
        getattr_functions = [n for n in self.tree(module).body
                             if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
        for function in getattr_functions:  # names a module-level __getattr__ answers
            names.update({n.value: None for n in ast.walk(function)
                          if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier()})
        for node in ast.walk(self.tree(module)):  # a lazy face: lazy_face(__name__, {"name": "module", ...})
            if isinstance(node, ast.Dict):
                names.update({k.value: None for k in node.keys
                              if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier()})
        return names

    def classes(self, module: str) -> list[ast.ClassDef]:
        return [n for n in self.top_level(module).values() if isinstance(n, ast.ClassDef)]

    def modules_named(self, dotted: str) -> list[str]:
        """Modules whose dotted name is `dotted` or ends with it (a name written without its package)."""
        return [m for m in self.files if m == dotted or m.endswith("." + dotted)]

    def resolves(self, name: str) -> bool:
        parts = name.split(".")
        if parts[0] == self.name:
            parts = parts[1:]
            if self._attributes("", parts):  # the package's own face (crsbench.open_suite)
                return True
        for k in range(len(parts), 0, -1):
            for module in self.modules_named(".".join(parts[:k])):
                if self._attributes(module, parts[k:]):
                    return True
        return any(_class_has(node, parts[1:]) for module in self.files for node in self.classes(module)
                   if node.name == parts[0])

    def _attributes(self, module: str, rest: list[str]) -> bool:
        if not rest:
            return True
        names = self.top_level(module)
        if rest[0] in names:
            node = names[rest[0]]
            return len(rest) == 1 or node is None or (isinstance(node, ast.ClassDef) and _class_has(node, rest[1:]))
        # a value of the module's own type read by attribute (`spec.resize`: an EncoderSpec's field)
        return any(_class_has(node, rest) for node in self.classes(module))

    def is_module_name(self, name: str) -> bool:
        """Whether prose names a module (or something in one) here: written with the package prefix, starting
        with one of its modules, or ending with one of its modules, classes or functions."""
        parts = name.split(".")
        if parts[0] in NOT_MODULES or parts[-1] in FILE_SUFFIXES or parts[-1].startswith("__"):
            return False
        if parts[0] not in self.short and parts[0] != self.name and importlib.util.find_spec(parts[0]) is not None:
            return False  # another package's name (numpy.core, torch.nn.Module)
        return parts[0] == self.name or parts[0] in self.short or parts[-1] in self.short | self.defined


def _class_has(node: ast.ClassDef, rest: list[str]) -> bool:
    if not rest:
        return True
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and item.name == rest[0]:
            return len(rest) == 1 or isinstance(item, ast.ClassDef) and _class_has(item, rest[1:])
        targets = (item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(item, ast.AnnAssign)
                   else [])
        if any(isinstance(t, ast.Name) and t.id == rest[0] for t in targets):
            return True
    return False


def prose(path: Path):
    """(line, text) of every docstring and comment of a module."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield (node.body[0].lineno, text)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def unresolved(package: Package) -> list[str]:
    """`file:line: name` of every module name in the package's prose that does not resolve."""
    return [f"{path.relative_to(package.root.parent)}:{line}: {name}" for path in package.files.values()
            for line, text in prose(path) for name in DOTTED.findall(text)
            if package.is_module_name(name) and not package.resolves(name)]


def test_every_module_name_in_prose_resolves():
    missing = unresolved(Package(SRC))
    assert not missing, "names in docstrings or comments that are no module here:\n" + "\n".join(missing)


def test_a_stale_name_is_found_and_ids_and_files_are_not(tmp_path):
    """The check is not vacuous: a module's old name fails it, with or without the package prefix; a schema
    id, a dot-file and a file name pass."""
    root = tmp_path / "crsbench"
    (root / "cli").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "cli" / "__init__.py").write_text("")
    (root / "cli" / "errors.py").write_text("def handled(command):\n    return command\n")
    (root / "cli" / "main.py").write_text(
        '"""Behind the one handler `cli_errors.handled` (crsbench.cli.errors.handled today).\n\n'
        'Stored as `crsbench.scored/1` beside `.crsbench.lock` and summary.json."""\n'
        "# the old home: crsbench.cli_errors.handled\n")
    package = Package(root)
    found = [hit.rsplit(": ", 1)[1] for hit in unresolved(package)]
    assert found == ["cli_errors.handled", "crsbench.cli_errors.handled"]
