"""A trace's seal: a CRC-32 of the whole HDF5 file in its first bytes (an HDF5 user block, which HDF5 itself
skips), written when the trace is complete and checked before HDF5 reads anything.

HDF5 trusts its own metadata: a flipped bit in a B-tree node can crash the library, not raise an error. A
trace whose seal does not match its bytes is refused with one line, before h5py touches it.
"""

from __future__ import annotations

import re
import zlib

SEAL_BYTES = 512  # the HDF5 user block the seal lives in (the file's HDF5 part starts after it)
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"  # at offset 0 of a plain HDF5 file, at SEAL_BYTES of a sealed trace
_READ_BYTES = 1 << 22
_SEAL = re.compile(rb"hwsim-trace-seal v1 crc32=([0-9a-f]{8}) bytes=([0-9]{1,15})\n")


def file_crc32(path: str, offset: int = SEAL_BYTES) -> tuple[int, int]:
    """(CRC-32, byte count) of the file from `offset` to its end."""
    crc, size = 0, 0
    with open(path, "rb") as stream:
        stream.seek(offset)
        while chunk := stream.read(_READ_BYTES):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return crc, size


def seal(path: str) -> None:
    """Write the seal of a closed trace file written with a SEAL_BYTES user block."""
    crc, size = file_crc32(path)
    line = f"hwsim-trace-seal v1 crc32={crc:08x} bytes={size}\n".encode()
    with open(path, "r+b") as stream:
        stream.write(line.ljust(SEAL_BYTES, b"\0"))


def is_sealed_layout(path: str) -> bool:
    """Whether the file's HDF5 part starts after a seal's user block (a trace of this format), judged by the
    HDF5 signature's place."""
    with open(path, "rb") as stream:
        head = stream.read(SEAL_BYTES + len(HDF5_SIGNATURE))
    return head[:len(HDF5_SIGNATURE)] != HDF5_SIGNATURE and head[SEAL_BYTES:] == HDF5_SIGNATURE


def seal_problem(path: str) -> str:
    """What is wrong with a sealed-layout trace's seal ('' when it matches the file)."""
    with open(path, "rb") as stream:
        found = _SEAL.match(stream.read(SEAL_BYTES))
    if found is None:
        return "its seal (the checksum in its first bytes) is damaged"
    crc, size = file_crc32(path)
    if size != int(found.group(2)):
        return (f"it holds {size:,} bytes after its seal, which says {int(found.group(2)):,}: cut short or changed "
                "after it was written")
    if crc != int(found.group(1), 16):
        return "its bytes do not match its checksum: changed after it was written"
    return ""

