"""A zip from an untrusted source: its member count read from the end record before the directory is
parsed, unsupported features named, damaged streams named."""

from __future__ import annotations

import struct
import zipfile

import pytest

from crsbench.core.bounded_zip import ZipRefused, directory, member_bytes, open_bounded, unsupported


def _zip(path, n: int, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression) as archive:
        for i in range(n):
            archive.writestr(f"m{i}.json", b'{"a": 1}' * 50)
    return path


def test_the_member_count_is_read_from_the_end_record_and_bounded_before_the_directory(tmp_path):
    path = _zip(tmp_path / "five.zip", 5)
    assert directory(path).members == 5
    with open_bounded(path, 5) as archive:
        assert len(archive.infolist()) == 5
    with pytest.raises(ZipRefused, match="5 files, more than the 4"):
        open_bounded(path, 4)


def test_a_directory_larger_than_its_entries_can_be_is_refused(tmp_path):
    path = _zip(tmp_path / "big.zip", 2)
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<I", data, end + 12, 10 << 20)  # the directory's declared size
    path.write_bytes(bytes(data))
    with pytest.raises(ZipRefused, match="a central directory of 10485760 bytes for 2 files"):
        open_bounded(path, 100)


def test_not_a_zip_is_refused(tmp_path):
    path = tmp_path / "junk.zip"
    path.write_bytes(b"not a zip" * 100)
    with pytest.raises(ZipRefused, match="not a zip file"):
        open_bounded(path, 10)


@pytest.mark.parametrize("flags, method, said", [(0x1, None, "encrypted"), (0x20, None, "patched data"),
                                                 (0x40, None, "strong encryption"),
                                                 (0, zipfile.ZIP_LZMA, "compression method 14 (lzma)"),
                                                 (0, 77, "compression method 77 (unknown)"), (0, None, None)])
def test_each_unsupported_feature_is_named(flags, method, said):
    info = zipfile.ZipInfo("x.json")
    info.flag_bits |= flags
    info.compress_type = zipfile.ZIP_STORED if method is None else method
    assert unsupported(info) == said


def test_a_stream_that_does_not_inflate_is_a_damaged_member(tmp_path):
    path = _zip(tmp_path / "deflated.zip", 1, zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    data[40:48] = b"\xff" * 8  # inside the first member's compressed data
    path.write_bytes(bytes(data))
    with open_bounded(path, 10) as archive, pytest.raises(ZipRefused, match=r"m0.json: damaged member \("):
        member_bytes(archive, archive.infolist()[0])
