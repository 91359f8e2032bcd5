"""Fit the protocol to a time budget, from costs measured on the cohort itself (a pure function).

What a run costs, per encoder:

    setup + t_img * (train + val + test + shift)                       clean embeddings, once
          + t_perturbed * test * perturbations * severities            perturbed test copies
          + seeds * sum_f fit(f) + REFITS * fit(1)                     probes, and the refits at 100 %
    fit(f) = max(t_fixed + (t_fit - t_fixed) * f, FIT_FLOOR * t_fit)   a fit's cost ~ its training rows

An embedding the cache already holds (`CachedEmbeddings`) costs no encoding: its images are left out of
the sums, and the setup is paid only by an encoder with something left to encode. Probe fits always run.

plus the scoring. Each of four dimensions has a few levels (seeds 5/4/3, the fraction ladder,
the perturbation subset, the severities); every combination is costed and the one losing least
of the protocol that fits is taken. Never fewer than MIN_SEEDS seeds: with fewer the paired
bootstrap has nothing to resample. When even the smallest plan does not fit it is still the plan,
marked `fits=False`, with `cheapest_s` its estimate: the caller decides whether to refuse (`select` does,
naming the smallest budget that would work, unless told to run over budget).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from crsbench.scoring.refits import ADVISED_REFITS

MIN_SEEDS = 3
SEED_LEVELS = (5, 4, 3)
SEVERITY_LEVELS = ((1, 2, 3, 4, 5), (1, 3, 5), (3,))
PERTURBATION_COUNTS = (None, 6, 3, 1)  # None: the modality's whole set
FIT_FLOOR = 0.05  # a probe fit on a few images still costs the solver's setup

# What each level gives up, in rough units of protocol lost (0 = the full protocol). Seeds weigh most:
# they are the one replicate the bootstrap resamples besides the test cases.
SEED_LOSS = {5: 0.0, 4: 2.0, 3: 4.0}
FRACTION_LOSS = (0.0, 1.0, 3.0)  # the whole ladder, three fractions, two
# Kinds of acquisition change matter more than how finely their severity is sampled: three perturbations
# at one severity lose less than one perturbation at five.
PERTURBATION_LOSS = (0.0, 1.0, 2.0, 4.0, 6.0)  # all, 6, 3, 1, none (only with a shift set)
SEVERITY_LOSS = (0.0, 0.5, 1.0)

# Perturbations in the order a subset keeps them: one of each kind (noise, blur, compression,
# exposure, contrast) before a second of any kind.
PERTURBATION_PRIORITY = (
    "gaussian_noise", "defocus_blur", "gaussian_blur", "jpeg", "brightness_down", "contrast_down", "hair",
    "motion_blur", "black_corners", "shot_noise", "gamma_down", "brightness_up", "contrast_up", "speckle_noise",
    "impulse_noise", "gamma_up", "pixelate",
)


@dataclass(frozen=True)
class EncoderCost:
    seconds_per_image: float  # decode, resize and forward pass of one clean image
    fit_seconds: float  # one probe fit (every C of the grid) on the whole training split
    setup_seconds: float = 0.0  # building the model, once
    fit_fixed_seconds: float = 0.0  # the part of a fit that does not shrink with fewer training rows
    perturbed_seconds_per_image: float | None = None  # decode, perturb, resize, forward; None: estimated

    def per_perturbed_image(self, perturb_seconds: float) -> float:
        """Seconds of one perturbed test image: as measured, else clean cost plus the perturbation's own."""
        if self.perturbed_seconds_per_image is not None:
            return self.perturbed_seconds_per_image
        return self.seconds_per_image + perturb_seconds

    def fit_at(self, fraction: float) -> float:
        """Seconds of one probe fit at a label fraction."""
        fixed = min(self.fit_fixed_seconds, self.fit_seconds)
        return max(fixed + (self.fit_seconds - fixed) * fraction, FIT_FLOOR * self.fit_seconds)


@dataclass(frozen=True)
class ImageCounts:
    train: int
    val: int
    test: int
    shift: int = 0


CLEAN_SPLITS = ("train", "val", "test", "shift")  # the shift set's test split is embedded clean


def split_sizes(counts: ImageCounts) -> dict[str, int]:
    return {"train": counts.train, "val": counts.val, "test": counts.test, "shift": counts.shift}


@dataclass(frozen=True)
class CachedEmbeddings:
    """The embeddings of one encoder on this cohort that the cache holds already (none by default)."""

    splits: frozenset[str] = frozenset()  # clean: of CLEAN_SPLITS
    perturbed: frozenset[tuple[str, int]] = frozenset()  # test copies: (perturbation, severity)


NOTHING_CACHED = CachedEmbeddings()


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class Protocol:
    seeds: int
    fractions: tuple[float, ...]
    perturbations: tuple[str, ...]
    severities: tuple[int, ...]

    def describe(self) -> str:
        perturbed = (f"{_counted(len(self.perturbations), 'perturbation')} ({', '.join(self.perturbations)}) at "
                     f"{'severity' if len(self.severities) == 1 else 'severities'} "
                     f"{', '.join(map(str, self.severities))}") if self.perturbations else "no perturbations"
        return (f"{self.seeds} seeds, label fractions {', '.join(f'{f:g}' for f in self.fractions)}, {perturbed}")

    def perturbed_conditions(self) -> tuple[tuple[str, int], ...]:
        return tuple((name, severity) for name in self.perturbations for severity in self.severities)


@dataclass(frozen=True)
class BudgetPlan:
    protocol: Protocol
    full: Protocol  # what the protocol would run without a budget
    estimate_s: float
    budget_s: float
    fits: bool
    cuts: tuple[str, ...] = ()  # what was given up, in words
    per_encoder_s: dict[str, float] = field(default_factory=dict)
    encoding_s: float = 0.0  # the part of the estimate spent encoding images the cache lacks
    cheapest_s: float = 0.0  # the estimate of the smallest protocol: less than this budget, nothing fits


@dataclass(frozen=True)
class CachedShare:
    """How much of a protocol's embeddings the cache holds, counted in matrices (one per encoder and
    split, or encoder and perturbed condition)."""

    clean: int
    clean_total: int
    perturbed: int
    perturbed_total: int

    def describe(self) -> str:
        return (f"{self.clean} of {self.clean_total} clean splits, "
                f"{self.perturbed} of {self.perturbed_total} perturbed test sets")


def perturbation_order(names: Sequence[str]) -> tuple[str, ...]:
    """A modality's perturbations in the order subsets keep them."""
    rank = {name: i for i, name in enumerate(PERTURBATION_PRIORITY)}
    return tuple(sorted(names, key=lambda n: (rank.get(n, len(rank)), n)))


def fraction_ladders(fractions: Sequence[float]) -> list[tuple[float, ...]]:
    """The whole ladder, then three fractions (smallest, middle, 1.0), then two (smallest, 1.0)."""
    full = tuple(sorted(set(fractions) | {1.0}))
    below = [f for f in full if f < 1.0]
    if not below:
        return [full]
    three = tuple(sorted({below[0], below[len(below) // 2], 1.0}))
    two = (below[0], 1.0)
    ladders = []
    for ladder in (full, three, two):
        if ladder not in ladders:
            ladders.append(ladder)
    return ladders


def encoding_seconds(protocol: Protocol, cost: EncoderCost, counts: ImageCounts,
                     cached: CachedEmbeddings = NOTHING_CACHED, perturb_seconds: float = 0.0) -> float:
    """Seconds one encoder spends embedding what the cache lacks; the setup (building the model, its
    first pass) only when there is something to embed."""
    clean = sum(n for split, n in split_sizes(counts).items() if split not in cached.splits)
    perturbed = counts.test * sum(1 for c in protocol.perturbed_conditions() if c not in cached.perturbed)
    if clean == 0 and perturbed == 0:
        return 0.0
    return cost.setup_seconds + cost.seconds_per_image * clean + cost.per_perturbed_image(perturb_seconds) * perturbed


REFITS = ADVISED_REFITS  # probes refit at 100 % labels on paired training resamples: the training sample's spread


def fitting_seconds(protocol: Protocol, cost: EncoderCost) -> float:
    """Seconds of one encoder's probe fits: every seed at every fraction, and the REFITS refits at 100 %."""
    return protocol.seeds * sum(cost.fit_at(f) for f in protocol.fractions) + REFITS * cost.fit_at(1.0)


def estimate_seconds(protocol: Protocol, costs: Mapping[str, EncoderCost], counts: ImageCounts,
                     perturb_seconds: float = 0.0, scoring_seconds: float = 0.0,
                     cached: Mapping[str, CachedEmbeddings] | None = None) -> dict[str, float]:
    """Seconds per encoder, plus `scoring` for the scoring step."""
    cached = cached or {}
    out = {
        name: encoding_seconds(protocol, cost, counts, cached.get(name, NOTHING_CACHED), perturb_seconds)
        + fitting_seconds(protocol, cost)
        for name, cost in costs.items()
    }
    out["scoring"] = scoring_seconds
    return out


def cached_share(protocol: Protocol, encoders: Sequence[str], cached: Mapping[str, CachedEmbeddings],
                 has_shift: bool = False) -> CachedShare:
    """How many of the matrices `protocol` reads for `encoders` the cache holds."""
    splits = CLEAN_SPLITS if has_shift else CLEAN_SPLITS[:-1]
    conditions = protocol.perturbed_conditions()
    held = [cached.get(name, NOTHING_CACHED) for name in encoders]
    return CachedShare(
        sum(len(set(splits) & c.splits) for c in held), len(splits) * len(encoders),
        sum(len(set(conditions) & c.perturbed) for c in held), len(conditions) * len(encoders),
    )


def _cuts(protocol: Protocol, full: Protocol) -> tuple[str, ...]:
    cuts = []
    if protocol.seeds < full.seeds:
        cuts.append(f"seeds: {protocol.seeds} instead of {full.seeds}")
    dropped = [f for f in full.fractions if f not in protocol.fractions]
    if dropped:
        cuts.append(f"label fractions {', '.join(f'{f:g}' for f in dropped)} not run")
    left_out = [p for p in full.perturbations if p not in protocol.perturbations]
    if left_out:
        cuts.append(f"perturbations left out: {', '.join(left_out)}")
    severities = [s for s in full.severities if s not in protocol.severities]
    if severities and protocol.perturbations:
        cuts.append(f"severities {', '.join(map(str, severities))} not run")
    return tuple(cuts)


def plan_budget(
    costs: Mapping[str, EncoderCost],
    counts: ImageCounts,
    budget_s: float,
    perturbations: Sequence[str],
    fractions: Sequence[float],
    *,
    perturb_seconds: float = 0.0,
    scoring_seconds: float | Callable[[Protocol], float] = 0.0,
    has_shift: bool = False,
    seeds: int | None = None,
    cached: Mapping[str, CachedEmbeddings] | None = None,
) -> BudgetPlan:
    """The plan that loses least of the protocol within `budget_s` (see the module docstring).

    `perturbations`: the modality's set; `fractions`: the usable label fractions (1.0 included);
    `seeds`: a number the user fixed (at least MIN_SEEDS), else chosen from SEED_LEVELS;
    `cached`: by encoder, the embeddings the cache holds already (they cost no encoding);
    `scoring_seconds`: the scoring's cost, or a function of the protocol (scoring grows with the records a
    protocol writes: costed per protocol, the plan taken is the plan that fits).
    """
    if seeds is not None and seeds < MIN_SEEDS:
        raise ValueError(f"--seeds: at least {MIN_SEEDS} seeds, got {seeds}")
    cached = cached or {}
    ordered = perturbation_order(perturbations)
    subsets = [ordered[:n] if n else ordered for n in PERTURBATION_COUNTS]
    if has_shift:
        subsets.append(())  # robustness is still measured, on the shift set
    subset_levels = []
    for level, subset in enumerate(subsets):
        if subset not in [s for s, _ in subset_levels]:
            subset_levels.append((subset, PERTURBATION_LOSS[level]))
    ladders = fraction_ladders(fractions)
    seed_levels = (seeds,) if seeds is not None else SEED_LEVELS
    full = Protocol(seed_levels[0], ladders[0], ordered, SEVERITY_LEVELS[0] if ordered else ())

    options = []
    for n_seeds, (f_level, ladder), (subset, p_loss), (s_level, severities) in itertools.product(
        seed_levels, enumerate(ladders), subset_levels, enumerate(SEVERITY_LEVELS)
    ):
        if not subset and s_level:
            continue  # severities mean nothing without perturbations
        protocol = Protocol(n_seeds, ladder, subset, severities if subset else ())
        scoring = scoring_seconds(protocol) if callable(scoring_seconds) else scoring_seconds
        seconds = estimate_seconds(protocol, costs, counts, perturb_seconds, scoring, cached)
        loss = SEED_LOSS.get(n_seeds, 0.0) + FRACTION_LOSS[f_level] + p_loss + SEVERITY_LOSS[s_level]
        options.append((loss, sum(seconds.values()), protocol, seconds))
    fitting = [o for o in options if o[1] <= budget_s]
    fits = bool(fitting)
    cheapest = min(options, key=lambda o: (o[1], o[0]))
    loss, total, protocol, seconds = min(fitting, key=lambda o: (o[0], o[1])) if fits else cheapest
    encoding = sum(encoding_seconds(protocol, cost, counts, cached.get(name, NOTHING_CACHED), perturb_seconds)
                   for name, cost in costs.items())
    return BudgetPlan(protocol, full, total, float(budget_s), fits, _cuts(protocol, full), seconds, encoding,
                      cheapest[1])
