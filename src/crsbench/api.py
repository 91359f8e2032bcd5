"""The Python API: the same operations as the CLI, returning values instead of printing."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench import records as record_schema
from crsbench.crs import CRSConfig
from crsbench.progress import Progress
from crsbench.runner import RunSummary, SuiteRun
from crsbench.store import load_records
from crsbench.suite import Suite, load_suite, parse_suite

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


def check_data(suite: Suite | str | Path) -> list:
    """Resolve every dataset of a suite, stat its files and decode a sample (`crsbench validate --data`)."""
    from crsbench.datacheck import check_suite_data

    return check_suite_data(open_suite(suite))


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


def run(suite: Suite | str | Path, progress: Progress | None = None, cache_dir: str | Path | None = None) -> RunSummary:
    return SuiteRun(open_suite(suite), progress=progress, cache_dir=cache_dir).run()


def records(results: str | Path, suite_hash: str | None = None) -> pd.DataFrame:
    """The run records of a results folder (one suite's, with `suite_hash`)."""
    frame = load_records(results)
    return record_schema.select_suite(frame, suite_hash) if suite_hash else frame


def aggregate(results: str | Path | pd.DataFrame, suite_hash: str | None = None) -> pd.DataFrame:
    """Mean, std and n over seeds (records.aggregate_seeds); records of several grids are refused."""
    frame = results if isinstance(results, pd.DataFrame) else load_records(results)
    return record_schema.aggregate_seeds(frame, suite_hash)


def export_results(
    results: str | Path, out_dir: str | Path | None = None, formats=("parquet", "csv"), suite_hash: str | None = None
) -> list[Path]:
    from crsbench.report import export_records

    target = Path(out_dir) if out_dir else (Path(results) if Path(results).is_dir() else Path(results).parent)
    return export_records(load_records(results), target, formats, suite_hash)


def summary_table(results: str | Path | pd.DataFrame, suite_hash: str | None = None) -> pd.DataFrame:
    """The seed aggregate at clean test and 100% labels: what `crsbench results` shows."""
    return record_schema.clean_full_label(aggregate(results, suite_hash))


def suite_reference(results: str | Path, suite_hash: str | None = None) -> str | None:
    """The reference named by the latest suite (or the suite `suite_hash`) that wrote to these results, if any."""
    import yaml

    from crsbench.store import ResultsStore

    path = Path(results)
    path = path / "results.sqlite" if path.is_dir() else path
    if not path.exists():
        return None
    with ResultsStore(path) as store:
        runs = store.runs()
    if suite_hash:
        runs = runs[runs["suite_hash"].astype(str).str.startswith(suite_hash)]
    for text in reversed(runs["suite_yaml"].dropna().tolist()):
        reference = (yaml.safe_load(text) or {}).get("reference")
        if reference:
            return reference
    return None


def score(
    results: str | Path,
    reference: str | None = None,
    config: CRSConfig | None = None,
    *,
    suite_hash: str | None = None,
    **settings,
):
    """The CRS report of a results folder. `config` is a crs.CRSConfig; CRSConfig fields may also be
    given by name (`n_boot=2000`), and are validated into one."""
    from crsbench.scoring import score_records

    if config is not None and settings:
        raise ValueError(f"give either config or settings by name, not both ({sorted(settings)})")
    config = config or CRSConfig(**settings)
    return score_records(records(results, suite_hash), reference or suite_reference(results, suite_hash), config)


def write_scores(report, results: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    from crsbench.report import write_score_report

    base = Path(results) if Path(results).is_dir() else Path(results).parent
    return write_score_report(report, Path(out_dir) if out_dir else base / "scores")


def data_dir() -> Path | None:
    value = os.environ.get("CRSBENCH_DATA")
    return Path(value) if value else None
