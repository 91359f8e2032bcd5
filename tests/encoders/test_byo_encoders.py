"""Encoders from wherever users have them: a function or torch module in memory (Python API), a
notebook registration, user code named module:factory (with the folder it is imported from recorded),
and a library model whose preprocessing comes from its own config."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from crsbench import api
from crsbench.encoders import registry
from crsbench.encoders.byo import describe, encoder, identity
from crsbench.errors import EncoderError, SuiteError
from crsbench.results.store import ResultsStore
from crsbench.plan.suite import parse_suite

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _suite(tmp_path, encoders=("raw-pixels",), **extra):
    return parse_suite({
        "name": "byo", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": list(encoders), "seeds": [0], "fractions": [1.0], "probe": {"c_grid": [1.0]},
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", "n_train": 40, "n_val": 20,
                                               "n_test": 20}}],
        **extra,
    })


def _encoders_in(output: Path) -> set[str]:
    with ResultsStore(output / "results.sqlite") as store:
        return set(store.records()["encoder"])


@pytest.fixture(autouse=True)
def _forget_registrations():
    before = set(registry.encoder_names())
    yield
    for name in set(registry.encoder_names()) - before:
        registry.unregister_encoder(name)


def channel_means(images):
    return images.mean(axis=(1, 2)) / 255.0


# --------------------------------------------------------------------------- a name and a function


def test_a_function_needs_only_a_name_and_the_defaults_are_shown():
    made = encoder("means", channel_means)
    spec = made.spec
    assert (spec.source, spec.identifier, spec.licence, spec.embed_dim) == ("user", "means", "unspecified", None)
    assert describe(made) == f"means: shorter-side 224 bilinear, no normalisation, revision {spec.revision}"
    assert spec.revision.startswith("unversioned+code-")
    batch = np.random.default_rng(0).uniform(0, 255, (3, 224, 224, 3)).astype(np.float32)
    np.testing.assert_allclose(made.encode(batch), batch.mean(axis=(1, 2)) / 255.0, rtol=1e-6)


def test_a_function_returning_the_wrong_shape_is_one_line():
    made = encoder("flat", lambda images: images.mean(axis=(1, 2, 3)))
    with pytest.raises(EncoderError, match=r"must return \[n, d\] for n = 2 images, got shape \[2\]") as info:
        made.encode(np.zeros((2, 224, 224, 3), np.float32))
    assert "\n" not in str(info.value)


def test_mean_and_std_are_refused_for_a_function_that_never_sees_them():
    with pytest.raises(EncoderError, match="unnormalised"):
        encoder("means", channel_means, mean=(0.5,) * 3)


SCALE = np.array([1.0, 2.0, 3.0])


def scaled(images):
    return images.mean(axis=(1, 2)) * SCALE


def test_the_identity_follows_the_code_and_the_data_it_reads(monkeypatch):
    first = identity(scaled)
    assert identity(scaled) == first
    monkeypatch.setattr(sys.modules[__name__], "SCALE", np.array([1.0, 2.0, 4.0]))  # a global it reads
    assert identity(scaled) != first
    assert identity(lambda images: images.mean(axis=(1, 2))) != identity(lambda images: images.max(axis=(1, 2)))
    offset = 1.0
    closure = lambda images: images.mean(axis=(1, 2)) + offset  # noqa: E731
    before = identity(closure)
    offset = 2.0  # noqa: F841 - read through the closure
    assert identity(closure) != before


def test_the_identity_is_the_same_in_another_process():
    """Sets and string hashes are salted per process; the digest must not be."""
    code = textwrap.dedent("""
        from crsbench.encoders.byo import identity
        def f(images):
            return images[:, 0, 0, :] if "x" in {"a", "b", "c", "x"} else images
        print(identity(f))
    """)
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": SRC, "PYTHONHASHSEED": seed}).stdout.strip()
            for seed in ("1", "2")}
    assert len(seen) == 1 and len(seen.pop()) == 12


# --------------------------------------------------------------------------- a torch module


torch = pytest.importorskip("torch")


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())


def test_a_module_gets_imagenet_normalised_tensors_and_its_weights_are_its_identity():
    net = _net()
    made = encoder("tiny-net", net, size=32, device="cpu")
    assert (made.spec.mean, made.spec.std) == ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    batch = np.random.default_rng(1).uniform(0, 255, (2, 32, 32, 3)).astype(np.float32)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    with torch.no_grad():
        expected = net((torch.from_numpy(batch).permute(0, 3, 1, 2) / 255.0 - mean) / std).numpy()
    np.testing.assert_allclose(made.encode(batch), expected, rtol=1e-5, atol=1e-6)
    retrained = _net(seed=1)
    assert encoder("tiny-net", retrained, size=32).spec.revision != made.spec.revision
    assert encoder("tiny-net", _net(), size=32).spec.revision == made.spec.revision  # same weights, same key


def test_a_module_returning_a_feature_map_is_one_line():
    made = encoder("maps", torch.nn.Conv2d(3, 4, 3), size=16, device="cpu")
    with pytest.raises(EncoderError, match=r"must return a tensor \[n, d\], got \[1, 4, 14, 14\]"):
        made.encode(np.zeros((1, 16, 16, 3), np.float32))


# --------------------------------------------------------------------------- the Python API


def test_api_run_benchmarks_objects_of_this_process_and_resumes(tmp_path):
    suite = _suite(tmp_path)
    net = _net()
    summary = api.run(suite, encoders=[channel_means, api.encoder("tiny-net", net, size=16)])
    assert summary.written == summary.planned_records > 0
    assert _encoders_in(summary.output) == {"raw-pixels", "channel_means", "tiny-net"}
    again = api.run(suite, encoders=[channel_means, api.encoder("tiny-net", net, size=16)])
    assert again.written == 0 and again.forward_passes == 0  # the same code and weights: nothing recomputed


def test_with_encoders_replaces_and_refuses_what_it_cannot_name(tmp_path):
    suite = api.with_encoders(_suite(tmp_path, reference="raw-pixels"), [channel_means], replace=True)
    assert [e.label for e in suite.encoders] == ["channel_means"] and suite.reference is None
    with pytest.raises(SuiteError, match=r"api.encoder\('my-name', fn\)"):
        api.with_encoders(suite, [lambda images: images])
    with pytest.raises(SuiteError, match="catalogue encoder's name"):
        api.with_encoders(suite, [encoder("raw-pixels", channel_means)])


class _Elsewhere:
    """An executor that would run the work in other processes."""

    name = "ray"
    shard_images = None

    def map(self, fn, jobs, *, gpu=False):
        raise AssertionError("no work may reach it")

    def close(self):
        pass


def test_an_executor_in_other_processes_refuses_objects_of_this_one_in_one_line(tmp_path):
    with pytest.raises(EncoderError) as info:
        api.run(_suite(tmp_path), encoders=[channel_means], executor=_Elsewhere())
    message = str(info.value)
    assert "\n" not in message and "'channel_means' exists only in this Python process" in message
    assert "ray executor" in message and "module:factory" in message
    assert not (tmp_path / "out").exists()


def test_a_notebook_registration_is_seen_by_this_process_suites_only(tmp_path):
    registry.register_encoder(encoder("nb-means", channel_means, size=16))
    summary = api.run(_suite(tmp_path, encoders=["raw-pixels", "nb-means"]))
    assert _encoders_in(summary.output) == {"raw-pixels", "nb-means"}
    # another process (the shell) has never heard of it, and says why
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(textwrap.dedent("""
        name: t
        encoders: [nb-means]
        tasks: [{name: a, dataset: {kind: demo, specialty: derm}}]
    """))
    done = subprocess.run([sys.executable, "-m", "crsbench", "validate", str(suite_file)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": SRC})
    assert done.returncode != 0
    assert "unknown encoder 'nb-means'" in done.stderr and "register_encoder() reaches only its own" in done.stderr


# --------------------------------------------------------------------------- module:factory from the shell


USER_CODE = '''
import numpy as np


def embed(images):
    """A bare embed function: the registry wraps it with the defaults."""
    return images.mean(axis=(1, 2))


def make():
    return embed
'''


@pytest.fixture
def lab_code(tmp_path, monkeypatch):
    folder = tmp_path / "code"
    (folder / "lab_byo").mkdir(parents=True)
    (folder / "lab_byo" / "__init__.py").write_text("")
    (folder / "lab_byo" / "encoders.py").write_text(USER_CODE)
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in [m for m in sys.modules if m.startswith("lab_byo")]:
        del sys.modules[name]


def test_a_factory_may_return_a_bare_function_or_be_the_embed_function(lab_code):
    made = registry.get_encoder("lab_byo.encoders:make")
    assert made.spec.name == "lab_byo.encoders.make" and made.spec.input_size == 224
    assert made.encode(np.ones((2, 224, 224, 3), np.float32)).shape == (2, 3)
    direct = registry.get_encoder("lab_byo.encoders:embed")  # a function of the images: no factory needed
    assert direct.spec.name == "lab_byo.encoders.embed"
    np.testing.assert_array_equal(direct.encode(np.ones((1, 224, 224, 3), np.float32)), [[1.0, 1.0, 1.0]])
    with pytest.raises(EncoderError, match="bad options"):  # given options, it is called as a factory
        registry.get_encoder("lab_byo.encoders:embed", size=3)


def test_the_suite_select_writes_records_where_the_code_lives_and_runs_from_the_shell(tmp_path, lab_code):
    from crsbench.selection.budget import Protocol
    from crsbench.selection.compose import compose_suite, suite_text

    assert registry.import_root("lab_byo.encoders:make") == os.path.realpath(lab_code)
    assert registry.import_root("numpy:mean") is None  # installed: nothing to record
    protocol = Protocol(seeds=1, fractions=(1.0,), perturbations=(), severities=())
    mapping = compose_suite("t", [{"name": "lab_byo.encoders:make"}], {"kind": "demo", "specialty": "derm"},
                            protocol)
    assert mapping["encoders"] == [{"name": "lab_byo.encoders:make", "python_path": os.path.realpath(lab_code)}]
    suite_file = tmp_path / "written" / "suite.yaml"
    suite_file.parent.mkdir()
    suite_file.write_text(suite_text(mapping, "written by a test"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "crsbench", "validate", str(suite_file)], capture_output=True,
                          text=True, env={**env, "PYTHONPATH": SRC}, cwd=tmp_path)  # no path to the user's code
    assert done.returncode == 0, done.stderr
    # the folder is where the code is, not part of what runs: moving it keeps the suite hash
    hashes = {parse_suite({**mapping, "encoders": [entry]}).suite_hash()
              for entry in ({"name": "lab_byo.encoders:make"}, mapping["encoders"][0])}
    assert len(hashes) == 1


def test_a_python_path_must_hold_the_module_it_is_for(tmp_path, lab_code):
    with pytest.raises(SuiteError, match=r"encoders\.0\.name: .*python_path .* does not hold the module 'lab_byo'"):
        _suite(tmp_path, encoders=[{"name": "lab_byo.encoders:make", "python_path": str(tmp_path / "out")}])
    with pytest.raises(SuiteError, match="only a module:factory encoder"):
        _suite(tmp_path, encoders=[{"name": "raw-pixels", "python_path": str(lab_code)}])


def test_a_weights_path_stays_out_of_the_displayed_name(tmp_path):
    weights = tmp_path / "deep" / "folder" / "resnet50_torch.pt"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"")
    suite = _suite(tmp_path, encoders=[{"name": "radimagenet-resnet50", "options": {"weights": str(weights)}}])
    assert suite.encoders[0].label == "radimagenet-resnet50@weights=resnet50_torch.pt"
    assert str(tmp_path) not in suite.encoders[0].label


# --------------------------------------------------------------------------- commands that need no model


def test_validate_starts_without_torch(tmp_path):
    code = ("import sys\nfrom crsbench.cli.main import app\n"
            "try:\n    app(['validate', 'demo-quick'], prog_name='crsbench')\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert "demo-quick: ok" in done.stdout, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


# --------------------------------------------------------------------------- small leftovers


def test_a_suite_folder_dataset_finds_images_under_images_as_select_does(tmp_path):
    from crsbench.datasets.registry import get_dataset
    from _cohort_folders import cohort_folder as _folder, cohort_rows as _rows

    folder = _folder(tmp_path, _rows({"nevus": 6, "melanoma": 6}))  # labels.csv beside images/
    dataset = get_dataset("folder", root=str(folder), csv=str(folder / "labels.csv"), label_columns="diagnosis")
    assert len(dataset.files) == 12 and all(path.parent == folder / "images" for path in dataset.files)


def test_a_refused_select_leaves_no_output_folder(tmp_path):
    from typer.testing import CliRunner

    from crsbench.cli.main import app
    from _cohort_folders import cohort_folder as _folder, cohort_rows as _rows

    folder = _folder(tmp_path, _rows({"nevus": 12, "melanoma": 12}))
    result = CliRunner().invoke(app, ["select", str(folder), "--encoders", "raw-pixels@input_size=16",
                                      "--label-column", "diagnosis", "-o", str(tmp_path / "out"), "--budget", "1s"])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("width", [80, 160])
def test_the_encoders_table_fits_and_keeps_names_and_values(width):
    from rich.console import Console

    from crsbench.cli.commands.encoders import registry_table

    view = registry_table()
    console = Console(width=width, record=True, color_system=None, soft_wrap=True)
    console.print(view)
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width and "…" not in text
    flat = "".join(text.split())  # a folded cell reads whole once the layout's spaces and rules are gone
    flat = flat.replace("│", "")
    for row in view.rows:
        assert any(row[0] in line for line in lines), row[0]  # the name whole, on one line
        for cell in row[1:]:
            assert "".join(str(cell).split())[:12] in flat, (row[0], cell)


@pytest.mark.slow  # a whole run in a fresh interpreter
def test_the_shortest_yaml_encoder_is_a_two_line_module_beside_its_suite(tmp_path):
    """`encoders: [my_lab:embed]` next to my_lab.py runs from any folder, with no PYTHONPATH."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_lab_short.py").write_text("def embed(images):\n    return images.mean(axis=(1, 2))\n")
    (project / "suite.yaml").write_text(textwrap.dedent("""
        name: shortest
        output: results
        encoders: [my_lab_short:embed]
        tasks: [{name: derm, dataset: {kind: demo, specialty: derm, n_train: 40, n_val: 20, n_test: 20}}]
        seeds: [0]
        fractions: [1.0]
        probe: {c_grid: [1.0]}
    """))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "crsbench", "run", str(project / "suite.yaml")],
                          capture_output=True, text=True, cwd=elsewhere, env={**os.environ, "PYTHONPATH": SRC})
    assert done.returncode == 0, done.stderr[-2000:]
    assert _encoders_in(project / "results") == {"my_lab_short:embed"}
