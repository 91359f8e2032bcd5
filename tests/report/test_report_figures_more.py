"""The comparison figures and tables as pure functions of the score value (and the records they read),
checked against the tables they come from and an independent implementation; captions say what ran;
names are never cut."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from _simulated_report import COSTS, DESIGN, LONG, scored_cohort
from crsbench.report import figure_style, figures_more, tables
from crsbench.report.page import write_report
from crsbench.results.record_set import Records


@pytest.fixture(scope="module")
def cohort(simulated_cohort):
    return scored_cohort(simulated_cohort, n_boot=150)


@pytest.fixture(scope="module")
def written(cohort, tmp_path_factory):
    report, records, stored = cohort
    return write_report(report, records, tmp_path_factory.mktemp("report"), predictions=stored,
                        seconds_per_image=COSTS)


def test_the_forest_shows_paired_differences_to_the_reference(cohort):
    report, _, _ = cohort
    table = figures_more.forest_table(report)
    crs = table[table["axis"] == "crs"].set_index("encoder")
    assert np.allclose(crs["value"], report.point.scores.loc[crs.index, "crs"])
    auroc = table[table["axis"] == "discrimination"].set_index("encoder")
    reference = report.point.scores.loc[report.reference, "discrimination"]
    assert np.allclose(auroc["value"], report.point.scores.loc[auroc.index, "discrimination"] - reference)
    others = auroc.drop(report.reference)
    assert (others["ci_low"] <= others["value"]).all() and (others["value"] <= others["ci_high"]).all()
    # the reference against itself on the same draws: zero in every draw (an unpaired interval would not be)
    assert auroc.loc[report.reference, ["value", "ci_low", "ci_high"]].abs().max() < 1e-12


def test_the_task_heatmap_is_the_per_task_crs(cohort):
    report, _, _ = cohort
    matrix = figures_more.task_matrix(report)
    for row in report.point.scores_by_task.itertuples():
        assert matrix.loc[row.encoder, row.task] == pytest.approx(row.crs)


def test_the_perturbation_heatmap_is_the_mean_drop(cohort):
    _, records, _ = cohort
    matrix = figures_more.perturbation_matrix(records)
    full = records[records["fraction"] == 1.0]
    for encoder in matrix.index:
        for condition in matrix.columns:
            drops = []
            for task in DESIGN.tasks:
                mine = full[(full["encoder"] == encoder) & (full["task"] == task)]
                clean = mine[mine["condition_kind"] == "clean"]["auroc"].mean()
                for severity in DESIGN.severities:
                    drops.append(clean - mine[(mine["condition"] == condition) & (mine["severity"] == severity)]
                                 ["auroc"].mean())
            assert matrix.loc[encoder, condition] == pytest.approx(np.mean(drops))


def test_per_class_auroc_matches_scikit_learn(cohort):
    report, records, stored = cohort
    table = figures_more.per_class_auroc_table(Records.of(records).frame, "derm")
    encoder = DESIGN.encoders[0].name
    rows = records[(records["task"] == "derm") & (records["encoder"] == encoder) & (records["fraction"] == 1.0)
                   & (records["condition_kind"] == "clean")]
    index = stored.index.set_index("record_key")
    by_class = []
    for key in rows["record_key"]:
        labels = stored.case_set(index.loc[key, "test_set"]).labels.astype(int)
        probs = stored.probabilities(key)
        by_class.append([roc_auc_score(labels == k, probs[:, k]) for k in range(3)])
    assert np.allclose(table.loc[encoder].to_numpy(), np.mean(by_class, axis=0))


def test_the_metrics_table_gives_case_level_intervals_not_a_zero_seed_spread(cohort):
    report, records, _ = cohort
    table = tables.metrics_table(records, report)
    text = " ".join(" ".join(r) for r in table.rows)
    assert "\u00b1 0.000" not in text
    row = report.intervals.axis_intervals
    hit = row[(row["scope"] == "derm") & (row["encoder"] == DESIGN.encoders[0].name) & (row["axis"] == "discrimination")]
    assert f"[{hit['ci_low'].iloc[0]:.3f}, {hit['ci_high'].iloc[0]:.3f}]" in text
    assert "case-level interval" in table.caption


def test_the_dataset_table_counts_each_set(cohort):
    report, records, _ = cohort
    table = tables.dataset_table(report)
    derm = [r for r in table.rows if r[0] == "derm"][0]
    counts = json.loads(records[records["task"] == "derm"]["positives_eval"].iloc[0])
    assert derm[2] == str(DESIGN.n_cases) and derm[3] == "3"
    assert derm[4] == ", ".join(f"class {k}: {n}" for k, n in enumerate(counts))
    assert "6 perturbation x severity pair(s) (blur, noise)" in derm[5]
    assert table.headers[4] == "cases per class" and table.headers[5] == "conditions run"
    assert table.prose_columns == (4, 5)  # running text: wrapped on the page, not one long line


def test_prose_columns_wrap_on_the_page(written):
    html = written.html.read_text()
    assert 'td.p { text-align: left; white-space: normal;' in html
    assert html.count('<td class="p">') >= 2  # the dataset table's two text columns, per set


def test_captions_say_what_ran_and_names_are_never_cut(written):
    captions = {f.name: f.caption for f in written.figures}
    robustness = captions["robustness_1_derm"]
    assert "(blur, noise; severities 1, 3, 5" in robustness and "jpeg" not in robustness
    assert "3 seeds pooled" in captions["reliability_1_derm"] and "cases in each bin" in captions["reliability_1_derm"]
    assert "150 draws" in captions["rank_distribution"]
    # a long name is shown by its key and spelt out in every caption; other long strings wrap, uncut
    name = f"{LONG}-ft-derm"
    assert f"[1] = {name}" in captions["forest"] and f"[2] = {LONG}-original" in captions["forest"]
    with figure_style.keyed(figure_style.name_key([name, f"{LONG}-original", "raw-pixels"])):
        assert figure_style.label(name).startswith("[1] ") and figure_style.label("raw-pixels") == "raw-pixels"
    assert figure_style.label(name).replace("\n", "") == name
    assert all(f.absent is None for f in written.figures), [(f.name, f.absent) for f in written.figures if f.absent]


def test_a_figure_without_its_inputs_says_why(cohort):
    report, records, stored = cohort
    from crsbench.report.data import ReportData
    from crsbench.report import sources

    data = ReportData(report, records[records["condition_kind"] != "perturbation"], sources.gather(None, records))
    assert isinstance(figures_more.encoder_perturbation_heatmap(data), figure_style.Absent)
    assert "no measured embedding cost" in figures_more.score_against_cost(data).reason


def test_classes_are_named_where_their_names_are_known(cohort):
    """The class-counts table carries each class's name (class_names given to the score), which the dataset
    table and the per-class figure show; without names they read "class k"."""
    from crsbench.scoring.axis_evidence import class_table

    _, records, _ = cohort
    names = {"derm": ("nevus", "melanoma", "other_lesion")}
    named = class_table(Records.of(records), names)
    derm = named[(named["task"] == "derm") & (named["set"] == "test")]
    assert list(derm["name"]) == list(names["derm"])
    other = named[named["task"] != "derm"]
    assert (other["name"] == [f"class {k}" for k in other["class"]]).all()

    class Report:  # the fields the table reads, with names
        settings = cohort[0].settings
        evidence = SimpleNamespace(class_counts=named, axis_evidence=cohort[0].evidence.axis_evidence)

    row = [r for r in tables.dataset_table(Report).rows if r[0] == "derm"][0]
    assert row[4].startswith("nevus: ") and "other_lesion: " in row[4]


def test_the_small_class_sentence_names_the_class_the_counts_table_names():
    from types import SimpleNamespace

    import pandas as pd

    from crsbench.report.claims import small_class_sentences

    counts = pd.DataFrame({"task": ["t", "t", "t"], "set": ["test", "test", "shift:site-b"], "class": [0, 1, 1],
                           "name": ["covid19", "no_finding", "no_finding"], "cases": [86, 4, 2]})
    text = " ".join(small_class_sentences(SimpleNamespace(evidence=SimpleNamespace(class_counts=counts))))
    assert "no_finding has 4 case(s) in the test set; no_finding has 2 case(s) in the shift set site-b" in text
    assert "class 1" not in text and "covid19" not in text
    given = " ".join(small_class_sentences(SimpleNamespace(evidence=SimpleNamespace(class_counts=counts)), ("a", "b")))
    assert "b has 4 case(s)" in given  # names passed in win over the table's
