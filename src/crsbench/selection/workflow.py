"""`select`'s first half as a library step: a cohort and a budget in, a written suite and its plan out.

`prepare_selection` reads the cohort, checks it, measures what each encoder costs on it, fits the
protocol to the budget and writes the ordinary suite file (or resumes the one an identical earlier call
wrote). It prints nothing: every line a user should see goes through `say`, so the CLI, a notebook and
a test each decide how to show it. `api.select` runs, scores and advises on the result.

The budget is a bound on the whole selection: the time spent reading, checking and measuring counts
against it, the plan is cut to fit what is left, and where even the smallest protocol cannot fit,
`prepare_selection` stops before anything runs (`OverBudget`, naming the smallest budget that would
work) unless the request says `over_budget=True`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from crsbench.core.atomic import atomic_write
from crsbench.datasets.subgroups import parse_attributes
from crsbench.errors import DataError
from crsbench.selection.budget import SEVERITY_LEVELS, ImageCounts, cached_share, perturbation_order, plan_budget
from crsbench.selection.cohort_checks import usable_fractions
from crsbench.selection.compose import SELECT_C_GRID, SUITE_FILE, TASK_NAME, compose_suite, parse_encoders, suite_text
from crsbench.selection.duration import format_budget, format_duration, round_up_budget
from crsbench.selection.source import open_cohort
from crsbench.selection.validate import check_cohort
from crsbench.plan.suite import DEFAULT_FRACTIONS, EncoderChoice, Suite, load_suite, parse_suite

ARGUMENTS_FILE = "select.json"  # the arguments the suite was planned from: same arguments, same suite
SELECT_N_BOOT = 2_000  # the draws `api.select` scores with (its scoring time is planned for)
# Scoring time, estimated from the size of the run (fitted on CPU runs; a rough reserve, not a promise).
SCORING_BASE_S = 8.0
SCORING_PER_RECORD_CASE_S = 4e-6

Say = Callable[..., None]  # say(line, style=None)
DETAIL = "detail"  # a `say` style: a line only for whoever asked for detail (the CLI's -v)


def _silent(line: str, style: str | None = None) -> None:
    pass


@dataclass(frozen=True)
class SelectionRequest:
    """What a user asks `select` for: the cohort, the encoders (the first is the reference) and the budget."""

    data: Path
    encoders: str | Sequence[Any]  # "a,b@k=v" as on the command line, or suite encoder entries
    budget_s: float = 1800.0
    modality: Optional[str] = None
    label_column: Optional[str] = None
    image_column: str = "image"
    group_column: Optional[str] = None
    ordinal: bool = False
    shift: Optional[Path] = None
    fractions: Optional[list[float]] = None
    seeds: Optional[int] = None
    output: Path = Path("crsbench-select")
    cache_dir: Optional[Path] = None
    over_budget: bool = False  # run the smallest protocol even when it cannot fit the budget
    crs_definition: Optional[str] = None  # which CRS ranks (the suite's crs block); None: the default
    subgroup_columns: tuple[str, ...] = ()  # patient attributes scored per subgroup (datasets.subgroups specs)
    subgroup_axis: tuple[str, ...] = ()  # attributes whose worst subgroup becomes the CRS's fifth axis; () : off


def _crs_block(request: SelectionRequest) -> dict | None:
    """The suite's crs: block from the request's CRS options; None where both are left at their defaults. The
    subgroup axis may name only attributes the cohort is read with: a misspelt one would leave the axis empty."""
    read = {spec.name for spec in parse_attributes(request.subgroup_columns, "--subgroup-column")}
    unread = [a for a in request.subgroup_axis if a not in read]
    if unread:
        raise DataError(f"--subgroup-axis {unread[0]}: not an attribute this cohort is read with; give it as "
                        f"--subgroup-column too (read now: {', '.join(sorted(read)) or 'none'})")
    block = {**({"definition": request.crs_definition} if request.crs_definition else {}),
             **({"subgroup_axis": list(request.subgroup_axis)} if request.subgroup_axis else {})}
    return block or None


class OverBudget(DataError):
    """Even the smallest protocol cannot fit the budget: nothing was run."""


@dataclass(frozen=True)
class Estimate:
    """What the plan expects each part of a selection to take, in seconds, to set beside what it took."""

    spent_s: float  # reading, checking and measuring, before the plan
    run_s: float  # embeddings and probes
    scoring_s: float  # scoring and the report

    @property
    def total_s(self) -> float:
        return self.spent_s + self.run_s + self.scoring_s


@dataclass(frozen=True)
class PreparedSelection:
    """The cohort understood, checked and planned; the suite written. `plan` and `estimate` are None when an
    earlier call with the same arguments made them (the suite is resumed)."""

    request: SelectionRequest
    labels: list[str]
    cohort: Any  # selection.source.Cohort
    dataset: Any
    counts_line: str  # the class counts, already said (a run that prints them again is told so)
    suite_file: Path
    suite: Suite
    plan: Any = None
    estimate: Optional[Estimate] = None
    seconds_per_image: dict[str, float] = field(default_factory=dict)
    started: float = 0.0

    @property
    def resumed(self) -> bool:
        return self.plan is None

    @property
    def reference(self) -> str:
        return self.labels[0]


@dataclass(frozen=True)
class Selection:
    """What `api.select` did: the prepared selection, then (unless a dry run) the run's summary, the score
    report, the advice in words, the scores files and the report page, and the time each part took."""

    prepared: PreparedSelection
    summary: Any = None  # runner.RunSummary
    scored: Any = None  # scoring.ScoreReport
    advice: tuple[str, ...] = ()
    scores_files: dict = field(default_factory=dict)
    report_html: Optional[Path] = None
    run_s: float = 0.0
    total_s: float = 0.0

    @property
    def timing(self) -> str:
        return timing_line(self.total_s, self.run_s, self.prepared.estimate)


def encoder_labels(entries: list) -> list[str]:
    try:
        return [EncoderChoice.model_validate(e).label for e in entries]
    except Exception as error:  # pydantic names the problem; one line for the user
        message = getattr(error, "errors", lambda: [{"msg": str(error)}])()[0]["msg"]
        raise DataError(f"--encoders: {message.removeprefix('Value error, ')}") from None


def prepare_selection(request: SelectionRequest, say: Say = _silent) -> PreparedSelection:
    """Understand, check, measure, plan and write the suite (module docstring)."""
    from crsbench.run.class_support import counts_line
    from crsbench.datasets.registry import get_dataset
    from crsbench.embed.cache import default_cache_dir
    from crsbench.selection.validate import check_images_readable

    started = time.perf_counter()
    entries = parse_encoders(request.encoders) if isinstance(request.encoders, str) else list(request.encoders)
    labels = encoder_labels(entries)
    common = dict(label_column=request.label_column, image_column=request.image_column,
                  group_column=request.group_column, ordinal=request.ordinal, modality=request.modality)
    cohort = open_cohort(request.data, subgroup_columns=request.subgroup_columns, **common)
    _crs_block(request)  # a --subgroup-axis the cohort is not read with fails before anything is measured
    say(f"data: {cohort.described}")
    say(cohort.facts.summary())
    if cohort.facts.hint:
        say(f"  note: {cohort.facts.hint}", "dim")
    shift_cohort = None
    if request.shift is not None:
        shift_cohort = open_cohort(request.shift, role="shift", name=f"{cohort.options.get('name', 'cohort')}-shift",
                                   **common)
        say(f"shift set: {shift_cohort.described}")

    dataset = get_dataset(**cohort.options)
    counts = check_cohort(cohort, dataset, request.fractions)
    counts_said = counts_line(TASK_NAME, dataset, counts)
    say(counts_said)
    shift_dataset = get_dataset(**shift_cohort.options) if shift_cohort is not None else None
    if shift_dataset is not None:
        check_images_readable(shift_cohort, shift_dataset)
    modality = dataset.meta.modality
    depends = ("the components' dominance term is measured against it, so the order can depend on it"
               if request.crs_definition == "components" else "the CRS verdict does not depend on it")
    say(f"reference: {labels[0]}, the first encoder listed ({depends}; scores are differences to it)")

    out = Path(request.output)  # created only once there is a suite to write: a refused select leaves nothing
    arguments = {"data": str(Path(request.data).resolve()), "encoders": entries, "modality": modality,
                 "label_column": request.label_column, "image_column": request.image_column,
                 "group_column": request.group_column, "ordinal": request.ordinal,
                 "shift": str(Path(request.shift).resolve()) if request.shift else None,
                 "budget_s": request.budget_s, "fractions": request.fractions, "seeds": request.seeds,
                 **({"crs_definition": request.crs_definition} if request.crs_definition else {}),
                 **({"subgroup_columns": list(request.subgroup_columns)} if request.subgroup_columns else {}),
                 **({"subgroup_axis": list(request.subgroup_axis)} if request.subgroup_axis else {})}
    suite_file = out / SUITE_FILE
    prepared = dict(request=request, labels=labels, cohort=cohort, dataset=dataset, counts_line=counts_said,
                    suite_file=suite_file, started=started)
    if _reusable(out, arguments):
        suite = load_suite(suite_file)
        say(f"resuming {suite_file}: planned before with these arguments ({len(suite.seeds)} seeds, "
            f"fractions {', '.join(f'{f:g}' for f in suite.fractions)})")
        say(f"suite written to {suite_file} (an ordinary suite: `crsbench run` resumes it)")
        return PreparedSelection(suite=suite, **prepared)

    # the cache the run will use: the same precedence as the run's own
    cache_root = request.cache_dir if request.cache_dir is not None else default_cache_dir()
    plan, costs, share = _plan(entries, labels, dataset, shift_dataset, counts, request, modality, started,
                               cache_root, say)
    estimate = _estimate(plan, time.perf_counter() - started)
    _say_plan(plan, estimate, request.budget_s, share, say, request.over_budget)
    if not plan.fits and not request.over_budget:
        raise OverBudget(over_budget_message(plan, estimate, request.budget_s))
    mapping = compose_suite(f"select-{cohort.options.get('name', 'cohort')}", entries, cohort.options,
                            plan.protocol, shift=shift_cohort.options if shift_cohort else None,
                            reference=labels[0],
                            crs=_crs_block(request),
                            cache=str(Path(request.cache_dir).resolve()) if request.cache_dir else None)
    header = (f"Written by `crsbench select` for {request.data}; run it again with `crsbench run {suite_file}`.\n"
              f"Plan: {plan.protocol.describe()}.\n"
              + "".join(f"Cut to fit a {format_duration(request.budget_s)} budget: {c}.\n" for c in plan.cuts))
    parse_suite(mapping, source=str(suite_file), base=out.resolve())  # a bad mapping fails before it is written
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(suite_file, lambda f: f.write(suite_text(mapping, header).encode("utf-8")))
    atomic_write(out / ARGUMENTS_FILE, lambda f: f.write(json.dumps(arguments, indent=2).encode("utf-8")))
    say(f"suite written to {suite_file} (an ordinary suite: `crsbench run` resumes it)")
    return PreparedSelection(suite=load_suite(suite_file), plan=plan, estimate=estimate,
                             seconds_per_image={name: cost.seconds_per_image for name, cost in costs.items()},
                             **prepared)


def _reusable(out: Path, arguments: dict) -> bool:
    try:
        return (out / SUITE_FILE).is_file() and json.loads((out / ARGUMENTS_FILE).read_text()) == arguments
    except (OSError, ValueError):
        return False


def _scoring_estimate(protocol, n_encoders: int, counts: ImageCounts) -> float:
    conditions = 1 + len(protocol.perturbations) * len(protocol.severities) + (1 if counts.shift else 0)
    records = n_encoders * protocol.seeds * (len(protocol.fractions) - 1 + conditions)
    return SCORING_BASE_S + SCORING_PER_RECORD_CASE_S * records * counts.test * SELECT_N_BOOT / 100


def _plan(entries, labels, dataset, shift_dataset, counts_by_split, request: SelectionRequest, modality: str,
          started: float, cache_root: Path, say: Say):
    """Measure every encoder on this cohort, look up which of its embeddings the cache at `cache_root`
    holds, then the plan that fits what is left of the budget (the time spent so far, since `started`, is
    part of it). Returns the plan, the measured costs and a line on the cached share."""
    from crsbench.perturbations import MODALITY_SETS
    from crsbench.probe.linear import ProbeConfig
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
        say(f"measured {label}: {cost.seconds_per_image * 1000:.1f} ms per image ({perturbed}), {width}-d vectors, "
            f"probe fit {cost.fit_seconds:.2f} s on the whole training split ({cost.fit_fixed_seconds:.2f} s of it "
            f"at any size), model setup {cost.setup_seconds:.1f} s")
    counts = ImageCounts(*(len(dataset.split(s)) for s in ("train", "val", "test")),
                         shift=len(shift_dataset.split("test")) if shift_dataset is not None else 0)
    train_counts = counts_by_split["train"] if dataset.meta.task_type != "multi_label" else []
    ladder = request.fractions or usable_fractions(train_counts, DEFAULT_FRACTIONS)
    if not request.fractions and len(ladder) < len(DEFAULT_FRACTIONS):
        left = [f"{f:g}" for f in DEFAULT_FRACTIONS if f not in ladder]
        say(f"label fractions {', '.join(left)} left out: a class would keep fewer than 2 training images")
    left_s = max(request.budget_s - (time.perf_counter() - started), 1.0)
    has_shift = shift_dataset is not None
    common = dict(has_shift=has_shift, seeds=request.seeds, cached=cached)
    plan = plan_budget(costs, counts, left_s, names, ladder,
                       scoring_seconds=lambda protocol: _scoring_estimate(protocol, len(labels), counts), **common)
    return plan, costs, f"embeddings cached: {cached_share(plan.protocol, labels, cached, has_shift).describe()}"


def _estimate(plan, spent_s: float) -> Estimate:
    run_s = sum(v for k, v in plan.per_encoder_s.items() if k != "scoring")
    return Estimate(spent_s, run_s, plan.per_encoder_s.get("scoring", 0.0))


def smallest_budget(plan, estimate: Estimate) -> float:
    """The smallest budget, as a person would type it, under which the cheapest protocol fits after the same
    reading and measuring again."""
    return round_up_budget(estimate.spent_s + plan.cheapest_s)


def over_budget_message(plan, estimate: Estimate, budget_s: float) -> str:
    needed = format_budget(smallest_budget(plan, estimate))
    return (f"--budget {format_budget(budget_s)} cannot hold even the smallest protocol "
            f"({plan.protocol.describe()}): reading and measuring took {format_duration(estimate.spent_s)} and "
            f"running and scoring it are estimated at {format_duration(estimate.run_s + estimate.scoring_s)}; "
            f"the smallest budget that would work is {needed}: pass --budget {needed}, or --over-budget to run "
            "it anyway")


# what the plan line adds when the smallest protocol does not fit, by whether it runs anyway
OVER_BUDGET_NOTE = {True: " (over budget even at the smallest protocol: running it anyway, as --over-budget asks)",
                    False: " (over budget even at the smallest protocol: not run)"}


def _say_plan(plan, estimate: Estimate, budget_s: float, share: str, say: Say, over_budget: bool = False) -> None:
    fit = "" if plan.fits else OVER_BUDGET_NOTE[over_budget]
    say(f"plan: {plan.protocol.describe()}; estimated {format_duration(estimate.total_s)} of a "
        f"{format_duration(budget_s)} budget ({format_duration(estimate.spent_s)} spent measuring, "
        f"{format_duration(estimate.run_s)} to run of which {format_duration(plan.encoding_s)} encoding, "
        f"{format_duration(estimate.scoring_s)} to score){fit}")
    say(f"  {share}")
    for cut in plan.cuts:
        say(f"  cut to fit the budget: {cut}")
    if not plan.cuts:
        say("  nothing cut: the full protocol fits")
    per_encoder = ", ".join(f"{name} {format_duration(s)}" for name, s in plan.per_encoder_s.items() if name != "scoring")
    say(f"  estimated per encoder (embedding and probe fits): {per_encoder}; scoring "
        f"{format_duration(plan.per_encoder_s.get('scoring', 0.0))}; the smallest protocol "
        f"{format_duration(plan.cheapest_s)}", DETAIL)


def timing_line(total_s: float, run_s: float, estimate: Estimate | None) -> str:
    """The wall time, beside the plan's estimate of it when this call made the plan."""
    line = f"select finished in {format_duration(total_s)} ({total_s:.0f} s)"
    if estimate is None:
        return line
    rest_s = total_s - run_s - estimate.spent_s
    return (f"{line}; estimated {format_duration(estimate.total_s)} ({estimate.total_s:.0f} s): "
            f"measuring {format_duration(estimate.spent_s)}, run {format_duration(run_s)} against "
            f"{format_duration(estimate.run_s)} estimated, scoring and report {format_duration(rest_s)} against "
            f"{format_duration(estimate.scoring_s)}")
