"""Content hash: identity key of a media item, taken on its raw encoded bytes."""

from __future__ import annotations

from blake3 import blake3

from ..checks import check_bytes


def content_hash(data: bytes | bytearray | memoryview) -> int:
    """blake3 of ``data``, first 8 digest bytes as a big-endian unsigned 64-bit int."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        check_bytes(data, "content_hash")
    return int.from_bytes(blake3(data).digest(8), "big")
