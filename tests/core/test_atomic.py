"""Files written atomically get the mode the user's umask gives, as a plain `open` would, not mkstemp's 0600."""

from __future__ import annotations

import os
import stat

import pytest

from crsbench.core.atomic import atomic_write, current_umask


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077, 0o027])
def test_atomic_write_follows_the_umask(tmp_path, mask):
    previous = os.umask(mask)
    try:
        assert current_umask() == mask
        target = tmp_path / "shared" / "bundle.zip"
        atomic_write(target, lambda f: f.write(b"payload"))
        plain = tmp_path / "plain.txt"
        plain.write_bytes(b"payload")
    finally:
        os.umask(previous)
    assert target.read_bytes() == b"payload"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask == stat.S_IMODE(plain.stat().st_mode)


def test_a_failed_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "out.bin"

    def fail(f):
        f.write(b"half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        atomic_write(target, fail)
    assert list(tmp_path.iterdir()) == []
