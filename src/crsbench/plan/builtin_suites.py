"""The suites that come with the package, found by name, and the demo suite on the data at hand."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from crsbench.plan.suite import Suite, load_suite, parse_suite

BUILTIN_SUITES: tuple[str, ...] = ("demo", "demo-quick", "crs-bench")

# Each generated demo task is replaced by its MedMNIST counterpart when that file is already on disk.
MEDMNIST_FOR_DEMO = {"derm": "dermamnist", "fundus": "retinamnist", "cxr": "pneumoniamnist"}


def builtin_suite_path(name: str) -> Path:
    return Path(str(resources.files("crsbench") / "suites" / f"{name}.yaml"))


def suite_path(suite: str | Path) -> Path:
    """A suite file, or a built-in suite by name (a file of that name wins): the one resolver of
    every command that takes a suite."""
    path = Path(suite)
    if not path.exists() and str(suite) in BUILTIN_SUITES:
        return builtin_suite_path(str(suite))
    return path


def open_suite(suite: Suite | str | Path) -> Suite:
    if isinstance(suite, Suite):
        return suite
    path = suite_path(suite)
    # a built-in suite lives inside the package: its results go under the current folder, not there
    return load_suite(path, base=Path.cwd() if path != Path(suite) else None)


def _local_medmnist(name: str) -> Path | None:
    """The file when it is on disk and verifies; the demo never downloads behind a user's back."""
    from crsbench.datasets.medmnist import check_md5, file_md5, find_medmnist_file, medmnist_info
    from crsbench.errors import DataError

    try:
        path = find_medmnist_file(name)
        check_md5(path, file_md5(path), medmnist_info(name).md5.get(28))
    except DataError:
        return None
    return path


def demo_suite(quick: bool = False, output: str | Path | None = None, use_medmnist: bool = True) -> Suite:
    path = builtin_suite_path("demo-quick" if quick else "demo")
    import yaml

    raw: dict[str, Any] = yaml.safe_load(path.read_text())
    if output is not None:
        raw["output"] = str(output)
    if use_medmnist:
        for task in raw["tasks"]:
            found = _local_medmnist(MEDMNIST_FOR_DEMO[task["name"]])
            if found is not None:
                task["dataset"] = {"kind": "medmnist", "name": MEDMNIST_FOR_DEMO[task["name"]], "path": str(found)}
                task.pop("shift", None)  # MedMNIST has no second site with the same labels
    return parse_suite(raw, source=str(path), base=Path.cwd())  # built-in: results under the current folder
