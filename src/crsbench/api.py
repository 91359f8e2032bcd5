"""The Python API: the same operations as the CLI, returning values instead of printing."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench.progress import Progress
from crsbench.runner import RunSummary, SuiteRun
from crsbench.store import export, load_records, seed_aggregate
from crsbench.suite import Suite, load_suite, parse_suite

# Each generated demo task is replaced by its MedMNIST counterpart when that file is already on disk.
MEDMNIST_FOR_DEMO = {"derm": "dermamnist", "fundus": "retinamnist", "cxr": "pneumoniamnist"}


def builtin_suite_path(name: str) -> Path:
    return Path(str(resources.files("crsbench") / "suites" / f"{name}.yaml"))


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
    return parse_suite(raw, source=str(path), base=path.parent)


def run(suite: Suite | str | Path, progress: Progress | None = None, cache_dir: str | Path | None = None) -> RunSummary:
    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    return SuiteRun(suite, progress=progress, cache_dir=cache_dir).run()


def records(results: str | Path) -> pd.DataFrame:
    return load_records(results)


def aggregate(results: str | Path | pd.DataFrame) -> pd.DataFrame:
    frame = results if isinstance(results, pd.DataFrame) else load_records(results)
    return seed_aggregate(frame)


def export_results(results: str | Path, out_dir: str | Path | None = None, formats=("parquet", "csv")) -> list[Path]:
    frame = load_records(results)
    target = Path(out_dir) if out_dir else (Path(results) if Path(results).is_dir() else Path(results).parent)
    return export(frame, target, formats)


def summary_table(results: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Per encoder: clean-test AUROC and ECE per task at full labels, mean and std over seeds."""
    frame = results if isinstance(results, pd.DataFrame) else load_records(results)
    full = frame[(frame["fraction"] == 1.0) & (frame["condition_kind"] == "clean")]
    grouped = full.groupby(["encoder", "task"])
    table = grouped[["auroc", "ece"]].agg(["mean", "std"])
    table.columns = [f"{metric}_{stat}" for metric, stat in table.columns]
    table["n_seeds"] = grouped["seed"].nunique()
    return table.reset_index()


def suite_reference(results: str | Path) -> str | None:
    """The reference named by the latest suite that wrote to these results, if any."""
    import yaml

    from crsbench.store import ResultsStore

    path = Path(results)
    path = path / "results.sqlite" if path.is_dir() else path
    if not path.exists():
        return None
    with ResultsStore(path) as store:
        runs = store.runs()
    for text in reversed(runs["suite_yaml"].dropna().tolist()):
        reference = (yaml.safe_load(text) or {}).get("reference")
        if reference:
            return reference
    return None


def score(results: str | Path, reference: str | None = None, n_boot: int = 10_000, seed: int = 0, **options):
    """The CRS report of a results folder (see `crsbench.scoring.score_records` for the options)."""
    from crsbench.scoring import score_records

    frame = load_records(results)
    return score_records(frame, reference=reference or suite_reference(results), n_boot=n_boot, seed=seed, **options)


def write_scores(report, results: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    from crsbench.scoring import write_score_report

    base = Path(results) if Path(results).is_dir() else Path(results).parent
    return write_score_report(report, Path(out_dir) if out_dir else base / "scores")


def data_dir() -> Path | None:
    value = os.environ.get("CRSBENCH_DATA")
    return Path(value) if value else None
