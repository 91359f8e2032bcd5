"""The Python API: the same operations as the CLI, returning values instead of printing."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from pydantic import ValidationError

from crsbench.results import records as record_schema
from crsbench.crs.definition import CRSConfig
from crsbench.core.progress import Progress
from crsbench.errors import CRSBenchError, SuiteError
from crsbench.executors import Executor
from crsbench.results.coverage import GridStatus
from crsbench.results.record_set import Records
from crsbench.results.store import load_records
from crsbench.plan.suite import ExecutorSpec, Suite, load_suite, parse_suite
from crsbench.scoring.inputs import ScoringInputs, inputs_key, score_inputs

if TYPE_CHECKING:  # annotations only
    from crsbench.run.runner import RunSummary

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


def check_encoders(suite: Suite | str | Path) -> list[str]:
    """Build every encoder of a suite as a run would (no weights are read: models load on first use), so
    an unknown encoder or option fails here, naming the suite field. Returns the labels."""
    from crsbench.run.resolve import build_encoders

    return list(build_encoders(open_suite(suite)))


def check_data(suite: Suite | str | Path) -> list:
    """Resolve every dataset of a suite, stat its files and decode a sample (`crsbench validate --data`)."""
    from crsbench.run.datacheck import check_suite_data

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


def with_executor(suite: Suite, kind: str | None = None, address: str | None = None) -> Suite:
    """The suite run by another executor (its hash and records do not change); None keeps the suite's."""
    if kind is None and address is None:
        return suite
    chosen = {**suite.executor.model_dump(exclude_unset=True), **({"kind": kind} if kind else {})}
    if address is not None:
        chosen["address"] = address
    elif kind and kind != suite.executor.kind:
        chosen.pop("address", None)  # the suite's address belonged to its own executor
    try:
        spec = ExecutorSpec.model_validate(chosen)
    except ValidationError as exc:
        raise SuiteError(f"--executor: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return suite.model_copy(update={"executor": spec})


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
    from crsbench.encoders.spec import EncoderSpec
    from crsbench.plan.suite import EncoderChoice

    suite = open_suite(suite)
    added = [_choice(item, EncoderChoice, EncoderSpec) for item in encoders]
    chosen = added if replace else [*suite.encoders, *added]
    # the suite's own values as they are (not dumped and re-read), with the encoders changed
    data = {**{field: getattr(suite, field) for field in suite.model_fields_set}, "encoders": chosen}
    if replace and suite.reference is not None and suite.reference not in [c.label for c in chosen]:
        data["reference"] = None
    try:
        return Suite.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(suite)"
        raise SuiteError(f"encoders: {field}: {first['msg'].removeprefix('Value error, ')}") from None


def _choice(item, choice_model, spec_model):
    from crsbench.encoders import registry

    if isinstance(item, choice_model):
        return item
    if isinstance(item, str):
        return choice_model(name=item)
    if isinstance(item, dict):
        return choice_model.model_validate(item)
    if isinstance(item, spec_model):
        return choice_model(spec=item)
    if not registry._is_encoder(item):
        name = getattr(item, "__name__", None) or (type(item).__name__ if registry._is_module(item) else None)
        if not name or not callable(item) or name == "<lambda>":
            raise SuiteError(f"encoders: cannot tell what to call {item!r}: give it a name with "
                             "crsbench.api.encoder('my-name', fn)")
        item = encoder(name, item)
    name = item.spec.name
    if name in registry.encoder_names() and not registry.is_process_local(name):
        raise SuiteError(f"encoders: {name!r} is a catalogue encoder's name; name yours differently")
    registry.register_encoder(item, replace=True)
    return choice_model(name=name)


def process_local_encoders(suite: Suite) -> list[str]:
    """The suite's encoders that exist only in this Python process (register_encoder(), api.run(encoders=))."""
    from crsbench.encoders.registry import is_process_local

    return [c.label for c in suite.encoders if c.spec is None and c.name and is_process_local(c.name)]


def check_executor_reach(suite: Suite, executor: Executor | None = None) -> None:
    """An encoder of this process cannot be built by another: refused in one line before any work."""
    kind = executor.name if executor is not None else suite.executor.kind
    local = process_local_encoders(suite)
    if kind != "local" and local:
        from crsbench.errors import EncoderError

        raise EncoderError(
            f"encoder {local[0]!r} exists only in this Python process, and the {kind} executor builds encoders "
            "in other processes: run it with executor local, or make it importable there as module:factory "
            "(docs/encoders.md)")


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
    Its `frame`, `grid`, `seed_means()` and `headline()` are what `results` and `score` show."""
    if isinstance(results, pd.DataFrame):
        return Records.view(results, None, suite_hash, partial)
    return Records.load(results, suite_hash, partial)


def grid_view(results: str | Path | pd.DataFrame, suite_hash: str | None = None,
              partial: bool = False) -> tuple[pd.DataFrame, GridStatus]:
    """`load_results` as (records frame, grid status)."""
    view = load_results(results, suite_hash, partial)
    return view.frame, view.grid


def aggregate(results: str | Path | pd.DataFrame, suite_hash: str | None = None, partial: bool = False) -> pd.DataFrame:
    """Mean, std and n over seeds (records.aggregate_seeds); records of several grids are refused, and
    so is an incomplete grid unless `partial` (see grid_view)."""
    return load_results(results, suite_hash, partial).seed_means()


def export_results(
    results: str | Path, out_dir: str | Path | None = None, formats=("parquet", "csv"), suite_hash: str | None = None
) -> list[Path]:
    from crsbench.report import export_records

    target = Path(out_dir) if out_dir else (Path(results) if Path(results).is_dir() else Path(results).parent)
    return export_records(load_records(results), target, formats, suite_hash)


def summary_table(results: str | Path | pd.DataFrame, suite_hash: str | None = None) -> pd.DataFrame:
    """The seed aggregate at clean test and 100% labels: what `crsbench results` shows."""
    return record_schema.clean_full_label(aggregate(results, suite_hash))


def _stored_suites(results: str | Path, suite_hash: str | None = None) -> list[dict]:
    """The suite mappings that wrote to these results (or the suite `suite_hash`), latest first."""
    import yaml

    from crsbench.results.store import ResultsStore

    path = Path(results)
    path = path / "results.sqlite" if path.is_dir() else path
    if not path.exists():
        return []
    with ResultsStore(path, read_only=True) as store:
        runs = store.runs()
    if suite_hash:
        runs = runs[runs["suite_hash"].astype(str).str.startswith(suite_hash)]
    return [yaml.safe_load(text) or {} for text in reversed(runs["suite_yaml"].dropna().tolist())]


def suite_reference(results: str | Path, suite_hash: str | None = None) -> str | None:
    """The reference named by the latest suite (or the suite `suite_hash`) that wrote to these results, if any."""
    return next((s["reference"] for s in _stored_suites(results, suite_hash) if s.get("reference")), None)


def _encoder_label(entry) -> str | None:
    from crsbench.plan.suite import EncoderChoice

    entry = {"name": entry} if isinstance(entry, str) else entry
    try:
        return EncoderChoice.model_validate(entry).label
    except Exception:  # an encoder no longer registered: fall back to what the suite wrote
        return entry.get("label") or entry.get("name")


def suite_score_settings(results: str | Path, suite_hash: str | None = None) -> tuple[dict, list[str]]:
    """(the `crs:` block, the labels marked `baseline: true`) of the latest suite that wrote these results."""
    suites = _stored_suites(results, suite_hash)
    if not suites:
        return {}, []
    latest = suites[0]
    baselines = [_encoder_label(e) for e in latest.get("encoders", []) if isinstance(e, dict) and e.get("baseline")]
    return dict(latest.get("crs") or {}), [b for b in baselines if b]


def suite_class_names(results: str | Path, suite_hash: str | None = None) -> dict[str, tuple[str, ...]]:
    """task -> its classes' names, where the latest suite that wrote these results declares them (from the
    dataset's options alone, no data read); tasks whose kind reads them from the data are left out."""
    from crsbench.datasets.registry import info_for

    suites = _stored_suites(results, suite_hash)
    out: dict[str, tuple[str, ...]] = {}
    for task in (suites[0].get("tasks") or []) if suites else []:
        dataset = task.get("dataset") if isinstance(task, dict) else None
        if not isinstance(dataset, dict) or "kind" not in dataset or "name" not in task:
            continue
        try:  # a suite from another version or machine may no longer validate: its names are optional
            names = info_for(dataset["kind"], {k: v for k, v in dataset.items() if k != "kind"}).class_names
        except (CRSBenchError, ValueError):
            names = None
        if names:
            out[str(task["name"])] = tuple(str(n) for n in names)
    return out


def scoring_inputs(
    results: str | Path,
    reference: str | None = None,
    config: CRSConfig | None = None,
    *,
    suite_hash: str | None = None,
    partial: bool = False,
    class_names: dict[str, tuple[str, ...]] | None = None,
    **settings,
) -> ScoringInputs:
    """The first half of `score`: read everything a score of these results needs, once. `config` is a
    crs.CRSConfig; without it, the suite's `crs:` block with CRSConfig fields given by name (`n_boot=2000`)
    applied over it. The suite's baselines are left out of the rank statistics. An incomplete grid is
    refused unless `partial`. `class_names` (task -> names): by default the suite's declared names."""
    from crsbench.results.predictions import load_predictions

    if config is not None and settings:
        raise ValueError(f"give either config or settings by name, not both ({sorted(settings)})")
    suite_crs, baselines = suite_score_settings(results, suite_hash)
    config = config or CRSConfig(**{**suite_crs, **settings})
    view = load_results(results, suite_hash, partial)
    stored = load_predictions(results) if config.resample == "cases" else None
    names = {**suite_class_names(results, suite_hash), **(class_names or {})}
    reference = reference or suite_reference(results, suite_hash)
    key = inputs_key(view.frame, stored, reference, baselines, names, config, view.refits)
    return ScoringInputs(view, stored, reference, tuple(baselines), names, config, key, source=Path(results))


def score(results: str | Path, reference: str | None = None, config: CRSConfig | None = None, **options):
    """The CRS report of a results folder: `scoring_inputs` with these arguments (`suite_hash`, `partial`,
    `class_names`, and CRS settings by name), then `score_inputs`."""
    return score_inputs(scoring_inputs(results, reference, config, **options))


def scored_or_score(results: str | Path | ScoringInputs, *, suite_hash: str | None = None, partial: bool = False,
                    **settings):
    """(value, reused): the value `score` stored for exactly these inputs (report.scored_files), else a fresh
    score, then stored. `results`: a results folder (read as `scoring_inputs` reads it), or inputs read already."""
    from crsbench.report.scored_files import older_value_note, read_scored, write_scored

    inputs = results if isinstance(results, ScoringInputs) else scoring_inputs(
        results, suite_hash=suite_hash, partial=partial, **settings)
    base = _results_folder(inputs.source)
    stored = read_scored(base, inputs.key)
    if stored is not None:
        return stored, True
    note = older_value_note(base)
    if note:
        inputs = dataclasses.replace(inputs, context=dataclasses.replace(
            inputs.context, lead_notes=(*inputs.context.lead_notes, note)))
    scored = score_inputs(inputs)
    try:
        write_scored(scored, base)
    except OSError:  # results one may read but not write (a colleague's, a read-only mount): no stored value
        pass
    return scored, False


def _results_folder(results: str | Path) -> Path:
    return Path(results) if Path(results).is_dir() else Path(results).parent


def write_scores(report, results: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    from crsbench.report import write_score_report
    from crsbench.report.scored_files import write_scored

    base = _results_folder(results)
    written = write_score_report(report, Path(out_dir) if out_dir else base / "scores")
    if report.inputs_key:  # kept for `report`, which reads it instead of rescoring
        write_scored(report, base)
    return written


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
    from crsbench.report.page import write_report as write_pages

    inputs = inputs or scoring_inputs(results, suite_hash=suite_hash, partial=partial, **settings)
    if scored is None:
        scored, _ = scored_or_score(inputs)
    return write_pages(scored, inputs.records.frame, Path(out_dir) if out_dir else _results_folder(results) / "report",
                       results=results, predictions=inputs.predictions, seconds_per_image=seconds_per_image)


def bundle(results: str | Path, out: str | Path, suite_hash: str | None = None):
    """Write a portable results bundle of a results folder (docs/bundles.md); returns (path, bundle id)."""
    from crsbench.bundles import from_results, write_bundle

    return write_bundle(from_results(results, suite_hash), out)


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
    fields by name, as a dict). Reads and checks the cohort, measures each encoder, fits the protocol to
    the budget and writes the suite (prepare_selection), then runs it (a rerun with the same arguments
    resumes), scores, advises and writes the scores and the report. The budget bounds the whole call:
    where even the smallest protocol cannot fit it, nothing runs and selection.workflow.OverBudget names
    the smallest budget that would work, unless `request.over_budget`. Every line for the user goes through
    `say(line, style=None)` (style "detail": a line for whoever asked for detail); returns a
    selection.workflow.Selection holding each step's value."""
    import time

    from crsbench.selection.workflow import SELECT_N_BOOT, Selection, SelectionRequest, prepare_selection

    request = request if isinstance(request, SelectionRequest) else SelectionRequest(**request)
    say = say or (lambda line, style=None: None)
    prepared = prepare_selection(request, say)
    if dry_run:
        say("dry run: nothing run")
        return Selection(prepared)
    from crsbench.core.progress import SilentProgress
    from crsbench.selection import advice

    progress = progress or SilentProgress()
    out, reference = Path(request.output), prepared.reference
    run_started = time.perf_counter()
    summary = run(prepared.suite, progress=progress, cache_dir=request.cache_dir)
    run_s = time.perf_counter() - run_started
    suite_hash = prepared.suite.suite_hash()
    with progress.task(f"score ({SELECT_N_BOOT} bootstrap draws)", total=None):  # minutes a log would not hear of
        names = {task.name: tuple(prepared.dataset.meta.class_names) for task in prepared.suite.tasks}
        inputs = scoring_inputs(out, reference, n_boot=SELECT_N_BOOT, suite_hash=suite_hash, class_names=names)
        scored = score_inputs(inputs)
        evidence = _selection_evidence(inputs, scored, prepared)
        sentences = tuple(advice.recommendation(scored, evidence))
        scores = write_scores(scored, out)
    with progress.task("report", total=None):
        written = write_report(out, scored=scored, inputs=inputs, seconds_per_image=prepared.seconds_per_image or None)
    return Selection(prepared, summary, scored, sentences, scores, written.html, run_s,
                     time.perf_counter() - prepared.started)


def _selection_evidence(inputs: ScoringInputs, scored, prepared):
    """The test-set size, the measured cost per image and, when the tier holds several encoders, the
    seed-only standard errors."""
    import numpy as np

    from crsbench.selection import advice

    test = prepared.dataset.split("test")
    n_test = len(np.unique(test.groups)) if prepared.cohort.group_column else len(test)
    seed_se = None
    if len(scored.tier.members) > 1:  # the same records, resampled over seeds alone
        seed_only = score_inputs(dataclasses.replace(inputs, reference=scored.reference)
                                 .with_settings(resample="seeds", n_weight_draws=0))
        seed_se = advice.standard_errors(seed_only.tier.table)
    return advice.Evidence(n_test=n_test, n_seeds=len(prepared.suite.seeds), unit=prepared.cohort.unit,
                           seed_se=seed_se, seconds_per_image=prepared.seconds_per_image or None,
                           n_test_images=len(test), class_names=tuple(prepared.dataset.meta.class_names))


def __getattr__(name: str):
    """`api.RunSummary` and `api.SuiteRun`, imported only when asked for: the run brings torch with it."""
    if name in ("RunSummary", "SuiteRun"):
        from crsbench.run import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
