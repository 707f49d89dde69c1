"""HTTP response bodies: content codings undone in bounded steps, then capped and collected."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import httpx

from ..errors import FetchError
from .policy import CHUNK_BYTES, ByteBudget, Collector


_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _Inflater:
    """One content coding undone in steps of at most CHUNK_BYTES, so a bomb is cut early."""

    def __init__(self, encoding: str, what: str) -> None:
        self.encoding = encoding
        self.what = what
        self._z = zlib.decompressobj(_WBITS[encoding])
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while not self._z.eof:
            try:
                out = self._z.decompress(data, CHUNK_BYTES)
            except zlib.error as e:
                if self.encoding == "deflate" and not self._started:
                    # Many servers label raw deflate (no zlib header) as "deflate".
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise FetchError(f"media fetch: read {self.what}: invalid {self.encoding} body ({e})") from None
            self._started = True
            if out:
                yield out
            data = self._z.unconsumed_tail
            # A full step may leave output pending inside zlib: drain it before returning.
            if not data and len(out) < CHUNK_BYTES:
                return

    def finish(self) -> None:
        if not self._z.eof:
            raise FetchError(f"media fetch: read {self.what}: truncated {self.encoding} body")


class Body:
    """A response body decoded and collected as its raw chunks arrive."""

    def __init__(self, resp: httpx.Response, what: str, max_bytes: int, budget: ByteBudget) -> None:
        codings = [c.strip().lower() for c in resp.headers.get("content-encoding", "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        for c in codings:
            if c not in _WBITS:
                raise FetchError(f"media fetch: read {what}: unsupported Content-Encoding {c!r}")
        # The last coding applied is the first undone.
        self._stages = [_Inflater(c, what) for c in reversed(codings)]
        self._sink = Collector(what, max_bytes, budget)
        declared = resp.headers.get("content-length", "")
        if not codings and declared.isascii() and declared.isdigit():
            self._sink.expect(int(declared))

    def _through(self, data: bytes, stage: int) -> Iterator[bytes]:
        if stage == len(self._stages):
            yield data
            return
        for out in self._stages[stage].feed(data):
            yield from self._through(out, stage + 1)

    def feed(self, raw: bytes) -> None:
        for piece in self._through(raw, 0):
            self._sink.add(piece)

    def result(self) -> bytes:
        for stage in self._stages:
            stage.finish()
        return self._sink.result()
