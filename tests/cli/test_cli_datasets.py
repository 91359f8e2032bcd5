"""`crsbench datasets list` (also `crsbench datasets` alone) and `crsbench datasets check ROOT --dataset KIND`, tested on the sub-app."""

from __future__ import annotations

import pytest
from _release_layouts import make_aptos, make_chexpert, make_isic, make_mimic, truncate
from typer.testing import CliRunner

from crsbench.cli.commands.datasets import datasets_app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(datasets_app, list(args))


def test_lists_the_known_datasets():
    result = invoke()
    assert result.exit_code == 0, result.output
    for kind in ("isic2019", "aptos2019", "chexpert", "mimic_cxr"):
        assert kind in result.output
    for variable in ("ISIC2019_ROOT", "APTOS2019_ROOT", "CHEXPERT_ROOT", "MIMIC_CXR_JPG_ROOT"):
        assert f"${variable}" in result.output
    assert "PhysioNet credentialed access" in result.output
    assert "other dataset kinds: demo, folder, medmnist" in result.output


def test_the_list_the_help_promises_is_a_command_and_the_default():
    listed = invoke("list")
    assert listed.exit_code == 0, listed.output
    assert "isic2019" in listed.output and listed.output == invoke().output
    assert "list" in invoke("--help").output.split("Commands")[1]


def test_check_prints_counts_per_class_and_split(tmp_path):
    root = make_isic(tmp_path / "isic")
    result = invoke("check", str(root), "--dataset", "isic2019")
    assert result.exit_code == 0, result.output
    assert "32 images" in result.output and "dropped: unk_class 1" in result.output
    for name in ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "train", "val", "test", "total"):
        assert name in result.output
    assert "splits fixed in" in result.output


@pytest.mark.parametrize(
    "kind, make, expect",
    [
        ("aptos2019", make_aptos, "20 images"),
        ("chexpert", lambda root: make_chexpert(root), "11 images"),
        ("mimic_cxr", make_mimic, "7 images"),
    ],
)
def test_check_each_layout(tmp_path, kind, make, expect):
    root = make(tmp_path / kind)
    result = invoke("check", str(root), "-d", kind, "--decode")
    assert result.exit_code == 0, result.output
    assert expect in result.output and "images decode" in result.output


def test_check_shows_masked_counts_under_u_ignore(tmp_path):
    root = make_chexpert(tmp_path)
    result = invoke("check", str(root), "-d", "chexpert", "--uncertainty", "U-Ignore")
    assert result.exit_code == 0, result.output
    assert "masked (U-Ignore) entries" in result.output


def one_line_error(result, text: str) -> None:
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: ") and text in last, result.output  # the error is one line
    assert "Traceback" not in result.output


def test_bad_root_and_unknown_dataset(tmp_path):
    assert invoke("check", str(tmp_path / "absent"), "-d", "isic2019").output.count("\n") == 1  # only the error
    one_line_error(invoke("check", str(tmp_path / "absent"), "-d", "isic2019"), "dataset folder not found")
    one_line_error(invoke("check", str(tmp_path), "-d", "imagenet"), "unknown dataset 'imagenet'")
    one_line_error(invoke("check", str(tmp_path), "-d", "isic2019"), "ISIC_2019_Training_GroundTruth.csv not found")


def test_missing_image_fails_or_is_dropped_and_counted(tmp_path):
    root = make_isic(tmp_path / "isic")
    (root / "ISIC_2019_Training_Input" / "ISIC_0000009.jpg").unlink()
    one_line_error(invoke("check", str(root), "-d", "isic2019"), "1 listed images not found: ISIC_0000009")
    result = invoke("check", str(root), "-d", "isic2019", "--missing", "drop")
    assert result.exit_code == 0, result.output
    assert "missing_image 1" in result.output and "31 images" in result.output


def test_decode_finds_truncated_images(tmp_path):
    root = make_aptos(tmp_path / "aptos")
    first = sorted((root / "train_images").iterdir())[0]
    truncate(first)
    result = invoke("check", str(root), "-d", "aptos2019", "--decode")
    one_line_error(result, "1 unreadable images in aptos2019")
    assert first.name in result.output


def test_option_a_dataset_does_not_take(tmp_path):
    root = make_isic(tmp_path / "isic")
    one_line_error(invoke("check", str(root), "-d", "isic2019", "--uncertainty", "U-Ones"), "bad options")


def test_source_change_and_resplit(tmp_path):
    root = make_aptos(tmp_path / "aptos")
    assert invoke("check", str(root), "-d", "aptos2019").exit_code == 0
    text = (root / "train.csv").read_text()
    (root / "train.csv").write_text(text.replace(",0\n", ",1\n", 1))  # one image regraded
    one_line_error(invoke("check", str(root), "-d", "aptos2019"), "source changed")
    assert invoke("check", str(root), "-d", "aptos2019", "--resplit").exit_code == 0
