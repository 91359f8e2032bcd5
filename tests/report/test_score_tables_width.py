"""The score tables fit the width they are printed at (80 and 160 columns, a pipe's and a wide terminal's),
keep every encoder name whole and show the same values in every layout."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from crsbench.crs.definition import CRSConfig
from crsbench.report import scores_table, task_tables
from crsbench.scoring.score import score_records
from _synthetic_records import make_records

NAMES = ("efficientnet-lite0@input_size=96", "raw-pixels", "colour-texture", "dinov2-base")


@pytest.fixture(scope="module")
def report():
    return score_records(make_records(encoders=NAMES), "raw-pixels", CRSConfig(n_boot=200, seed=1, n_weight_draws=0))


def _render(table, width: int) -> tuple[str, str]:
    console = Console(width=width, record=True, color_system=None, soft_wrap=True)  # as the CLI prints
    console.print(table)
    return table.layout(console, console.options), console.export_text()


def _cells(report, column: str, digits: int) -> list[str]:
    return [f"{v:.{digits}f}" for v in report.point.scores[column]]


@pytest.mark.parametrize("width, layouts", [(80, {"blocks"}), (160, {"wide", "stacked"}), (240, {"wide"})])
def test_the_cross_task_table_fits_and_keeps_names_and_values(report, width, layouts):
    layout, text = _render(scores_table(report), width)
    assert layout in layouts
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    assert "…" not in text
    for name in NAMES:  # whole, on one line
        assert any(name in line for line in lines), name
    for value in _cells(report, "crs", 1) + _cells(report, "discrimination", 3):
        assert value in text


def test_at_80_columns_each_encoder_is_a_block_with_its_verdict_first(report):
    _, text = _render(scores_table(report), 80)
    block = text.split("efficientnet-lite0@input_size=96\n", 1)[1].split("\n\n", 1)[0]
    first = block.splitlines()[0].split()
    assert first[:1] == ["CRS"] and "CI" in first
    assert re.search(r"tier\s+(yes|no)", block) and re.search(r"CRS rank\s+\d", block)


def test_task_tables_fit_too(report):
    for table in task_tables(report):
        for width in (80, 160):
            _, text = _render(table, width)
            assert max(len(line.rstrip()) for line in text.splitlines()) <= width and "…" not in text


def test_a_name_longer_than_the_line_folds_and_loses_no_character():
    long = "module_with_a_long_name:factory@input_size=96,weights=checkpoints/encoder-v2.pt"
    report = score_records(make_records(encoders=(long, "raw-pixels")), "raw-pixels",
                           CRSConfig(n_boot=0, n_weight_draws=0))
    _, text = _render(scores_table(report), 60)
    assert long in "".join(line.rstrip() for line in text.splitlines())
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 60
