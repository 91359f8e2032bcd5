"""`crsbench encoders` and `crsbench encoders show NAME`."""

from __future__ import annotations

from typer.testing import CliRunner

from crsbench.cli.commands.encoders import encoders_app
from crsbench.encoders.registry import encoder_names

runner = CliRunner()


def test_bare_command_lists_the_whole_registry():
    result = runner.invoke(encoders_app, [], terminal_width=250)
    assert result.exit_code == 0, result.output
    for name in encoder_names():
        assert name in result.output
    assert {"efficientnet-lite0", "raw-pixels", "colour-texture", "rad-dino"} <= set(encoder_names())
    assert "unconfirmed" in result.output and "microsoft/rad-dino" in result.output
    assert "not pinned" in result.output and "369b1309d0ea" in result.output  # unpinned and pinned entries
    assert "shorter-side" in result.output and "squash" in result.output  # each entry's input rule
    from crsbench.cli.commands.encoders import COLUMNS, _row

    rule = COLUMNS.index("input")
    assert _row("dinov2-base")[rule] == "shorter-side 256 bicubic, centre-crop 224 (offsets floored)"
    assert _row("medsiglip-448")[rule] == "squash 448 bilinear, no antialias"  # the authors' evaluation resize


def test_show_prints_every_field_of_one_entry():
    result = runner.invoke(encoders_app, ["show", "rad-dino"], terminal_width=250)
    assert result.exit_code == 0, result.output
    for text in ("microsoft/rad-dino", "0.5307", "518", "chest X-ray", "pooler_output", "dinov2", "c3736a62",
                 "fingerprint"):
        assert text in result.output


def test_show_unknown_name_is_one_line_and_exit_2():
    result = runner.invoke(encoders_app, ["show", "no-such-encoder"])
    assert result.exit_code == 2
    assert "unknown encoder 'no-such-encoder'" in result.output
