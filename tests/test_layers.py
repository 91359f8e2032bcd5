"""The package's import structure: no cycle, and every import points down the pipeline's layer order.

Read from the source with `ast` (no module is imported), so lazy imports inside functions count too: a
cycle hidden in a function body still ties two modules together.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "crsbench"

# Top-level modules and packages, lowest first. A unit may import only units of its own layer or below;
# within a layer, the cycle test keeps the order.
LAYERS = (
    ("errors", "atomic", "hashing", "timestamps", "vocabulary", "safe_yaml", "printable", "modalities"),
    ("records", "metrics", "weighted_metrics", "axis_math", "pixels", "perturbations", "progress",
     "output_lock", "executors"),
    ("conditions", "datasets", "encoders", "probe_engine", "probe", "subsets", "crs", "store"),
    ("axes", "stats", "predictions", "class_support", "shift", "extraction", "robustness", "suite"),
    ("bootstrap", "simulation", "plan", "embed", "resolve", "axis_evidence"),
    ("scoring", "grid", "pipeline", "keys", "datacheck", "task_data", "provenance"),
    ("embedding_jobs", "selection", "report"),
    ("runner",),
    ("api",),
    ("cli_console", "cli_errors", "cli_datasets", "cli_encoders", "cli_select", "cli", "__main__", "__init__"),
)
LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}

# The read side (records in, tables and pages out) never reaches into the run side that wrote them.
READ_SIDE = {"axes", "stats", "bootstrap", "simulation", "scoring", "report"}
RUN_SIDE = {"embed", "extraction", "plan", "resolve", "pipeline", "keys", "task_data", "provenance",
            "embedding_jobs", "selection", "runner"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The crsbench modules a file imports, wherever in the file the import sits: `from a import b` names
    module a.b when b is a module, else a. The package's `__version__` is a constant, not an import of it."""
    found = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking_block(block)
                   for n in ast.walk(block)}  # annotations only: never imported at run time
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("crsbench"):
            for alias in node.names:
                if (node.module, alias.name) != ("crsbench", "__version__"):
                    submodule = f"{node.module}.{alias.name}"
                    found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("crsbench"))
    return found


def _is_type_checking_block(node) -> bool:
    return isinstance(node, ast.If) and (getattr(node.test, "id", None) == "TYPE_CHECKING"
                                         or getattr(node.test, "attr", None) == "TYPE_CHECKING")


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path, set(modules)):
            while imported not in modules and "." in imported:
                imported = imported.rsplit(".", 1)[0]
            if imported in modules and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_there_is_no_import_cycle():
    assert cycles(import_graph()) == []


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in import_graph()}
    assert units <= set(LAYER), f"place these in LAYERS: {sorted(units - set(LAYER))}"


def test_imports_point_down_the_layers():
    against = sorted(
        f"{source} ({_unit(source)}, layer {LAYER[_unit(source)]}) imports {target} (layer {LAYER[_unit(target)]})"
        for source, targets in import_graph().items()
        for target in targets
        if LAYER[_unit(target)] > LAYER[_unit(source)]
    )
    assert against == []


def test_the_read_side_never_imports_the_run_side():
    crossing = sorted(
        f"{source} imports {target}"
        for source, targets in import_graph().items() if _unit(source) in READ_SIDE
        for target in targets if _unit(target) in RUN_SIDE
    )
    assert crossing == []


def test_datasets_and_encoders_know_nothing_of_each_other():
    graph = import_graph()
    for a, b in (("datasets", "encoders"), ("encoders", "datasets")):
        assert not any(_unit(s) == a and _unit(t) == b for s, ts in graph.items() for t in ts), f"{a} imports {b}"


@pytest.mark.parametrize("graph,expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected
