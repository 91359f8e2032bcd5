"""An encoder is identified by what its files hold, not their names: weights replaced in place, or a
factory's code edited, are embedded again, and the old records stay beside the new ones, never mixed."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

timm = pytest.importorskip("timm")
torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from crsbench import api  # noqa: E402
from crsbench.encoders import registry  # noqa: E402
from crsbench.encoders.adapters.weights import path_identity  # noqa: E402
from crsbench.plan.suite import parse_suite  # noqa: E402

SIZES = {"n_train": 40, "n_val": 16, "n_test": 24, "image_size": 32}


def _save_weights(path, seed: int) -> None:
    from safetensors.torch import save_file

    torch.manual_seed(seed)
    model = timm.create_model("test_vit", pretrained=False)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))


@pytest.fixture
def tiny_vit_entry(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    registry.encoder_names()
    monkeypatch.setattr(registry, "_ENTRIES", dict(registry._ENTRIES))
    cfg = timm.create_model("test_vit", pretrained=False).pretrained_cfg
    crop = cfg["input_size"][-1]
    spec = registry.encoder_spec("vit-b16-in21k").replace(
        name="tiny-vit", crop=crop, resize=int(crop / cfg["crop_pct"]), mean=tuple(cfg["mean"]),
        std=tuple(cfg["std"]), embed_dim=64, adapter={"arch": "test_vit"}, hub_repo=None, revision=None,
        how_to_get="a test file",
    )
    registry.register_encoder(spec)
    return spec


def _suite(tmp_path, weights):
    return parse_suite({
        "name": "stale", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": [{"name": "tiny-vit", "options": {"weights": str(weights)}}, "raw-pixels"],
        "tasks": [{"name": "derm", "dataset": {"kind": "demo", "specialty": "derm", **SIZES}}],
        "seeds": [0], "fractions": [1.0], "probe": {"c_grid": [1.0]},
        "perturbations": {"select": "none"}, "batch_size": 8,
    })


def test_weights_replaced_in_place_are_embedded_again_and_scored_apart(tmp_path, tiny_vit_entry):
    weights = tmp_path / "model.safetensors"
    _save_weights(weights, seed=0)
    first = api.run(_suite(tmp_path, weights))
    before = api.records(tmp_path / "out")
    _save_weights(weights, seed=1)  # a retrained model, same file name, same size
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    second = api.run(_suite(tmp_path, weights))
    assert first.forward_passes > 0 and second.forward_passes > 0  # not served from the cache
    assert (first.written, second.written) == (2, 1)  # only the changed encoder's record, beside the old one
    after = api.records(tmp_path / "out")
    vit = after[after["encoder"].str.startswith("tiny-vit")]
    assert vit["encoder_fingerprint"].nunique() == 2 and len(after) == 2 * len(before) - 1  # raw-pixels: once
    old_version = before.loc[before["encoder"].str.startswith("tiny-vit"), "encoder_fingerprint"].iloc[0]
    old, new = vit[vit["encoder_fingerprint"] == old_version], vit[vit["encoder_fingerprint"] != old_version]
    assert not np.isclose(old["auroc"].iloc[0], new["auroc"].iloc[0])  # other weights, other numbers
    scored = api.score(tmp_path / "out", reference="raw-pixels", n_boot=50)
    assert any("on derm: its weights or code changed" in note for note in scored.notes)
    assert any(" 1 older records kept in the store" in note for note in scored.notes)


def test_the_identity_follows_the_file_and_the_mode(tmp_path):
    file = tmp_path / "w.bin"
    file.write_bytes(b"a" * 100)
    by_time, by_content = path_identity(file, "mtime"), path_identity(file, "content")
    file.write_bytes(b"b" * 100)  # same size
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert path_identity(file, "mtime") != by_time and path_identity(file, "content") != by_content
    by_content = path_identity(file, "content")
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5 * 10**9))  # touched, same bytes
    assert path_identity(file, "content") == by_content  # content mode: survives a copy that resets times
    folder_before = path_identity(tmp_path, "mtime")
    (tmp_path / "config.json").write_text("{}")  # a folder's identity covers every file at its top
    assert path_identity(tmp_path, "mtime") != folder_before


def test_a_factory_whose_code_changes_gets_a_new_fingerprint(tmp_path, monkeypatch):
    module = tmp_path / "my_encoders.py"
    body = '''
import numpy as np
from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.spec import EncoderSpec

def make():
    spec = EncoderSpec(name="mine", source="user", identifier="mine", licence="-", resize=8, mean=(0,) * 3,
                       std=(1,) * 3, output="pooled", embed_dim=3, adapter={})
    return CallableEncoder(spec, lambda x: x.mean(axis=(1, 2)) * SCALE)
'''
    module.write_text(body.replace("SCALE", "1"))
    monkeypatch.syspath_prepend(str(tmp_path))
    first = registry.get_encoder("my_encoders:make").spec.fingerprint()
    module.write_text(body.replace("SCALE", "2"))
    sys.modules.pop("my_encoders", None)
    second = registry.get_encoder("my_encoders:make").spec
    assert second.fingerprint() != first and "+code-" in second.revision


def test_weights_a_factory_is_given_are_part_of_its_identity(tmp_path, monkeypatch):
    module = tmp_path / "my_weighted.py"
    module.write_text('''
from crsbench.encoders.base import CallableEncoder
from crsbench.encoders.spec import EncoderSpec

def make(weights):
    spec = EncoderSpec(name="mine", source="user", identifier="mine", licence="-", resize=8, mean=(0,) * 3,
                       std=(1,) * 3, output="pooled", embed_dim=3, adapter={})
    return CallableEncoder(spec, lambda x: x.mean(axis=(1, 2)))
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"one")
    first = registry.get_encoder("my_weighted:make", weights=str(weights)).spec
    weights.write_bytes(b"two")
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    second = registry.get_encoder("my_weighted:make", weights=str(weights)).spec
    assert "+weights-" in first.revision and second.fingerprint() != first.fingerprint()
