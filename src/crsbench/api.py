"""The Python API: the same operations as the CLI, returning values instead of printing. Each is one
short delegation to the stage that does the work."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.results import records as record_schema
from crsbench.crs.definition import CRSConfig
from crsbench.core.progress import Progress
from crsbench.executors import Executor
from crsbench.results.record_set import Records
from crsbench.results.store import load_records
from crsbench.results import stored_suites
from crsbench.plan import builtin_suites, suite_edits
from crsbench.plan.builtin_suites import open_suite
from crsbench.plan.suite import Suite, load_suite  # noqa: F401  (api.load_suite: docs/encoders.md)
from crsbench.scoring.inputs import ScoringInputs, score_inputs

if TYPE_CHECKING:  # annotations only
    from crsbench.run.runner import RunSummary

def check_encoders(suite: Suite | str | Path) -> list[str]:
    """Build every encoder of a suite as a run would (no weights are read: models load on first use), so
    an unknown encoder or option fails here, naming the suite field. Returns the labels."""
    from crsbench.run.resolve import build_encoders

    return list(build_encoders(open_suite(suite)))


def check_data(suite: Suite | str | Path) -> list:
    """Resolve every dataset of a suite, stat its files and decode a sample (`crsbench validate --data`)."""
    from crsbench.run.datacheck import check_suite_data

    return check_suite_data(open_suite(suite))


def demo_suite(quick: bool = False, output: str | Path | None = None, use_medmnist: bool = True) -> Suite:
    """The demo suite (`quick`: demo-quick), on local MedMNIST files where they are on disk and verify."""
    return builtin_suites.demo_suite(quick, output, use_medmnist)


def with_executor(suite: Suite, kind: str | None = None, address: str | None = None) -> Suite:
    """The suite run by another executor (its hash and records do not change); None keeps the suite's."""
    return suite_edits.with_executor(suite, kind, address)


def encoder(name: str, fn, **preprocessing):
    """Your own encoder from a name and an embed function or torch module, with the defaults of
    crsbench.encoders.byo.encoder (224 px centre square; a module gets ImageNet mean/std)."""
    from crsbench.encoders.byo import encoder as make

    return make(name, fn, **preprocessing)


def with_encoders(suite: Suite | str | Path, encoders, *, replace: bool = False) -> Suite:
    """The suite with more encoders (or only these, with `replace`). Each item is a registry name or
    `module:factory`, a suite entry mapping, an EncoderSpec, or an object of this process: an encoder
    (`spec` and `encode`), a torch module or a named function (as `encoder(fn.__name__, fn)`). Objects
    are registered for this process under their spec's name, replacing an earlier registration of
    theirs (a notebook cell run again), never a catalogue encoder."""
    return suite_edits.with_encoders(open_suite(suite), encoders, replace=replace)


def process_local_encoders(suite: Suite) -> list[str]:
    """The suite's encoders that exist only in this Python process (register_encoder(), api.run(encoders=))."""
    from crsbench.run.executor_reach import process_local_encoders as local

    return local(suite)


def check_executor_reach(suite: Suite, executor: Executor | None = None) -> None:
    """An encoder of this process cannot be built by another: refused in one line before any work."""
    from crsbench.run.executor_reach import check_executor_reach as check

    check(suite, executor)


def run(suite: Suite | str | Path, progress: Progress | None = None, cache_dir: str | Path | None = None,
        wait_s: float = 0.0, executor: Executor | None = None, encoders=None) -> "RunSummary":
    """Run a suite; `wait_s`: how long to wait for another run holding the same output; `executor` (an
    executors.Executor) overrides the suite's `executor:` block; `encoders`: more encoders for this run,
    as `with_encoders` takes them (torch modules and functions of this process included)."""
    from crsbench.run.runner import SuiteRun  # torch and the encoders load only for a run

    suite = open_suite(suite) if encoders is None else with_encoders(suite, encoders)
    check_executor_reach(suite, executor)
    return SuiteRun(suite, progress=progress, cache_dir=cache_dir, wait_s=wait_s, executor=executor).run()


def records(results: str | Path, suite_hash: str | None = None) -> pd.DataFrame:
    """The run records of a results folder (one suite's, with `suite_hash`)."""
    frame = load_records(results)
    return record_schema.select_suite(frame, suite_hash) if suite_hash else frame


def predictions(results: str | Path):
    """The per-case predictions of a results folder (crsbench.results.predictions.Predictions): an index
    table by record_key, `probabilities(record_key)` (float32 [n, k]), `case_set(test_set)` (case
    ids, cluster ids, labels) and `table(record_key)` (one pandas table). docs/records.md."""
    from crsbench.errors import DataError
    from crsbench.results.predictions import load_predictions

    stored = load_predictions(results)
    if stored is None:
        raise DataError(f"{results}: no per-case predictions stored (results written before they were kept)")
    return stored


def load_results(results: str | Path | pd.DataFrame, suite_hash: str | None = None, partial: bool = False) -> Records:
    """The records of a results folder as one validated value (crsbench.results.record_set.Records): one
    suite's (`suite_hash`), each encoder's newest version, checked against the grid the suite asked for
    (an incomplete grid is refused unless `partial`, which keeps the evaluations every encoder shares).
    Its `frame`, `grid`, `seed_means()` (mean, std and n over seeds) and `headline()` (those at clean test
    and 100 % labels) are what `results` and `score` show: the one way to read records as scored;
    `records` is the store's table as written, every suite and version."""
    if isinstance(results, pd.DataFrame):
        return Records.view(results, None, suite_hash, partial)
    return Records.load(results, suite_hash, partial)


def export_results(
    results: str | Path, out_dir: str | Path | None = None, formats=("parquet", "csv"), suite_hash: str | None = None
) -> list[Path]:
    from crsbench.report import export_records

    target = Path(out_dir) if out_dir else (Path(results) if Path(results).is_dir() else Path(results).parent)
    return export_records(load_records(results), target, formats, suite_hash)


def suite_reference(results: str | Path, suite_hash: str | None = None) -> str | None:
    """The reference named by the latest suite (or the suite `suite_hash`) that wrote to these results, if any."""
    return stored_suites.suite_reference(results, suite_hash)


def suite_score_settings(results: str | Path, suite_hash: str | None = None) -> tuple[dict, list[str]]:
    """(the `crs:` block, the labels marked `baseline: true`) of the latest suite that wrote these results."""
    return stored_suites.suite_score_settings(results, suite_hash)


def suite_class_names(results: str | Path, suite_hash: str | None = None) -> dict[str, tuple[str, ...]]:
    """task -> its classes' names, where the latest suite that wrote these results declares them."""
    return stored_suites.suite_class_names(results, suite_hash)


def scoring_inputs(results: str | Path, reference: str | None = None, config: CRSConfig | None = None,
                   **options) -> ScoringInputs:
    """The first half of `score`: read everything a score of these results needs, once
    (scoring.read_inputs.read_scoring_inputs: `suite_hash`, `partial`, `class_names`, and CRSConfig fields
    by name over the suite's `crs:` block, or a whole `config`)."""
    from crsbench.scoring.read_inputs import read_scoring_inputs

    return read_scoring_inputs(results, reference, config, **options)


def score(results: str | Path, reference: str | None = None, config: CRSConfig | None = None, **options):
    """The CRS report of a results folder: `scoring_inputs` with these arguments (`suite_hash`, `partial`,
    `class_names`, and CRS settings by name), then `score_inputs`."""
    return score_inputs(scoring_inputs(results, reference, config, **options))


def scored_or_score(results: str | Path | ScoringInputs, *, suite_hash: str | None = None, partial: bool = False,
                    **settings):
    """(value, reused): the value `score` stored for exactly these inputs (report.scored_files), else a fresh
    score, then stored. `results`: a results folder (read as `scoring_inputs` reads it), or inputs read already."""
    from crsbench.report.results_outputs import scored_or_score as stored_or_fresh

    inputs = results if isinstance(results, ScoringInputs) else scoring_inputs(
        results, suite_hash=suite_hash, partial=partial, **settings)
    return stored_or_fresh(inputs)


def write_scores(report, results: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    """The score tables (default folder: RESULTS/scores), and the value `report` reads instead of rescoring."""
    from crsbench.report.results_outputs import write_scores as write

    return write(report, results, out_dir)


def write_report(
    results: str | Path,
    out_dir: str | Path | None = None,
    *,
    scored=None,
    inputs: ScoringInputs | None = None,
    suite_hash: str | None = None,
    partial: bool = False,
    seconds_per_image: dict[str, float] | None = None,
    **settings,
):
    """The HTML and Markdown report of a results folder, with every figure as PNG and SVG
    (report.page.write_report). `inputs`: what `scoring_inputs` read of these results (else read here,
    with the settings by name); `scored`: a ScoreReport already computed from them; without it, the value
    `score` stored for exactly these inputs and settings, else they are scored as `score` does.
    `seconds_per_image`: measured embedding cost per encoder, for the score-against-cost figure. Default
    folder: RESULTS/report."""
    from crsbench.report.results_outputs import write_results_report

    inputs = inputs or scoring_inputs(results, suite_hash=suite_hash, partial=partial, **settings)
    return write_results_report(results, inputs, out_dir, scored=scored, seconds_per_image=seconds_per_image)


def bundle(results: str | Path, out: str | Path, suite_hash: str | None = None, with_subgroups: bool = False):
    """Write a portable results bundle of a results folder (docs/bundles.md); returns (path, bundle id).
    `with_subgroups`: with each case's subgroup attributes, which bundles leave out unless asked."""
    from crsbench.bundles import from_results, write_bundle

    return write_bundle(from_results(results, suite_hash, with_subgroups), out)


def cohort(sources, allow=()):
    """Bundles and results folders merged into one comparable cohort (bundles.compare.merge): refused with
    bundles.NotComparable naming the field that differs, unless `allow` names it."""
    from crsbench.bundles import merge, open_source

    return merge([open_source(s) for s in sources], allow)


def compare(sources, reference: str | None = None, allow=(), **settings):
    """The ScoreReport of bundles and results folders scored together; departures allowed by `allow`
    come first in its notes and in settings["departures"]. Settings by name as in `score`."""
    from crsbench.bundles import score_cohort

    return score_cohort(cohort(sources, allow), reference, **settings)


def leaderboard(sources, out_dir: str | Path, reference: str | None = None, allow=(), **settings) -> Path:
    """The leaderboard (OUT/index.html) of bundles, results folders and results repositories (folders of
    bundles) scored together; returns the page. `leaderboard_site` also says which bundles were refused."""
    return leaderboard_site(sources, out_dir, reference, allow, **settings).page


def leaderboard_site(sources, out_dir: str | Path, reference: str | None = None, allow=(), **settings):
    """The leaderboard folder and what went into it: a bundles.leaderboard.Site (page, refused, cohort).
    A repository folder's bundles that cannot be read or compared are refused, each with its reason,
    and listed on the page; the others are scored."""
    from crsbench.bundles import merge, score_cohort
    from crsbench.bundles.leaderboard import write_leaderboard
    from crsbench.bundles.repository import gather

    gathered = gather(sources, allow)
    merged = merge(gathered.bundles, allow)
    return write_leaderboard(score_cohort(merged, reference, **settings), merged, out_dir, gathered.refused)


def verify(path: str | Path, expected_id: str | None = None) -> dict:
    """Every check of a bundle (content hashes, counts, test sets, vectors, AUROCs, the id it was published
    under: a prefix is enough) and what it holds, as plain values; bundles.BundleError says why not."""
    from crsbench.bundles import read_bundle
    from crsbench.bundles.verify import summary

    return summary(read_bundle(path, expected_id=expected_id, keep_predictions=False), path)


def select(request, *, say=None, progress: Progress | None = None, dry_run: bool = False):
    """Which of these encoders for this cohort? `request` is a selection.workflow.SelectionRequest (or its
    fields by name, as a dict): selection.run_selection.select prepares, runs, scores, advises and writes
    the scores and the report; returns a selection.workflow.Selection holding each step's value."""
    from crsbench.selection.run_selection import select as run_selection

    return run_selection(request, say=say, progress=progress, dry_run=dry_run)


def __getattr__(name: str):
    """`api.RunSummary` and `api.SuiteRun`, imported only when asked for: the run brings torch with it."""
    if name in ("RunSummary", "SuiteRun"):
        from crsbench.run import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
