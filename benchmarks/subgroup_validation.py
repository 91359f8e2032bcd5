"""The subgroup stage validated on cohorts with a known truth (crsbench.simulation.subgroups), and read on real data.

    python benchmarks/subgroup_validation.py [DATA_DIR] [--runs N] [--draws B] [--smoke]

Simulated (two encoders, two classes, sex F/M and three age bands drawn apart from the labels, one case
per patient, paired encoders):
- power: one encoder's AUROC on sex = F planted `effect` below its AUROC elsewhere; the share of runs whose
  simultaneous interval of the difference to the rest (and of the paired difference to the reference
  encoder on that subgroup) lies below 0, at effects 0.03, 0.05, 0.08, at the demo's test size (300) and at
  1,200 cases;
- power at effect 0.05 on larger test sets (1,600, 2,000, 3,000 cases): where the paired difference reaches 0.8;
- null (effect 0): the share of runs in which every subgroup of an attribute covers its true difference
  (0) at once, per encoder and attribute;
- family-wise null error: the share of runs in which some subgroup of an encoder's two attributes is flagged,
  with intervals simultaneous within each attribute alone and over both (the scoring's rule), same draws;
- near the assessability threshold (66 cases at prevalence 0.35: sex's subgroups of about 33 cases and 11
  positives): both cover 0, among the runs where both are assessable;
- small-subgroup bias (null): the mean worst-subgroup AUROC and gap minus their true values (true worst
  = every subgroup's AUROC, true gap 0), beside the mean of the bootstrap's bias estimates.
Every share with its Monte Carlo standard error sqrt(p (1 - p) / runs); every mean with its s.e.

Real data (DATA_DIR, default ../shared/data): the CheXpert label file's subgroups (sex, age band by
decade, AP/PA view) counted per split of the frontal views, and the multi-source chest X-ray set's
`source` read as a site attribute, with the subgroups too small to assess named.
`--smoke`: 10 runs of 60 draws at the demo size, one effect.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.simulation.subgroups import SubgroupDesign, replicate, true_worst

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
HEADER = "table"


def share(values: pd.Series) -> str:
    p = float(values.mean())
    return f"{p:.3f} ({np.sqrt(p * (1 - p) / len(values)):.3f})"


def mean_se(values: pd.Series) -> str:
    return f"{values.mean():+.4f} ({values.std(ddof=1) / np.sqrt(len(values)):.4f})"


def power_table(effects, sizes, runs: int, draws: int, larger=()) -> pd.DataFrame:
    """`larger`: further sizes run at effect 0.05 alone, to find where the paired difference reaches 0.8."""
    rows = []
    for n, effect in [(n, e) for n in sizes for e in effects] + [(n, 0.05) for n in larger]:
        started = time.perf_counter()
        found = replicate(SubgroupDesign(n_cases=n, effect=effect), runs, draws + 1, seed=int(1000 * effect) + n)
        planted = found[found["encoder"] == "planted"]
        rows.append({"cases": n, "effect": effect, "runs": runs,
                     "diff to rest excludes 0": share(planted["planted_excludes"]),
                     "paired diff to reference excludes 0": share(planted["planted_ref_excludes"]),
                     "s per run": f"{(time.perf_counter() - started) / runs:.2f}"})
    return pd.DataFrame(rows)


def null_tables(sizes, runs: int, draws: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    coverage, bias = [], []
    for n in sizes:
        design = SubgroupDesign(n_cases=n, effect=0.0)
        found = replicate(design, runs, draws + 1, seed=7 + n)
        for encoder, part in found.groupby("encoder"):
            for attribute, groups in (("sex", 2), ("age_band", 3)):
                coverage.append({"cases": n, "encoder": encoder, "attribute": attribute, "subgroups": groups,
                                 "runs": runs, "all subgroups cover 0": share(part[f"covers_{attribute}"])})
                bias.append({"cases": n, "encoder": encoder, "attribute": attribute,
                             "worst AUROC bias": mean_se(part[f"worst_{attribute}"] - true_worst(design)),
                             "bootstrap estimate": mean_se(part[f"worst_bias_{attribute}"]),
                             "gap bias": mean_se(part[f"gap_{attribute}"]),
                             "gap estimate": mean_se(part[f"gap_bias_{attribute}"])})
    return pd.DataFrame(coverage), pd.DataFrame(bias)


def family_table(sizes, runs: int, draws: int) -> pd.DataFrame:
    """Null: the share of runs in which some subgroup of an encoder's two attributes is flagged (its difference
    interval excludes the true 0), with intervals simultaneous within each attribute alone (as before) and
    over the family of both (Bonferroni over the attributes, the max statistic within each), on the same draws."""
    rows = []
    for n in sizes:
        found = replicate(SubgroupDesign(n_cases=n, effect=0.0), runs, draws + 1, seed=17 + n, per_attribute=True)
        for encoder, part in found.groupby("encoder"):
            rows.append({"cases": n, "encoder": encoder, "runs": runs,
                         "any flag, per attribute": share(~part["covers_family_per_attribute"]),
                         "any flag, family": share(~part["covers_family"]),
                         "sex alone covers, family": share(part["covers_sex"]),
                         "age band alone covers, family": share(part["covers_age_band"])})
    return pd.DataFrame(rows)


def threshold_table(runs: int, draws: int) -> pd.DataFrame:
    """Null coverage of sex's two subgroups where each sits near the assessability threshold (about 33 cases
    and 11 positives: 66 cases at prevalence 0.35), among the runs in which both are assessable."""
    design = SubgroupDesign(n_cases=66, prevalence=0.35, effect=0.0)
    found = replicate(design, runs, draws + 1, seed=31)
    rows = []
    for encoder, part in found.groupby("encoder"):
        held = part[part["assessable_sex"]]
        rows.append({"cases": design.n_cases, "prevalence": design.prevalence, "encoder": encoder, "runs": runs,
                     "both assessable": len(held), "smallest subgroup (mean cases)": f"{held['smallest_sex'].mean():.1f}",
                     "both cover 0": share(held["covers_sex"]) if len(held) else "-"})
    return pd.DataFrame(rows)


def chexpert_counts(data: Path) -> pd.DataFrame | None:
    """Frontal views per attribute, subgroup and split, as the CheXpert kind reads the label file (no images)."""
    from crsbench.datasets.published.chexpert import CheXpertDataset

    path = data / "chexpert" / "chexpert_train.csv.gz"
    if not path.is_file():
        return None
    dataset = CheXpertDataset(root=path.parent, csv=path)
    frames = []
    for split in ("train", "val", "test"):
        for attribute, values in dataset.split(split).subgroups.items():
            counts = pd.Series(values).value_counts()
            frames.append(pd.DataFrame({"attribute": attribute, "subgroup": counts.index, "split": split,
                                        "cases": counts.to_numpy()}))
    table = pd.concat(frames).pivot_table(index=["attribute", "subgroup"], columns="split", values="cases",
                                          fill_value=0, aggfunc="sum")
    return table[["train", "val", "test"]].reset_index()


def multisource_sites(data: Path) -> pd.DataFrame | None:
    from crsbench.datasets.npz import NpzDataset
    from crsbench.scoring.subgroups import MIN_CASES, MIN_PER_CLASS

    path = data / "cxr_multisource" / "cxr_multisource_128.npz"
    if not path.is_file():
        return None
    split = NpzDataset(path=path, class_names=["no finding", "pneumonia"], subgroups_key="source").split("test")
    frame = pd.DataFrame({"source": split.subgroups["source"], "label": split.labels})
    table = frame.groupby("source")["label"].agg(cases="size", pneumonia="sum")
    table["no finding"] = table["cases"] - table["pneumonia"]
    table["assessable"] = ((table["cases"] >= MIN_CASES) & (table[["pneumonia", "no finding"]].min(axis=1)
                                                             >= MIN_PER_CLASS)).map({True: "yes", False: "no"})
    return table.reset_index()


def show(title: str, table: pd.DataFrame | None) -> None:
    print(f"table: {title}")
    print("(data absent)" if table is None else table.to_string(index=False))
    print()
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, nargs="?", default=DATA)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--smoke", action="store_true", help="10 runs of 60 draws, demo size, one effect")
    args = parser.parse_args(argv)
    runs, draws = (10, 60) if args.smoke else (args.runs, args.draws)
    effects = (0.05,) if args.smoke else (0.03, 0.05, 0.08)
    sizes = (300,) if args.smoke else (300, 1200)
    larger = () if args.smoke else (1600, 2000, 3000)
    show("power: the planted subgroup's interval below 0 (share of runs, Monte Carlo s.e.)",
         power_table(effects, sizes, runs, draws, larger))
    coverage, bias = null_tables(sizes, runs, draws)
    show("null: every subgroup of the attribute covers its true difference 0 at once", coverage)
    show("null: some subgroup of an encoder's attributes flagged (family-wise error)", family_table(sizes, runs, draws))
    show("null: near the assessability threshold, both sex subgroups cover 0 (among runs where both are assessable)",
         threshold_table(runs, draws))
    show("null: small-subgroup bias of the worst subgroup's AUROC and of the gap (mean, s.e.)", bias)
    show("real: CheXpert label file, frontal views, cases per subgroup and split", chexpert_counts(args.data_dir))
    show("real: multi-source chest X-rays, source as a site attribute", multisource_sites(args.data_dir))


if __name__ == "__main__":
    main()
