"""The executor seam without Ray: the suite block, the CLI override, shards, out-of-order results."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench import api
from crsbench.cli.main import app
from crsbench.run.embedding_jobs import shard_bounds
from crsbench.errors import SuiteError
from crsbench.executors import LocalExecutor
from crsbench.plan.fit_units import plan
from crsbench.run.runner import SuiteRun
from crsbench.plan.suite import parse_suite

SESSION = ["run_id", "created_at", "fit_seconds", "eval_seconds"]
SIZES = {"n_train": 40, "n_val": 16, "n_test": 20, "image_size": 32}


def _raw(tmp_path, **extra):
    return {
        "name": "seam", "output": str(tmp_path / "out"),
        "encoders": ["raw-pixels", "colour-texture"],
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES},
                   "shift": {"kind": "demo", "specialty": "derm", "site": "B", **SIZES},
                   "perturbations": ["gaussian_noise"]}],
        "seeds": [0, 1], "fractions": [0.5, 1.0], "probe": {"c_grid": [0.1]},
        "perturbations": {"select": "none", "severities": [2]}, "batch_size": 8, **extra,
    }


def test_executor_block_changes_neither_the_suite_hash_nor_the_plan(tmp_path):
    plain = parse_suite(_raw(tmp_path))
    on_ray = parse_suite(_raw(tmp_path, executor={"kind": "ray", "address": "auto", "shard_images": 64}))
    assert on_ray.executor.kind == "ray" and plain.executor.kind == "local"
    assert on_ray.suite_hash() == plain.suite_hash()
    assert plan(on_ray) == plan(plain)
    assert api.with_executor(plain, "ray", "10.0.0.1:6379").suite_hash() == plain.suite_hash()


@pytest.mark.parametrize("block, message", [
    ({"kind": "spark"}, "executor.kind: unknown executor 'spark'; known: local, ray"),
    ({"kind": "local", "address": "auto"}, "executor: address: only the ray executor connects to a cluster"),
    ({"kind": "ray", "shard_images": 0}, "executor.shard_images: Input should be greater than 0"),
])
def test_bad_executor_block_names_the_field(tmp_path, block, message):
    with pytest.raises(SuiteError, match="seam.yaml: " + message.replace("(", r"\(").replace(")", r"\)")):
        parse_suite(_raw(tmp_path, executor=block), source="seam.yaml")


def test_command_line_executor_overrides_the_suite(tmp_path):
    suite = parse_suite(_raw(tmp_path, executor={"kind": "ray", "address": "auto", "threads": 2}))
    local = api.with_executor(suite, "local")
    assert local.executor.kind == "local" and local.executor.address is None and local.executor.threads == 2
    assert api.with_executor(suite, None, "head:6379").executor.address == "head:6379"
    assert api.with_executor(suite) is suite
    with pytest.raises(SuiteError, match="--executor: unknown executor 'dask'"):
        api.with_executor(suite, "dask")


def test_cli_refuses_an_unknown_executor_with_exit_2(tmp_path):
    import yaml

    path = tmp_path / "seam.yaml"
    path.write_text(yaml.safe_dump(_raw(tmp_path)))
    result = CliRunner().invoke(app, ["run", str(path), "--executor", "dask"])
    assert result.exit_code == 2 and "unknown executor 'dask'" in result.output


@pytest.mark.parametrize("n, shard, batch, expected", [
    (100, None, 16, [(0, 100)]),
    (100, 40, 16, [(0, 32), (32, 64), (64, 96), (96, 100)]),  # starts on batch boundaries
    (10, 4, 16, [(0, 10)]),  # a shard is never smaller than a batch
    (0, 8, 4, [(0, 0)]),
])
def test_shard_bounds_cover_the_rows_on_batch_boundaries(n, shard, batch, expected):
    assert shard_bounds(n, shard, batch) == expected


class ShuffledShards(LocalExecutor):
    """Small shards, results returned last job first: what a cluster does to the caller."""

    shard_images = 8
    shards = 0

    def map(self, fn, jobs, *, gpu=False):
        results = list(super().map(fn, jobs, gpu=gpu))
        self.shards += len(results) if gpu else 0
        return reversed(results)


def test_sharded_out_of_order_extraction_gives_identical_records(tmp_path):
    whole = SuiteRun(parse_suite(_raw(tmp_path / "a")), cache_dir=tmp_path / "cache-a").run()
    executor = ShuffledShards()
    sharded = SuiteRun(parse_suite(_raw(tmp_path / "b")), cache_dir=tmp_path / "cache-b", executor=executor).run()
    assert whole.written == sharded.written == whole.planned_records
    # 2 encoders x (train 40 + val 16 + 2 test sets of 20 + shift test 20) rows, in shards of 8
    assert executor.shards == 2 * (5 + 2 + 3 + 3 + 3)
    assert whole.forward_passes == sharded.forward_passes  # shards fall on batch boundaries

    def table(path):
        frame = api.records(path).drop(columns=SESSION + ["suite_hash"])  # the output path is in the hash
        return frame.set_index("record_key").sort_index()

    pd.testing.assert_frame_equal(table(tmp_path / "a" / "out"), table(tmp_path / "b" / "out"), check_exact=True)
