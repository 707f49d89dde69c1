"""Content hash: identity key of a media item, taken on its raw encoded bytes, or for an
item given decoded, a keyed hash of its pixels (:func:`keyed_digest`)."""

from __future__ import annotations

from blake3 import blake3

from ..checks import check_bytes


def content_hash(data: bytes | bytearray | memoryview) -> int:
    """blake3 of ``data``, first 8 digest bytes as a big-endian unsigned 64-bit int."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        check_bytes(data, "content_hash")
    return int.from_bytes(blake3(data).digest(8), "big")


def keyed_digest(context: str, *parts: bytes | memoryview) -> int:
    """blake3 in key-derivation mode with ``context`` over ``parts`` in order, first 8 digest
    bytes as a big-endian unsigned 64-bit int: a decoded item's hash, which its own context
    keeps apart from the plain hash of any encoded source."""
    h = blake3(derive_key_context=context)
    for part in parts:
        h.update(part)
    return int.from_bytes(h.digest(8), "big")


class LazyHash:
    """A decoded item's ``hash``, computed by its ``_digest()`` on first use and kept, so a
    pipeline built with ``hashes=False`` never pays for it. No lock (``functools.cached_property``
    takes one per class before Python 3.12, which would serialize the items' hashing): two
    threads racing compute the same value."""

    def _digest(self) -> int:
        raise NotImplementedError

    @property
    def hash(self) -> int:
        found = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = self._digest()
        return found
