"""The package's import structure: no cycle, and every import points down the pipeline's layer order.

Read from the source with `ast` (no module is imported), so lazy imports inside functions count too: a
cycle hidden in a function body still ties two modules together. Imports made for annotations only
(under `if TYPE_CHECKING:`) count for cycles as well: a reader who draws the graph draws them.
"""

import ast
import functools
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "crsbench"

# Stage packages (and the few top-level modules), lowest first, in the pipeline's order:
# suite -> plan -> embed -> probe -> evaluate -> records -> axes -> CRS + statistics -> report.
# A unit may import only units of its own layer or below; within a layer, the cycle test keeps the order.
LAYERS = (
    ("errors", "core"),
    ("metrics", "crs", "perturbations", "executors", "probe"),
    ("datasets", "encoders"),
    ("plan",),
    ("results", "embed"),
    ("scoring", "run"),
    ("report", "selection", "bundles", "simulation"),
    ("api",),
    ("cli", "__main__", "__init__"),
)
LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}

# Only tests and benchmarks draw simulated cohorts: a product module that imported them would ship a simulator
# as part of what it computes.
TEST_ONLY = {"simulation"}

# The read side (records in, tables and pages out) never reaches into the run side that wrote them.
READ_SIDE = {"scoring", "report"}
RUN_SIDE = {"embed", "run", "selection"}


def _module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _imports(path: Path, modules: set[str], typing_too: bool = False) -> set[str]:
    """The crsbench modules a file imports, wherever in the file the import sits: `from a import b` names
    module a.b when b is a module, else a. The package's `__version__` is a constant, not an import of it.
    Imports under `if TYPE_CHECKING:` count only with `typing_too`."""
    found = set()
    tree = ast.parse(path.read_text())
    typing_only = set() if typing_too else {id(n) for block in ast.walk(tree) if _is_type_checking_block(block)
                                            for n in ast.walk(block)}  # never imported at run time
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


@functools.cache
def import_graph(package: Path = PACKAGE, typing_too: bool = False) -> dict[str, frozenset[str]]:
    """Module -> the package's modules it imports (run-time imports; annotation-only ones too with
    `typing_too`). Read once per test process: every structure test asks for the same graph."""
    modules = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path, set(modules), typing_too):
            while imported not in modules and "." in imported:
                imported = imported.rsplit(".", 1)[0]
            if imported in modules and imported != name:
                targets.add(imported)
        graph[name] = frozenset(targets)
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


def test_there_is_no_import_cycle_even_through_annotation_only_imports():
    assert cycles(import_graph(typing_too=True)) == []


def test_a_cycle_planted_in_a_copy_of_the_package_is_found(tmp_path):
    """The check on the real tree, run on a copy with one planted annotation-only loop: the figures
    module importing the page that draws it. Found with typing imports counted, missed without."""
    copy = tmp_path / "crsbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    figures = copy / "report" / "figures.py"
    figures.write_text(figures.read_text().replace(
        "if TYPE_CHECKING:  # annotations only\n",
        "if TYPE_CHECKING:  # annotations only\n    from crsbench.report.page import FigureFile\n", 1))
    found = cycles(import_graph(copy, typing_too=True))
    print("cycles in the planted copy:", found)
    assert found == [["crsbench.report.figures", "crsbench.report.page"]]
    assert cycles(import_graph(copy)) == []  # a run-time-only reading would miss it


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


def _test_only_importers(graph) -> list[str]:
    return sorted(f"{module} -> {target}" for module, targets in graph.items()
                  for target in targets if _unit(target) in TEST_ONLY and _unit(module) not in TEST_ONLY)


def test_no_product_module_imports_the_simulation():
    wrong = _test_only_importers(import_graph(typing_too=True))
    assert not wrong, f"the simulation is for tests and benchmarks only: {wrong}"


def test_a_product_import_of_the_simulation_planted_in_a_copy_is_found(tmp_path):
    copy = tmp_path / "crsbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "scoring" / "planted.py").write_text("def f():\n    from crsbench.simulation.cohort import Design\n")
    assert _test_only_importers(import_graph(copy, typing_too=True)) == [
        "crsbench.scoring.planted -> crsbench.simulation.cohort"]


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
