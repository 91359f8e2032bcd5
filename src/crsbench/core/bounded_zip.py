"""A zip from an untrusted source opened only within stated bounds, and its members read only as far as
they declare.

`zipfile.ZipFile` builds an entry for every member of the central directory before anyone can count
them (four million members cost gigabytes), so the count and the directory's size are read first from
the end-of-central-directory record, 22 bytes plus a comment of at most 64 KiB. Every zip feature the
reader does not handle is refused by name rather than met as an exception deep in a read: encryption
(flag bits 0 and 6), patched data (bit 5), any compression but stored and deflate. A stream that does
not inflate is named as a damaged member.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

_END = b"PK\x05\x06"
_END64_LOCATOR = b"PK\x06\x07"
_END64 = b"PK\x06\x06"
_END_BYTES = 22
_COMMENT_MAX = 0xFFFF
# one central-directory entry: 46 fixed bytes, then its name, extra fields and comment; a bundle's names are
# under 500 characters and it writes no comment, so 1 kB an entry is ample (zipfile parses the whole directory)
_DIRECTORY_ENTRY_BYTES = 46 + 1024

# flag bit -> the feature it announces, refused by name (APPNOTE 4.4.4)
UNSUPPORTED_FLAGS = {0x1: "encrypted", 0x20: "patched data", 0x40: "strong encryption"}
COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
COMPRESSION_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma", 93: "zstandard", 95: "xz", 98: "ppmd",
                     97: "wavpack", 99: "AE-x encryption"}


class ZipRefused(ValueError):
    """A zip this reader will not open or read; the message names the member where there is one."""


@dataclass(frozen=True)
class Directory:
    members: int  # entries the central directory declares
    size: int  # its bytes


def directory(path: str | Path) -> Directory:
    """What the end of the zip declares of its central directory, read without reading the directory."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        length = handle.tell()
        tail_start = max(0, length - _END_BYTES - _COMMENT_MAX)
        handle.seek(tail_start)
        tail = handle.read()
        at = tail.rfind(_END)
        if at < 0 or len(tail) - at < _END_BYTES:
            raise ZipRefused("not a bundle (not a zip file: no end of central directory)")
        members, size = struct.unpack_from("<xxxxxxxxxxHI", tail, at)
        locator = at - 20
        if locator >= 0 and tail[locator:locator + 4] == _END64_LOCATOR:
            (offset,) = struct.unpack_from("<Q", tail, locator + 8)
            if not 0 <= offset <= length - 56:
                raise ZipRefused("damaged zip (its zip64 directory record lies outside the file)")
            handle.seek(offset)
            record = handle.read(56)
            if record[:4] != _END64:
                raise ZipRefused("damaged zip (no zip64 directory record where its locator points)")
            members64, size64 = struct.unpack_from("<QQ", record, 32)
            members, size = max(members, members64), max(size, size64)
    return Directory(members, size)


def open_bounded(path: str | Path, max_members: int) -> zipfile.ZipFile:
    """The zip at `path`, opened only once its declared member count and directory size are within bounds."""
    found = directory(path)
    if found.members > max_members:
        raise ZipRefused(f"{found.members} files, more than the {max_members} a bundle may hold")
    if found.size > max(found.members, 1) * _DIRECTORY_ENTRY_BYTES:
        raise ZipRefused(f"a central directory of {found.size} bytes for {found.members} files (damaged or hostile)")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, struct.error) as exc:
        raise ZipRefused(f"not a bundle (not a zip file: {exc})") from None
    if len(archive.infolist()) > max_members:  # the directory held more than its end record said
        archive.close()
        raise ZipRefused(f"more files than the {max_members} a bundle may hold")
    return archive


def unsupported(info: zipfile.ZipInfo) -> str | None:
    """The zip feature of this member the reader does not handle, by name; None when it is plain."""
    for bit, feature in UNSUPPORTED_FLAGS.items():
        if info.flag_bits & bit:
            return feature
    if info.compress_type not in COMPRESSION:
        name = COMPRESSION_NAMES.get(info.compress_type, "unknown")
        return f"compression method {info.compress_type} ({name})"
    return None


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, chunk: int = 1 << 20):
    """The member's bytes chunk by chunk, never more than its declared size and one chunk; a stream that
    does not inflate or check out (CRC) is refused as a damaged member."""
    read = 0
    try:
        with archive.open(info) as handle:
            while read <= info.file_size:
                data = handle.read(chunk)
                if not data:
                    break
                read += len(data)
                yield data
    except (zlib.error, zipfile.BadZipFile, EOFError) as exc:
        raise ZipRefused(f"{info.filename}: damaged member ({_reason(exc)})") from None
    except NotImplementedError as exc:  # a feature the checks above did not name
        raise ZipRefused(f"{info.filename}: {exc}") from None


def member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The whole member, checked to hold exactly its declared size."""
    data = b"".join(read_member(archive, info))
    if len(data) != info.file_size:
        raise ZipRefused(f"{info.filename}: holds {len(data)} bytes, its header says {info.file_size}")
    return data


def _reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0][:80] if str(exc) else ""
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
