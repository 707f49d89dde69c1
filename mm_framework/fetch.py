"""Resolving media sources to raw bytes, under the request's byte limits.

Source forms, in precedence order (prefix checks are case-sensitive): ``http(s)://``,
``file://``, absolute paths, ``data:`` URLs, then bare base64. Bytes sources are taken
as they are. Every resolved source counts against the request budget.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Sequence

import attrs

from .errors import FetchError, LimitExceededError, MediaError, UnsupportedError
from .limits import Limits


@attrs.frozen
class FetchPolicy:
    """What a pipeline may fetch. The default allows every form and any target."""

    schemes: frozenset[str] = attrs.field(
        default=frozenset({"http", "https", "file", "path", "data", "base64"}), converter=frozenset
    )
    local_roots: tuple[str, ...] | None = attrs.field(
        default=None, converter=attrs.converters.optional(tuple)
    )
    allow_private_networks: bool = True
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=tuple)


class ByteBudget:
    """A request's shared byte budget; thread-safe so concurrent sources stop together."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._used = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        return self.total - self._used

    def claim(self, n: int) -> bool:
        with self._lock:
            if self._used + n > self.total:
                return False
            self._used += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self._used -= n


def base64_decode_strict(text: str) -> bytes:
    """Standard alphabet, canonical padding, no embedded whitespace."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as e:
        raise MediaError(f"media fetch: base64 decode: {e}") from None


def _decode_base64(text: str, max_bytes: int, budget: ByteBudget) -> bytes:
    text = text.strip()
    estimate = (len(text) + 3) // 4 * 3
    if estimate > max_bytes:
        raise LimitExceededError(f"media fetch: base64 payload exceeds {max_bytes} bytes")
    if not budget.claim(estimate):
        raise LimitExceededError(
            f"media fetch: base64 payload exceeds the request media byte budget "
            f"(decoded size {estimate} bytes, {budget.remaining} bytes remaining)"
        )
    try:
        data = base64_decode_strict(text)
    except BaseException:
        budget.release(estimate)
        raise
    budget.release(estimate - len(data))
    return data


def _read_file(path: str, max_bytes: int, budget: ByteBudget) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise FetchError(f"media fetch: {path}: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise LimitExceededError(f"media fetch: {path}: exceeds {max_bytes} bytes")
    if not budget.claim(len(data)):
        raise LimitExceededError(f"media fetch: {path}: exceeds the request media byte budget")
    return data


def fetch_source(source: str, *, max_bytes: int, budget: ByteBudget) -> bytes:
    if source.startswith(("http://", "https://")):
        raise UnsupportedError("media fetch: http(s) sources are not supported yet")
    if source.startswith("file://"):
        return _read_file(source[len("file://") :], max_bytes, budget)
    if source.startswith("/"):
        return _read_file(source, max_bytes, budget)
    if source.startswith("data:"):
        _, comma, payload = source.partition(",")
        if not comma:
            raise MediaError("media fetch: malformed data: URL")
        return _decode_base64(payload, max_bytes, budget)
    return _decode_base64(source, max_bytes, budget)


def resolve_sources(
    sources: Sequence[bytes | str], *, limits: Limits, policy: FetchPolicy | None = None
) -> list[bytes]:
    """Resolve every source inline, sequentially, in input order."""
    budget = ByteBudget(limits.max_request_bytes)
    out: list[bytes] = []
    for i, src in enumerate(sources):
        try:
            if isinstance(src, str):
                data = fetch_source(src, max_bytes=limits.max_source_bytes, budget=budget)
            else:
                data = bytes(src) if not isinstance(src, bytes) else src
                if len(data) > limits.max_source_bytes:
                    raise LimitExceededError(f"source of {len(data)} bytes exceeds {limits.max_source_bytes} bytes")
                if not budget.claim(len(data)):
                    raise LimitExceededError(
                        f"multimodal request exceeds {limits.max_request_bytes} total media bytes"
                    )
        except (FetchError, MediaError, LimitExceededError, UnsupportedError) as e:
            raise e.at_item(i) from None
        out.append(data)
    return out


def fetch_bytes(source: str) -> bytes:
    """One source with a budget of exactly one source's cap (64 MiB)."""
    limits = Limits()
    return fetch_source(source, max_bytes=limits.max_source_bytes, budget=ByteBudget(limits.max_source_bytes))




async def resolve_sources_async(
    sources: Sequence[bytes | str], *, limits: Limits, policy: FetchPolicy | None = None
) -> list[bytes]:
    """Like :func:`resolve_sources`, without blocking the event loop."""
    import asyncio

    return await asyncio.to_thread(resolve_sources, sources, limits=limits, policy=policy)
