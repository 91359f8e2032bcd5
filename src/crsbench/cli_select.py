"""`crsbench select DATA --encoders a,b,c`: a team's own cohort to a recommendation.

Steps, each printed: understand DATA (task type and class counts), check it, measure what each
encoder costs here, fit the protocol to the budget, write the ordinary suite file beside the results,
run it (a rerun with the same arguments resumes it), score, recommend, write the report.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from crsbench import api, report
from crsbench.cli_console import console, wide_console
from crsbench.cli_errors import handled
from crsbench.errors import DataError
from crsbench.progress import RichProgress
from crsbench.selection import advice
from crsbench.selection.budget import (
    SEVERITY_LEVELS,
    ImageCounts,
    cached_share,
    perturbation_order,
    plan_budget,
)
from crsbench.selection.cohort_checks import usable_fractions
from crsbench.selection.compose import SELECT_C_GRID, SUITE_FILE, TASK_NAME, compose_suite, parse_encoders, suite_text
from crsbench.selection.duration import format_duration, parse_duration
from crsbench.selection.source import open_cohort
from crsbench.selection.validate import check_cohort
from crsbench.suite import DEFAULT_FRACTIONS, EncoderChoice, load_suite, parse_suite

ARGUMENTS_FILE = "select.json"  # the arguments the suite was planned from: same arguments, same suite
SELECT_N_BOOT = 2_000
# Scoring time, estimated from the size of the run (fitted on CPU runs; a rough reserve, not a promise).
SCORING_BASE_S = 8.0
SCORING_PER_RECORD_CASE_S = 4e-6


def _say(line: str, style: str | None = None) -> None:
    console.print(Text(line, style=style) if style else Text(line))


def _labels(entries: list[dict]) -> list[str]:
    try:
        return [EncoderChoice.model_validate(e).label for e in entries]
    except Exception as error:  # pydantic names the problem; one line for the user
        message = getattr(error, "errors", lambda: [{"msg": str(error)}])()[0]["msg"]
        raise DataError(f"--encoders: {message.removeprefix('Value error, ')}") from None


def _fractions(text: Optional[str]) -> Optional[list[float]]:
    if text is None:
        return None
    try:
        values = sorted({float(v) for v in text.split(",") if v.strip()} | {1.0})
    except ValueError:
        raise DataError(f"--fractions: {text!r} is not a comma-separated list of numbers") from None
    if any(not 0 < f <= 1 for f in values):
        raise DataError(f"--fractions: every fraction must be in (0, 1], got {text!r}")
    return values


def _scoring_estimate(protocol, n_encoders: int, counts: ImageCounts) -> float:
    conditions = 1 + len(protocol.perturbations) * len(protocol.severities) + (1 if counts.shift else 0)
    records = n_encoders * protocol.seeds * (len(protocol.fractions) - 1 + conditions)
    return SCORING_BASE_S + SCORING_PER_RECORD_CASE_S * records * counts.test * SELECT_N_BOOT / 100


def _plan(entries, labels, dataset, shift_dataset, counts_by_split, budget_s, fractions, seeds, modality,
          started: float, cache_root: Path):
    """Measure every encoder on this cohort, look up which of its embeddings the cache at `cache_root`
    holds, then the plan that fits what is left of the budget (the time spent so far, since `started`, is
    part of it). Returns the plan, the measured costs and a line on the cached share."""
    from crsbench.perturbations import MODALITY_SETS
    from crsbench.probe import ProbeConfig
    from crsbench.selection.cached import cached_embeddings, open_existing_cache
    from crsbench.selection.measure import measure_encoder

    train = dataset.split("train")
    probe = ProbeConfig(tuple(SELECT_C_GRID))
    names = MODALITY_SETS[modality]
    built, build_s = {}, {}
    for entry, label in zip(entries, labels):
        build_started = time.perf_counter()
        built[label] = EncoderChoice.model_validate(entry).build()
        build_s[label] = time.perf_counter() - build_started
    cached = cached_embeddings(open_existing_cache(cache_root), built, dataset, shift_dataset, names,
                               SEVERITY_LEVELS[0])
    every_condition = {(name, severity) for name in names for severity in SEVERITY_LEVELS[0]}
    costs = {}
    for label, encoder in built.items():
        # the perturbed cost only prices perturbed test sets to encode: none left, nothing to time
        timed = perturbation_order(names) if not every_condition <= cached[label].perturbed else ()
        cost, width = measure_encoder(encoder, train, dataset.meta.task_type, dataset.meta.n_classes, probe, timed,
                                      build_seconds=build_s[label])
        costs[label] = cost
        perturbed = (f"{cost.per_perturbed_image(0.0) * 1000:.1f} ms perturbed" if timed
                     else "perturbed not timed: all cached")
        _say(f"measured {label}: {cost.seconds_per_image * 1000:.1f} ms per image ({perturbed}), {width}-d vectors, "
             f"probe fit {cost.fit_seconds:.2f} s on the whole training split ({cost.fit_fixed_seconds:.2f} s of it "
             f"at any size), model setup {cost.setup_seconds:.1f} s")
    counts = ImageCounts(*(len(dataset.split(s)) for s in ("train", "val", "test")),
                         shift=len(shift_dataset.split("test")) if shift_dataset is not None else 0)
    train_counts = counts_by_split["train"] if dataset.meta.task_type != "multi_label" else []
    ladder = fractions or usable_fractions(train_counts, DEFAULT_FRACTIONS)
    if not fractions and len(ladder) < len(DEFAULT_FRACTIONS):
        left = [f"{f:g}" for f in DEFAULT_FRACTIONS if f not in ladder]
        _say(f"label fractions {', '.join(left)} left out: a class would keep fewer than 2 training images")
    left_s = max(budget_s - (time.perf_counter() - started), 1.0)
    has_shift = shift_dataset is not None
    probe_plan = plan_budget(costs, counts, left_s, names, ladder, has_shift=has_shift, seeds=seeds,
                             scoring_seconds=0.0, cached=cached)
    scoring = _scoring_estimate(probe_plan.protocol, len(labels), counts)
    plan = plan_budget(costs, counts, left_s, names, ladder, has_shift=has_shift, seeds=seeds,
                       scoring_seconds=scoring, cached=cached)
    return plan, costs, f"embeddings cached: {cached_share(plan.protocol, labels, cached, has_shift).describe()}"


@dataclass(frozen=True)
class Estimate:
    """What the plan expects each part of a selection to take, in seconds, to set beside what it took."""

    spent_s: float  # reading, checking and measuring, before the plan
    run_s: float  # embeddings and probes
    scoring_s: float  # scoring and the report

    @property
    def total_s(self) -> float:
        return self.spent_s + self.run_s + self.scoring_s


def _estimate(plan, spent_s: float) -> Estimate:
    run_s = sum(v for k, v in plan.per_encoder_s.items() if k != "scoring")
    return Estimate(spent_s, run_s, plan.per_encoder_s.get("scoring", 0.0))


def _print_plan(plan, estimate: Estimate, budget_s: float, share: str) -> None:
    fit = "" if plan.fits else " (over budget even at the smallest protocol: running it anyway)"
    _say(f"plan: {plan.protocol.describe()}; estimated {format_duration(estimate.total_s)} of a "
         f"{format_duration(budget_s)} budget ({format_duration(estimate.spent_s)} spent measuring, "
         f"{format_duration(estimate.run_s)} to run of which {format_duration(plan.encoding_s)} encoding, "
         f"{format_duration(estimate.scoring_s)} to score){fit}")
    _say(f"  {share}")
    for cut in plan.cuts:
        _say(f"  cut to fit the budget: {cut}")
    if not plan.cuts:
        _say("  nothing cut: the full protocol fits")


class _NoRepeats(RichProgress):
    """The run's messages, less those select printed already (the class counts, shown before the plan)."""

    def __init__(self, said: set[str]):
        super().__init__()
        self.said = said

    def log(self, message: str) -> None:
        if message not in self.said:
            super().log(message)


def _reusable(out: Path, arguments: dict) -> bool:
    try:
        return (out / SUITE_FILE).is_file() and json.loads((out / ARGUMENTS_FILE).read_text()) == arguments
    except (OSError, ValueError):
        return False


def select(
    data: Path = typer.Argument(..., help="A folder with a labels CSV (the `folder` layout), or an .npz."),
    encoders: str = typer.Option(..., "--encoders", "-e", help="Comma-separated: registry names or module:factory; "
                                 "options as name@key=value. The first is the reference."),
    modality: Optional[str] = typer.Option(None, "--modality", "-m", help="xray, fundus, dermoscopy or other: "
                                           "which perturbations are plausible (default: other, or MedMNIST's)."),
    label_column: Optional[str] = typer.Option(None, "--label-column", help="Label column (several, comma-separated: "
                                               "multi-label). Default: 'label', or the only other column."),
    image_column: str = typer.Option("image", "--image-column", help="Column naming each image file."),
    group_column: Optional[str] = typer.Option(None, "--group-column", help="Patient (or lesion) id column: "
                                               "splits and bootstrap keep a patient's images together."),
    ordinal: bool = typer.Option(False, "--ordinal", help="The labels are ordered whole-number grades."),
    shift: Optional[Path] = typer.Option(None, "--shift", help="A second site's data (folder or .npz), tested only."),
    budget: str = typer.Option("30m", "--budget", help="Time for the whole selection: 90s, 30m, 2h, 1h30m."),
    fractions: Optional[str] = typer.Option(None, "--fractions", help="Label fractions, e.g. 0.1,0.5,1 "
                                            "(default: chosen to fit the budget)."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=3, help="Seeds (default: chosen, 3 to 5)."),
    output: Path = typer.Option(Path("crsbench-select"), "--output", "-o",
                                help="Folder for the suite, results, report."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache folder."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the task and the plan, write the suite, run nothing."),
) -> None:
    """Which of these encoders for this cohort? Infers the task, fits the protocol to the budget, runs it,
    and recommends, with the CRS table and the report."""
    started = time.perf_counter()
    budget_s = parse_duration(budget)
    requested = _fractions(fractions)
    entries = parse_encoders(encoders)
    labels = _labels(entries)
    cohort = open_cohort(data, label_column=label_column, image_column=image_column, group_column=group_column,
                         ordinal=ordinal, modality=modality)
    _say(f"data: {cohort.described}")
    _say(cohort.facts.summary())
    if cohort.facts.hint:
        _say(f"  note: {cohort.facts.hint}", "dim")
    shift_cohort = None
    if shift is not None:
        shift_cohort = open_cohort(shift, label_column=label_column, image_column=image_column,
                                   group_column=group_column, ordinal=ordinal, modality=modality, role="shift",
                                   name=f"{cohort.options.get('name', 'cohort')}-shift")
        _say(f"shift set: {shift_cohort.described}")

    from crsbench.class_support import counts_line
    from crsbench.datasets.registry import get_dataset

    dataset = get_dataset(**cohort.options)
    counts = check_cohort(cohort, dataset, requested)
    counts_said = counts_line(TASK_NAME, dataset, counts)
    _say(counts_said)
    shift_dataset = get_dataset(**shift_cohort.options) if shift_cohort is not None else None
    if shift_dataset is not None:
        from crsbench.selection.validate import check_images_readable

        check_images_readable(shift_cohort, shift_dataset)
    modality_used = dataset.meta.modality
    _say(f"reference: {labels[0]}, the first encoder listed (the CRS verdict does not depend on it; "
         "scores are differences to it)")

    out = output
    out.mkdir(parents=True, exist_ok=True)
    arguments = {"data": str(Path(data).resolve()), "encoders": entries, "modality": modality_used,
                 "label_column": label_column, "image_column": image_column, "group_column": group_column,
                 "ordinal": ordinal, "shift": str(Path(shift).resolve()) if shift else None, "budget_s": budget_s,
                 "fractions": requested, "seeds": seeds}
    suite_file = out / SUITE_FILE
    estimate, costs = None, {}  # none when resuming: the plan was made by an earlier call
    if _reusable(out, arguments):
        suite = load_suite(suite_file)
        _say(f"resuming {suite_file}: planned before with these arguments ({len(suite.seeds)} seeds, "
             f"fractions {', '.join(f'{f:g}' for f in suite.fractions)})")
    else:
        from crsbench.embed import default_cache_dir

        # the cache the run will use: the same precedence as the run's own
        cache_root = cache_dir if cache_dir is not None else default_cache_dir()
        plan, costs, share = _plan(entries, labels, dataset, shift_dataset, counts, budget_s, requested, seeds,
                                   modality_used, started, cache_root)
        estimate = _estimate(plan, time.perf_counter() - started)
        _print_plan(plan, estimate, budget_s, share)
        mapping = compose_suite(f"select-{cohort.options.get('name', 'cohort')}", entries, cohort.options,
                                plan.protocol, shift=shift_cohort.options if shift_cohort else None,
                                reference=labels[0], cache=str(cache_dir.resolve()) if cache_dir else None)
        header = (f"Written by `crsbench select` for {data}; run it again with `crsbench run {suite_file}`.\n"
                  f"Plan: {plan.protocol.describe()}.\n"
                  + "".join(f"Cut to fit a {format_duration(budget_s)} budget: {c}.\n" for c in plan.cuts))
        parse_suite(mapping, source=str(suite_file), base=out.resolve())  # a bad mapping fails before it is written
        suite_file.write_text(suite_text(mapping, header))
        (out / ARGUMENTS_FILE).write_text(json.dumps(arguments, indent=2))
        suite = load_suite(suite_file)
    _say(f"suite written to {suite_file} (an ordinary suite: `crsbench run` resumes it)")
    if dry_run:
        _say("dry run: nothing run")
        return

    run_started = time.perf_counter()
    summary = api.run(suite, progress=_NoRepeats({counts_said}), cache_dir=cache_dir)
    run_s = time.perf_counter() - run_started
    console.print(report.run_summary_line(summary, time.perf_counter() - started))
    suite_hash = suite.suite_hash()
    scored = api.score(out, reference=labels[0], n_boot=SELECT_N_BOOT, suite_hash=suite_hash)
    evidence = _evidence(out, scored, suite, suite_hash, cohort, dataset,
                         {name: cost.seconds_per_image for name, cost in costs.items()})
    _say(f"Leading tier: {', '.join(scored.leading_tier) or '-'}", "bold")
    for sentence in advice.recommendation(scored, evidence):
        _say(sentence)

    wide_console().print(report.scores_table(scored))
    api.write_scores(scored, out)
    written = api.write_report(out, scored=scored, suite_hash=suite_hash)
    _say(f"report: {written.html}")
    _say(_timing_line(time.perf_counter() - started, run_s, estimate))


def _timing_line(total_s: float, run_s: float, estimate: Estimate | None) -> str:
    """The wall time, beside the plan's estimate of it when this call made the plan."""
    line = f"select finished in {format_duration(total_s)} ({total_s:.0f} s)"
    if estimate is None:
        return line
    rest_s = total_s - run_s - estimate.spent_s
    return (f"{line}; estimated {format_duration(estimate.total_s)} ({estimate.total_s:.0f} s): "
            f"measuring {format_duration(estimate.spent_s)}, run {format_duration(run_s)} against "
            f"{format_duration(estimate.run_s)} estimated, scoring and report {format_duration(rest_s)} against "
            f"{format_duration(estimate.scoring_s)}")


def _evidence(out: Path, scored, suite, suite_hash: str, cohort, dataset,
              seconds_per_image: dict[str, float]) -> advice.Evidence:
    """The test-set size, the measured cost per image and, when the tier holds several encoders, the
    seed-only standard errors."""
    import numpy as np

    test = dataset.split("test")
    n_test = len(np.unique(test.groups)) if cohort.group_column else len(test)
    seed_se = None
    if len(scored.leading_tier) > 1:
        seed_only = api.score(out, reference=scored.reference, n_boot=SELECT_N_BOOT, suite_hash=suite_hash,
                              resample="seeds", n_weight_draws=0)
        seed_se = advice.standard_errors(seed_only.leading_tier_table, float(seed_only.settings.get("level", 0.95)))
    return advice.Evidence(n_test=n_test, n_seeds=len(suite.seeds), unit=cohort.unit, seed_se=seed_se,
                           seconds_per_image=seconds_per_image or None, n_test_images=len(test))


select = handled(select)
