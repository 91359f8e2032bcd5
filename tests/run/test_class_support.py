"""A class the protocol cannot use (a misspelt label) is refused before a run, naming it and its rows."""

import pytest

from crsbench.run.class_support import check_class_support, report_and_check, split_class_counts
from crsbench.datasets.folder import FolderDataset
from crsbench.errors import DataError

from _image_files import save_image, write_csv


def _folder(tmp_path, labels):
    root = tmp_path / "images"
    rows = ["image,dx,split"]
    for i, label in enumerate(labels):
        save_image(root / f"img{i:02d}.png", seed=i)
        rows.append(f"img{i:02d}.png,{label},{['train', 'val', 'test'][i % 3]}")
    return FolderDataset(root, write_csv(tmp_path / "labels.csv", "\n".join(rows)), label_columns="dx",
                         split_column="split")


def test_a_misspelt_label_is_refused_naming_the_class_and_its_rows(tmp_path):
    labels = ["nevus", "melanoma"] * 6 + ["melanomma"]  # img12: the typo, in train
    dataset = _folder(tmp_path, labels)
    assert dataset.meta.class_names == ("melanoma", "melanomma", "nevus")  # it became a class of its own
    counts = split_class_counts(dataset)
    with pytest.raises(DataError, match=r"class 'melanomma' has 1 example\(s\) \(train/val/test 1/0/0\), too few "
                                        r"for the val, test split\(s\).*rows: img12.png"):
        check_class_support("derm", dataset, counts)


def test_counts_are_shown_and_a_well_supported_task_passes(tmp_path):
    dataset = _folder(tmp_path, ["nevus", "melanoma"] * 6)
    lines = []
    report_and_check({"derm": dataset}, lines.append)
    assert lines == ["derm (images), examples per class, train/val/test: melanoma 2/2/2, nevus 2/2/2"]


def test_the_runner_refuses_before_embedding(tmp_path):
    from crsbench import api
    from crsbench.plan.suite import parse_suite

    _folder(tmp_path, ["nevus", "melanoma"] * 6 + ["melanomma"])
    suite = parse_suite({
        "name": "t", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"), "encoders": ["raw-pixels"],
        "tasks": [{"name": "derm", "dataset": {"kind": "folder", "root": str(tmp_path / "images"),
                                               "csv": str(tmp_path / "labels.csv"), "label_columns": "dx",
                                               "split_column": "split"}}],
        "seeds": [0], "fractions": [1.0],
    })
    with pytest.raises(DataError, match="class 'melanomma'"):
        api.run(suite)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
