"""AUROC against the CRS in a simulated published-scale cohort, under both CRS definitions.

The published benchmark reports, for 15 encoders, that AUROC and its CRS are positively associated but
not decision-equivalent: 21 of 105 pairwise orderings reverse, mean absolute rank displacement 1.87.
This reproduces the comparison in kind, at the profile level (skills per encoder, task and axis, with
measurement noise of the size the published test sets give), not at the case level.

Generative model (skill units, 0 = no value, 1 = perfect):
- 15 encoders: true skills u[e, a] = mu_a + sd_a z[e, a], z ~ N(0, S) across the four axes, S with 1 on
  the diagonal and rho off it (the between-axis correlation, varied over RHOS); mu = (0.66, 0.28, 0.58,
  0.56) and sd = (0.07, 0.07, 0.07, 0.07) for discrimination, calibration (Brier skill), label
  efficiency and robustness: AUROC about 0.83 +- 0.035, Brier skill 0.28 +- 0.07, as the demo and the
  offline encoders give.
- 2 floor baselines: skills (0.35, 0.10, 0.25, 0.25) + the same encoder spread; scored, left out of
  the rank statistics, as the suites mark them.
- Three tasks with ISIC 2019 (5,000 test cases, prevalence 0.18), APTOS 2019 (730, 0.49) and CheXpert
  (20,000, 0.12) test sizes, each with an encoder-by-task effect (sd 0.03 per axis) and measurement
  noise: the Hanley-McNeil standard error of an AUROC at the encoder's AUROC, that set's size and
  prevalence, in skill units (divided by the span 0.5), for discrimination and label efficiency; the
  same for the Brier skill; robustness averages the perturbed test set and a shift set of half the
  test set's size, so its noise is the mean of the two. The cross-task skill is the mean over tasks.
- The reference is encoder 0 (any encoder: the mean of skills does not depend on it; the components
  do, through dominance, and are scored as the suite would score them).
Per cohort: Spearman and Kendall tau-b of AUROC against the CRS, the pairs of the 15 that reverse
(of 105) and the mean absolute rank displacement, on the observed (noisy) values; mean and Monte Carlo
standard error over cohorts, and the 5-95% range across cohorts.

The real runs' profiles (the measured profiles of the real-calibrated cohorts, docs/bootstrap.md:
RetinaMNIST, PneumoniaMNIST, PH2 and the demo, three encoders each) are drawn against the simulated
encoders with --figure: three-encoder cohorts cannot pin a 4 x 4 correlation, so the grid of rho is
the honest answer, and the figure shows where the real profiles sit in it.

Run: python benchmarks/published_comparison.py [--smoke] [--cohorts N] [--seed S] [--figure PATH.png]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from crsbench.crs.definition import DEFINITIONS, CRSConfig, crs_chain
from crsbench.scoring.rank_agreement import rank_statistics_draws

AXES = ("discrimination", "calibration", "label_efficiency", "robustness")
RHOS = (0.3, 0.6, 0.9)
N_ENCODERS, N_BASELINES = 15, 2
MU = np.array([0.66, 0.28, 0.58, 0.56])
SD = np.array([0.07, 0.07, 0.07, 0.07])
BASELINE_MU = np.array([0.35, 0.10, 0.25, 0.25])
TASK_EFFECT_SD = 0.03
TEST_SETS = (("ISIC 2019", 5000, 0.18), ("APTOS 2019", 730, 0.49), ("CheXpert", 20000, 0.12))
PUBLISHED = {"n_reversed": 21.0, "mean_abs_rank_displacement": 1.87}
STATISTICS = ("spearman", "kendall_tau_b", "n_reversed", "mean_abs_rank_displacement")
# measured axis values (AUROC, Brier skill, label efficiency, robustness) of the real-calibrated cohorts,
# as docs/bootstrap.md ("Measured profiles") reports them: lite0, raw-pixels, colour-texture per cohort
REAL_PROFILES = {
    "RetinaMNIST": [(0.725, 0.165, 0.702, 0.512), (0.734, 0.195, 0.707, 0.733), (0.719, 0.161, 0.695, 0.625)],
    "PneumoniaMNIST": [(0.935, 0.485, 0.900, 0.595), (0.912, 0.410, 0.900, 0.910), (0.963, 0.559, 0.952, 0.874)],
    "PH2": [(0.846, 0.310, 0.755, 0.865), (0.793, 0.146, 0.758, 0.793), (0.817, 0.204, 0.769, 0.833)],
    "demo derm": [(0.827, 0.290, 0.732, 0.671), (0.690, 0.096, 0.604, 0.688), (0.689, 0.066, 0.617, 0.600)],
}


def hanley_mcneil_se(auroc: np.ndarray, n: int, prevalence: float) -> np.ndarray:
    """The standard error of an AUROC on n cases at this prevalence (Hanley & McNeil 1982)."""
    a = np.clip(auroc, 0.5, 0.999)
    n1, n0 = max(1.0, n * prevalence), max(1.0, n * (1 - prevalence))
    q1, q2 = a / (2 - a), 2 * a**2 / (1 + a)
    return np.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a**2) + (n0 - 1) * (q2 - a**2)) / (n1 * n0))


def simulate_skills(rng: np.random.Generator, rho: float, n_cohorts: int) -> np.ndarray:
    """Observed cross-task skills (cohorts, 17, 4): 15 encoders, then the 2 floor baselines."""
    n = N_ENCODERS + N_BASELINES
    cov = np.full((4, 4), rho) + (1 - rho) * np.eye(4)
    z = rng.multivariate_normal(np.zeros(4), cov, size=(n_cohorts, n))
    mu = np.vstack([np.tile(MU, (N_ENCODERS, 1)), np.tile(BASELINE_MU, (N_BASELINES, 1))])
    true = mu + SD * z
    observed = np.zeros_like(true)
    for _, size, prevalence in TEST_SETS:
        task = true + rng.normal(0, TASK_EFFECT_SD, true.shape)
        noise = hanley_mcneil_se(0.5 + 0.5 * task[..., 0], size, prevalence) / 0.5
        shift_noise = hanley_mcneil_se(0.5 + 0.5 * task[..., 0], size // 2, prevalence) / 0.5
        scale = np.stack([noise, noise, noise, (noise + shift_noise) / 2], axis=-1)
        observed += task + scale * rng.standard_normal(true.shape)
    return observed / len(TEST_SETS)


def compare(skills: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Per definition, the four rank statistics per cohort (AUROC vs CRS, the 15 without baselines)."""
    values = skills * np.array([0.5, 1.0, 0.5, 0.5]) + np.array([0.5, 0.0, 0.5, 0.5])  # skills as axis values
    auroc = values[:, :N_ENCODERS, 0]
    out = {}
    for definition in DEFINITIONS:
        config = CRSConfig(definition=definition, n_boot=0, n_weight_draws=0)
        crs = crs_chain(values, 0, config.chain(AXES)).crs[:, :N_ENCODERS]
        out[definition] = rank_statistics_draws(auroc, crs)
    return out


def summary(stats: dict[str, np.ndarray]) -> dict[str, tuple[float, float, float, float]]:
    """Per statistic: mean, Monte Carlo standard error of the mean, 5% and 95% across cohorts."""
    return {k: (float(np.mean(v)), float(np.std(v, ddof=1) / math.sqrt(len(v))),
                float(np.quantile(v, 0.05)), float(np.quantile(v, 0.95))) for k, v in stats.items()}


def run(n_cohorts: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for rho in RHOS:
        for definition, stats in compare(simulate_skills(rng, rho, n_cohorts)).items():
            rows.append({"rho": rho, "definition": definition, "cohorts": n_cohorts, **summary(stats)})
    return rows


HEADER = "| rho | definition |"


def table(rows: list[dict]) -> str:
    lines = [f"{HEADER} Spearman | Kendall tau-b | reversed of 105 (published 21) | "
             "mean abs. rank displacement (published 1.87) |", "|---|---|---|---|---|---|"]
    for row in rows:
        cells = []
        for name in STATISTICS:
            mean, se, low, high = row[name]
            digits = 1 if name == "n_reversed" else 2
            cells.append(f"{mean:.{digits}f} +- {se:.{digits if se >= 0.01 else 3}f} [{low:.{digits}f}, {high:.{digits}f}]")
        lines.append(f"| {row['rho']:.1f} | {row['definition']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def to_skills(values) -> np.ndarray:
    """Axis values (AUROC, Brier skill, AUROC over f, AUROC pert/shift) as skills u."""
    return (np.asarray(values, dtype=float) - np.array([0.5, 0.0, 0.5, 0.5])) / np.array([0.5, 1.0, 0.5, 0.5])


def draw_figure(path: str, seed: int = 0, n_cohorts: int = 40) -> None:
    """The simulated encoders' skills (one colour per rho) on two axis pairs, the real profiles on top."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    rng = np.random.default_rng(seed)
    fig = Figure(figsize=(9, 4), layout="constrained")
    panels = fig.subplots(1, 2)
    pairs = ((0, 1), (2, 3))
    for rho, colour in zip(RHOS, ("#9ecae1", "#4292c6", "#08306b")):
        skills = simulate_skills(rng, rho, n_cohorts)[:, :N_ENCODERS].reshape(-1, 4)
        for ax, (i, j) in zip(panels, pairs):
            ax.scatter(skills[:, i], skills[:, j], s=4, alpha=0.35, color=colour, label=f"simulated, rho {rho}")
    for (name, rows), marker in zip(REAL_PROFILES.items(), ("o", "s", "^", "D")):
        skills = to_skills(rows)
        for ax, (i, j) in zip(panels, pairs):
            ax.scatter(skills[:, i], skills[:, j], s=36, marker=marker, facecolor="#e6550d", edgecolor="black",
                       linewidth=0.5, label=f"real: {name}")
    for ax, (i, j) in zip(panels, pairs):
        ax.set_xlabel(f"{AXES[i]} (skill u)")
        ax.set_ylabel(f"{AXES[j]} (skill u)")
        ax.grid(linewidth=0.3, alpha=0.5)
    handles, labels = panels[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", frameon=False, fontsize=8)
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="100 cohorts per correlation (a quick check)")
    parser.add_argument("--cohorts", type=int, default=2000, help="cohorts per correlation (default 2,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", help="also draw the simulated skills with the real profiles on top (PNG)")
    args = parser.parse_args(argv)
    n = 100 if args.smoke else args.cohorts
    rows = run(n, args.seed)
    print(f"{n} simulated cohorts per correlation; mean +- Monte Carlo s.e. [5%, 95% across cohorts]; "
          f"published: {PUBLISHED['n_reversed']:.0f} of 105 reversed, displacement {PUBLISHED['mean_abs_rank_displacement']}")
    print(table(rows))
    if args.figure:
        draw_figure(args.figure, args.seed)
        print(f"figure: {args.figure}")
    return rows


if __name__ == "__main__":
    main()
