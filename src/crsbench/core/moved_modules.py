"""Old import paths of modules that moved into stage packages, kept working for one release.

`import crsbench.store` returns the very module `crsbench.results.store` (so a monkeypatch through
either name patches both) and warns once that the path is going.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old flat module -> its home now. Old names that are now packages (metrics, crs, probe, plan, embed,
# scoring, cli) are not here: each package's face forwards their names itself.
MOVED = {
    "atomic": "core.atomic", "hashing": "core.hashing", "timestamps": "core.timestamps",
    "vocabulary": "core.vocabulary", "safe_yaml": "core.safe_yaml", "printable": "core.printable",
    "modalities": "core.modalities", "progress": "core.progress",
    "weighted_metrics": "metrics.weighted", "axis_math": "crs.axis_math", "probe_engine": "probe.solver",
    "pixels": "encoders.pixels",
    "suite": "plan.suite", "conditions": "plan.conditions", "robustness": "plan.perturbation_choice",
    "subsets": "plan.subsets",
    "records": "results.records", "store": "results.store", "predictions": "results.predictions",
    "grid": "results.coverage", "extraction": "embed.extraction",
    "axes": "scoring.axes", "stats": "scoring.statistics", "bootstrap": "scoring.case_bootstrap",
    "simulation": "scoring.simulation",
    "resolve": "run.resolve", "shift": "run.shift", "keys": "run.record_keys", "task_data": "run.task_data",
    "pipeline": "run.evaluate", "class_support": "run.class_support", "datacheck": "run.datacheck",
    "provenance": "run.provenance", "output_lock": "run.output_lock", "embedding_jobs": "run.embedding_jobs",
    "runner": "run.runner",
    "cli_console": "cli.console", "cli_datasets": "cli.datasets", "cli_encoders": "cli.encoders",
    "cli_errors": "cli.errors", "cli_select": "cli.select",
}
PREFIX = "crsbench."


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves `crsbench.<old>` to the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(PREFIX) and fullname[len(PREFIX):] in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = PREFIX + MOVED[spec.name[len(PREFIX):]]
        warnings.warn(f"{spec.name} is now {new}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:
        """The module ran already, under its new name."""


def install() -> None:
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
