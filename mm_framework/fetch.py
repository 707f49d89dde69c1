"""Resolving media sources to raw bytes, under the request's byte limits and a fetch policy.

Source forms, in precedence order (prefix checks are case-sensitive, as the reference):

====================  ==========  ====================================================
prefix                form        read as
====================  ==========  ====================================================
``http://``           ``http``    HTTP GET through httpx (below)
``https://``          ``https``   same, over TLS
``file://``           ``file``    the path after the prefix (``file:///a/x`` is ``/a/x``;
                                  ``file://rel`` is the relative path ``rel``)
``/``                 ``path``    that absolute path
``data:``             ``data``    everything after the first ``,``, strict base64 (the
                                  media type and ``;base64`` marker are not inspected)
anything else         ``base64``  strict base64 of the whole string
====================  ==========  ====================================================

So a bare base64 JPEG (``/9j/...``) is read as a path: send JPEG payloads as ``data:``
URLs. Bytes sources are taken as they are.

Limits: every source is capped at ``Limits.max_source_bytes`` and all sources of one
request share one :class:`ByteBudget` of ``Limits.max_request_bytes``. Bodies are
streamed and cut off as soon as a limit is crossed; ``Content-Length`` and file sizes
only let an oversize source fail earlier, they are never trusted to bound a read. A
base64 payload's decoded size is checked before it is decoded. Only regular files are
read (no directories, FIFOs or devices such as ``/dev/zero``).

HTTP: ``REQUEST_TIMEOUT`` (whole seconds, read per fetch; default 3) is an overall
deadline per source covering every redirect hop, connect, TLS and the body. Redirects
(301/302/303/307/308) are followed by hand, at most ``FetchPolicy.max_redirects``, each
hop re-checked against the policy. Status >= 400 is an error. ``gzip`` and ``deflate``
bodies are inflated here in bounded steps, so the caps apply to decoded bytes. Proxies
follow the reference's environment rules (:mod:`mm_framework.proxy`); httpx's own
environment handling is off.

Threading: nothing here touches the CPU fan-out pool (:mod:`mm_framework.par`).
:func:`resolve_sources` works inline on the caller's thread, one source after another.
:func:`resolve_sources_async` fetches a request's sources concurrently (at most
:data:`ASYNC_CONCURRENCY` at a time) with ``httpx.AsyncClient``; file reads and base64
decoding go to the event loop's default executor.

Errors: a policy refusal or I/O failure is a ``FetchError`` naming the rule or cause,
an undecodable ``data:``/base64 payload a ``MediaError``, a crossed cap a
``LimitExceededError``; :func:`resolve_sources` attributes each to its item index.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import contextvars
import errno
import functools
import http.cookiejar
import ipaddress
import os
import re
import socket
import stat
import threading
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from typing import Any, TypeVar

import anyio
import attrs
import httpcore
import httpx

from .errors import FetchError, InvalidInputError, LimitExceededError, MediaError, MmError
from .limits import Limits
from .proxy import parse_port, proxy_for, redact

T = TypeVar("T")

FORMS = ("http", "https", "file", "path", "data", "base64")
HTTP_FORMS = frozenset({"http", "https"})
CHUNK_BYTES = 256 * 1024  # largest piece inflated or read in one step
DEFAULT_TIMEOUT_S = 3
ASYNC_CONCURRENCY = 8  # concurrent fetches per request on the async path
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEADERS = {"Accept-Encoding": "gzip, deflate", "User-Agent": "mm-framework"}


# --------------------------------------------------------------------------- policy


def _schemes(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError("FetchPolicy.schemes must be a collection of form names, not one string")
    forms = frozenset(value)
    unknown = forms - set(FORMS)
    if unknown:
        raise ValueError(f"FetchPolicy.schemes: unknown form(s) {sorted(unknown)}; known: {list(FORMS)}")
    return forms


def _roots(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError("FetchPolicy.local_roots must be a sequence of directories, not one path")
    roots = tuple(os.fspath(r) for r in value)
    if any(not isinstance(r, str) or not r for r in roots):
        raise ValueError(f"FetchPolicy.local_roots: every root must be a non-empty str path, got {roots!r}")
    # Absolute now, so a later chdir cannot move the roots.
    return tuple(os.path.abspath(r) for r in roots)


def _allowed_entry(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` as ``(host, port or None)``."""
    if entry.startswith("["):
        host, close, rest = entry[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise ValueError(f"FetchPolicy.allowed_hosts: malformed entry {entry!r}")
        port_text = rest[1:] if rest else None
    elif entry.count(":") == 1:
        host, port_text = entry.split(":")
    elif ":" in entry:
        raise ValueError(f"FetchPolicy.allowed_hosts: write IPv6 hosts in brackets, got {entry!r}")
    else:
        host, port_text = entry, None
    port = None if port_text is None else parse_port(port_text)
    if not host or (port_text is not None and port is None):
        raise ValueError(f"FetchPolicy.allowed_hosts: malformed entry {entry!r} (expected host or host:port)")
    return host, port


def _hosts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError("FetchPolicy.allowed_hosts must be a sequence of entries, not one string")
    entries = tuple(value)
    if any(not isinstance(e, str) for e in entries):
        raise TypeError(f"FetchPolicy.allowed_hosts entries must be str, got {entries!r}")
    entries = tuple(e.strip().lower() for e in entries)
    for e in entries:
        _allowed_entry(e)
    return entries


def _non_negative(_inst: object, attr: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"FetchPolicy.{attr.name} must be an int >= 0, got {value!r}")


@attrs.frozen
class FetchPolicy:
    """What a pipeline may fetch. The default allows every form and any target, as the
    reference does; a server taking sources from untrusted clients should narrow it.

    * ``schemes``: the source forms allowed, among :data:`FORMS` (``"http"``, ``"https"``,
      ``"file"``, ``"path"``, ``"data"``, ``"base64"``). Redirects are only followed to
      allowed ``http``/``https`` URLs.
    * ``local_roots``: ``None`` allows any path; otherwise ``file``/``path`` sources must
      resolve (after symlinks and ``..``) inside one of these directories. An empty
      tuple allows no local file at all.
    * ``allow_private_networks``: when false, an HTTP target (every redirect hop too) is
      resolved before connecting and refused if any of its addresses is loopback,
      private, link-local, multicast, reserved, unspecified or otherwise not global. The
      connection then goes to the checked address, so DNS cannot swap it in between.
      Through a proxy the target is checked with local DNS (and refused if that fails);
      the proxy resolves it again on its own, so restrict the proxy as well.
    * ``allowed_hosts``: exceptions to the previous rule, ``host`` (any port) or
      ``host:port`` (IPv6 as ``[addr]`` / ``[addr]:port``), matched against the URL's
      host exactly (no subdomains) and its port (default ports filled in).
    * ``max_redirects``: redirects followed per source (5, as the reference's client).
    """

    schemes: frozenset[str] = attrs.field(default=frozenset(FORMS), converter=_schemes)
    local_roots: tuple[str, ...] | None = attrs.field(default=None, converter=_roots)
    allow_private_networks: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=_hosts)
    max_redirects: int = attrs.field(default=5, validator=_non_negative)


DEFAULT_POLICY = FetchPolicy()


def source_form(source: str) -> str:
    """Which of :data:`FORMS` a string source is, by the reference's precedence."""
    if source.startswith("http://"):
        return "http"
    if source.startswith("https://"):
        return "https"
    if source.startswith("file://"):
        return "file"
    if source.startswith("/"):
        return "path"
    if source.startswith("data:"):
        return "data"
    return "base64"


def _shown(source: str) -> str:
    """A source as error messages show it: no userinfo, and long text abbreviated."""
    source = redact(source)
    return source if len(source) <= 256 else f"{source[:128]}... ({len(source)} chars)"


def _check_form(form: str, policy: FetchPolicy) -> None:
    if form not in policy.schemes:
        allowed = ", ".join(f for f in FORMS if f in policy.schemes) or "none"
        raise FetchError(f"media fetch: {form} source refused by fetch policy schemes (allowed: {allowed})")


# --------------------------------------------------------------------------- byte limits


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


class _Collector:
    """One source's bytes as they arrive, under its cap and the request budget."""

    def __init__(self, what: str, max_bytes: int, budget: ByteBudget) -> None:
        self.what = what
        self.max_bytes = max_bytes
        self.budget = budget
        self.size = 0
        self._chunks: list[bytes] = []

    def _over_cap(self) -> LimitExceededError:
        return LimitExceededError(f"media fetch: {self.what}: exceeds {self.max_bytes} bytes")

    def _over_budget(self) -> LimitExceededError:
        return LimitExceededError(f"media fetch: {self.what}: exceeds the request media byte budget")

    def expect(self, declared: int) -> None:
        """Fail early on a declared size (Content-Length, file size) that cannot fit."""
        if declared > self.max_bytes:
            raise self._over_cap()
        if declared > self.budget.remaining:
            raise self._over_budget()

    def add(self, chunk: bytes) -> None:
        n = len(chunk)
        if self.size + n > self.max_bytes:
            raise self._over_cap()
        if not self.budget.claim(n):
            raise self._over_budget()
        self._chunks.append(chunk)
        self.size += n

    def result(self) -> bytes:
        return self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)


def _take_bytes(src: bytes | bytearray | memoryview, max_bytes: int, budget: ByteBudget) -> bytes:
    data = src if isinstance(src, bytes) else bytes(src)  # a private copy of mutable buffers
    if len(data) > max_bytes:
        raise LimitExceededError(f"media source of {len(data)} bytes exceeds {max_bytes} bytes")
    if not budget.claim(len(data)):
        raise LimitExceededError(f"media source of {len(data)} bytes exceeds the request media byte budget")
    return data


# --------------------------------------------------------------------------- base64


_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_FOREIGN = re.compile(rb"[^A-Za-z0-9+/]")


def _b64_error(detail: str) -> MediaError:
    return MediaError(f"media fetch: base64 decode: {detail}")


def _padding(text: str | bytes) -> int:
    pad = "=" if isinstance(text, str) else b"="
    return 2 if text.endswith(pad * 2) else 1 if text.endswith(pad) else 0


def base64_decode_strict(text: str | bytes) -> bytes:
    """Decode standard base64 exactly as the reference's engine accepts it.

    Surrounding whitespace is trimmed; inside, only ``A-Z a-z 0-9 + /`` are allowed,
    the length must be a multiple of 4 with ``=`` padding (at most two, only at the
    end), and the unused bits of the last symbol must be zero. Anything else is a
    ``MediaError`` saying what and where.
    """
    if isinstance(text, str):
        text = text.strip()
        if not text.isascii():
            offset = next(i for i, c in enumerate(text) if ord(c) > 127)
            raise _b64_error(f"invalid symbol {text[offset]!r} at offset {offset}")
        data = text.encode("ascii")
    else:
        data = bytes(text).strip()
    n = len(data)
    pad = _padding(data)
    # Everything that is not in the alphabet must be exactly the final padding.
    if len(data.translate(None, _B64_ALPHABET)) != pad:
        found = _B64_FOREIGN.search(data)
        assert found is not None
        at = found.start()
        if data[at] == ord("="):
            raise _b64_error(f"invalid padding at offset {at}")
        raise _b64_error(f"invalid symbol {chr(data[at])!r} at offset {at}")
    if n % 4:
        raise _b64_error(f"invalid length {n} (padding is required: length must be a multiple of 4)")
    if pad:
        last = n - pad - 1
        if _B64_ALPHABET.index(data[last]) & (0x0F if pad == 2 else 0x03):
            raise _b64_error(f"invalid last symbol {chr(data[last])!r} at offset {last} (non-zero trailing bits)")
    return binascii.a2b_base64(data)


def _decode_base64(text: str, what: str, max_bytes: int, budget: ByteBudget) -> bytes:
    text = text.strip()
    if not text:
        raise MediaError(f"media fetch: {what}: empty payload")
    estimate = (len(text) + 3) // 4 * 3 - _padding(text)
    if estimate > max_bytes:
        raise LimitExceededError(f"media fetch: base64 payload exceeds {max_bytes} bytes")
    if not budget.claim(estimate):
        raise LimitExceededError(
            f"media fetch: base64 payload: exceeds the request media byte budget "
            f"(decoded size {estimate} bytes, {budget.remaining} bytes remaining)"
        )
    try:
        data = base64_decode_strict(text)
    except BaseException:
        budget.release(estimate)
        raise
    budget.release(estimate - len(data))
    return data


# --------------------------------------------------------------------------- files


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


_PATH_HINT = " (sources starting with '/' are paths; send base64 as a data: URL)"


def _read_file(
    shown: str, path: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy, missing_hint: str = ""
) -> bytes:
    """Read one regular file, never more than ``max_bytes + 1`` bytes, never blocking on open.

    ``missing_hint`` is appended when the path does not exist (or cannot be a name).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if policy.local_roots is not None:
        # Checked before any stat, so files outside the roots cannot be probed for existence.
        path = os.path.realpath(path)
        if not any(_inside(path, os.path.realpath(root)) for root in policy.local_roots):
            raise FetchError(
                f"media fetch: {shown}: refused by fetch policy local_roots (resolves outside every allowed root)"
            )
        # The resolved path has no symlink left; one swapped in now is not followed.
        flags |= getattr(os, "O_NOFOLLOW", 0)
    sink = _Collector(shown, max_bytes, budget)
    try:
        # stat first: opening a device or FIFO can have side effects (or, without
        # O_NONBLOCK, block); fstat again after open in case the path was swapped.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise FetchError(f"media fetch: {shown}: not a regular file")
        fd = os.open(path, flags)
    except OSError as e:
        hint = missing_hint if e.errno in (errno.ENOENT, errno.ENAMETOOLONG) else ""
        raise FetchError(f"media fetch: {shown}: {e.strerror or e}{hint}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FetchError(f"media fetch: {shown}: not a regular file")
        sink.expect(st.st_size)
        want = st.st_size + 1  # one read for an honest size, one more to see EOF
        while True:
            try:
                chunk = os.read(fd, want)
            except OSError as e:
                raise FetchError(f"media fetch: read {shown}: {e.strerror or e}") from None
            if not chunk:
                return sink.result()
            sink.add(chunk)
            want = min(CHUNK_BYTES, max_bytes + 1 - sink.size)
    finally:
        os.close(fd)


def _fetch_local(source: str, form: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    """Every form but http(s): blocking file I/O or CPU-only decoding."""
    if form == "file":
        return _read_file(_shown(source), source[len("file://") :], max_bytes, budget, policy)
    if form == "path":
        return _read_file(_shown(source), source, max_bytes, budget, policy, _PATH_HINT)
    if form == "data":
        _, comma, payload = source.partition(",")
        if not comma:
            raise MediaError("media fetch: malformed data: URL (no comma before the payload)")
        return _decode_base64(payload, "data: URL", max_bytes, budget)
    return _decode_base64(source, "base64 source", max_bytes, budget)


# --------------------------------------------------------------------------- HTTP: policy


def request_timeout() -> int:
    """``REQUEST_TIMEOUT`` as whole seconds; unset, unparsable or non-positive means 3."""
    try:
        value = int(os.environ.get("REQUEST_TIMEOUT", "").strip())
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


class _Refused(Exception):
    """A policy refusal raised below httpx; the fetch loop reports it as a ``FetchError``."""


def _non_public_kind(address: str) -> str | None:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "non-global"


@attrs.frozen
class _AddressGuard:
    """``allow_private_networks=False``: which addresses a host may be connected at."""

    allowed: frozenset[tuple[str, int | None]]

    @classmethod
    def of(cls, policy: FetchPolicy) -> _AddressGuard | None:
        if policy.allow_private_networks:
            return None
        return cls(frozenset(_allowed_entry(e) for e in policy.allowed_hosts))

    def _exempt(self, host: str, port: int) -> bool:
        return (host, None) in self.allowed or (host, port) in self.allowed

    def _vet(self, host: str, infos: Sequence[tuple[Any, ...]]) -> list[str]:
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            kind = _non_public_kind(address)
            if kind is not None:
                raise _Refused(
                    f"refused by fetch policy allow_private_networks=False: {host} resolves to a {kind} "
                    f"address and is not in allowed_hosts"
                )
        return addresses

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to (all vetted); ``OSError`` if ``host`` does not resolve."""
        if self._exempt(host, port):
            return [host]
        return self._vet(host, socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))

    async def addresses_async(self, host: str, port: int) -> list[str]:
        if self._exempt(host, port):
            return [host]
        return self._vet(host, await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM))

    # Through a proxy, the proxy connects: the target is checked with local DNS first, and
    # refused when that fails (the proxy might resolve it to an internal address).

    def check_before_proxy(self, host: str, port: int) -> None:
        try:
            self.addresses(host, port)
        except OSError as e:
            raise self._unresolvable(host, e) from None

    async def check_before_proxy_async(self, host: str, port: int) -> None:
        try:
            await self.addresses_async(host, port)
        except OSError as e:
            raise self._unresolvable(host, e) from None

    @staticmethod
    def _unresolvable(host: str, e: OSError) -> _Refused:
        return _Refused(
            f"refused by fetch policy allow_private_networks=False: cannot resolve {host} to check it "
            f"before using the proxy ({e})"
        )


def _target_of(url: str) -> tuple[str, int]:
    """``(host, port)`` an http(s) URL connects to; ``httpx.InvalidURL`` if it has none."""
    parsed = httpx.URL(url)
    host = parsed.raw_host.decode("ascii")
    port = _DEFAULT_PORTS.get(parsed.scheme, 0) if parsed.port is None else parsed.port
    if not host or not 0 < port <= 0xFFFF:
        raise httpx.InvalidURL("invalid URL: no host, or a port outside 1-65535")
    return host, port


# --------------------------------------------------------------------------- HTTP: connections

# The overall deadline (time.monotonic) of the sync fetch running in this context.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("mm_fetch_deadline", default=None)


def _clip(timeout: float | None) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = max(deadline - time.monotonic(), 0.001)  # 0 would make the socket non-blocking
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """Every blocking socket call bounded by the fetch's remaining time, not a fresh timeout."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clip(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clip(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _clip(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _SyncBackend(httpcore.NetworkBackend):
    """Sync connections: deadline-bounded, and only to vetted addresses when guarded."""

    def __init__(self, guard: _AddressGuard | None) -> None:
        self._inner = httpcore.SyncBackend()
        self._guard = guard

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = [host]
        if self._guard is not None:
            try:
                addresses = self._guard.addresses(host, port)
            except OSError as e:
                raise httpcore.ConnectError(str(e)) from e
        error: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(address, port, _clip(timeout), local_address, socket_options)
            except httpcore.ConnectError as e:
                error = e
                continue
            return _DeadlineStream(stream)
        assert error is not None
        raise error

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncGuardBackend(httpcore.AsyncNetworkBackend):
    """Async connections only to vetted addresses (the deadline is ``asyncio.wait_for``)."""

    def __init__(self, guard: _AddressGuard) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._guard = guard

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self._guard.addresses_async(host, port)
        except OSError as e:
            raise httpcore.ConnectError(str(e)) from e
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as e:
                error = e
        assert error is not None
        raise error

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def _ssl_context() -> Any:
    return httpx.create_ssl_context()


def _pool(proxy: str | None, backend: Any, *, is_async: bool) -> Any:
    """An httpcore pool (direct or through an http(s) proxy) over ``backend``."""
    common = dict(
        ssl_context=_ssl_context(), max_connections=100, max_keepalive_connections=20,
        keepalive_expiry=5.0, network_backend=backend,
    )
    if proxy is None:
        return (httpcore.AsyncConnectionPool if is_async else httpcore.ConnectionPool)(**common)
    if not proxy.lower().startswith(("http://", "https://")):
        raise FetchError(f"media fetch: proxy {_shown(proxy)}: only http and https proxies are supported")
    spec = httpx.Proxy(proxy)
    url = httpcore.URL(scheme=spec.url.raw_scheme, host=spec.url.raw_host, port=spec.url.port, target=b"/")
    return (httpcore.AsyncHTTPProxy if is_async else httpcore.HTTPProxy)(
        proxy_url=url, proxy_auth=spec.raw_auth, proxy_headers=spec.headers.raw, **common
    )


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore errors as the httpx errors the fetch loop handles."""
    try:
        yield
    except httpcore.TimeoutException as e:
        raise httpx.TimeoutException(str(e)) from e
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, httpcore.UnsupportedProtocol) as e:
        raise httpx.TransportError(str(e) or type(e).__name__) from e


def _core_request(request: httpx.Request) -> httpcore.Request:
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=request.headers.raw,
        content=request.stream,
        extensions=request.extensions,
    )


class _SyncBody(httpx.SyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        self._stream.close()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        await self._stream.aclose()


class _SyncTransport(httpx.BaseTransport):
    """An httpx transport over our own httpcore pool (httpx's takes no network backend)."""

    def __init__(self, pool: httpcore.ConnectionPool) -> None:
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with _httpx_errors():
            resp = self._pool.handle_request(_core_request(request))
        return httpx.Response(
            resp.status, headers=resp.headers, stream=_SyncBody(resp.stream), extensions=resp.extensions
        )

    def close(self) -> None:
        self._pool.close()


class _AsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        with _httpx_errors():
            resp = await self._pool.handle_async_request(_core_request(request))
        return httpx.Response(
            resp.status, headers=resp.headers, stream=_AsyncBody(resp.stream), extensions=resp.extensions
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


def _client_options() -> dict[str, Any]:
    """Settings every client shares. Redirects are ours; so is the proxy environment; and
    clients are shared across requests (and callers), so no cookie is ever kept."""
    no_cookies = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    return dict(trust_env=False, follow_redirects=False, headers=_HEADERS, cookies=no_cookies)


_sync_clients: dict[tuple[str | None, _AddressGuard | None], httpx.Client] = {}
_sync_clients_lock = threading.Lock()


def _sync_client(proxy: str | None, guard: _AddressGuard | None) -> httpx.Client:
    """A process-wide client per (proxy, guard): connections are reused across requests."""
    key = (proxy, guard if proxy is None else None)
    with _sync_clients_lock:
        client = _sync_clients.get(key)
        if client is None:
            transport = _SyncTransport(_pool(proxy, _SyncBackend(key[1]), is_async=False))
            client = httpx.Client(transport=transport, **_client_options())
            _sync_clients[key] = client
        return client


class _AsyncClients:
    """One request's async clients, one per proxy setting, closed with the request.

    Async connections are bound to their event loop, so they are not pooled across
    requests (a caller may run several loops).
    """

    def __init__(self, guard: _AddressGuard | None) -> None:
        self._guard = guard
        self._clients: dict[str | None, httpx.AsyncClient] = {}

    def get(self, proxy: str | None) -> httpx.AsyncClient:
        client = self._clients.get(proxy)
        if client is None:
            backend = _AsyncGuardBackend(self._guard) if proxy is None and self._guard is not None else None
            transport = _AsyncTransport(_pool(proxy, backend, is_async=True))
            client = httpx.AsyncClient(transport=transport, timeout=None, **_client_options())
            self._clients[proxy] = client
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()


# --------------------------------------------------------------------------- HTTP: bodies


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


class _Body:
    """A response body decoded and collected as its raw chunks arrive."""

    def __init__(self, resp: httpx.Response, what: str, max_bytes: int, budget: ByteBudget) -> None:
        codings = [c.strip().lower() for c in resp.headers.get("content-encoding", "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        for c in codings:
            if c not in _WBITS:
                raise FetchError(f"media fetch: read {what}: unsupported Content-Encoding {c!r}")
        # The last coding applied is the first undone.
        self._stages = [_Inflater(c, what) for c in reversed(codings)]
        self._sink = _Collector(what, max_bytes, budget)
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


# --------------------------------------------------------------------------- HTTP: requests


class _Hops:
    """The URL being fetched, following redirects by hand so each hop is re-checked."""

    def __init__(self, url: str, policy: FetchPolicy) -> None:
        self.start = url
        self.url = url
        self.policy = policy
        self.count = 0

    def follow(self, resp: httpx.Response) -> bool:
        """Move to ``resp``'s redirect target; False when ``resp`` is the final response."""
        location = resp.headers.get("location")
        if resp.status_code not in _REDIRECT_STATUSES or location is None:
            return False
        shown = _shown(self.url)
        if self.count >= self.policy.max_redirects:
            raise FetchError(
                f"media fetch: GET {_shown(self.start)}: too many redirects (more than {self.policy.max_redirects})"
            )
        try:
            target = resp.url.join(location)
        except httpx.InvalidURL as e:
            raise FetchError(f"media fetch: GET {shown}: invalid redirect location: {e}") from None
        if target.scheme not in HTTP_FORMS:
            raise FetchError(
                f"media fetch: GET {shown}: redirect to a {target.scheme}: URL refused "
                f"(only http and https are followed)"
            )
        if target.scheme not in self.policy.schemes:
            raise FetchError(f"media fetch: GET {shown}: redirect to {target.scheme} refused by fetch policy schemes")
        self.count += 1
        self.url = str(target)
        return True

    def body(self, resp: httpx.Response, max_bytes: int, budget: ByteBudget) -> _Body:
        """The collector for the final response's body; status >= 400 is an error."""
        if resp.status_code >= 400:
            status = f"{resp.status_code} {resp.reason_phrase}".rstrip()
            raise FetchError(f"media fetch: GET {_shown(self.url)}: HTTP status {status}")
        return _Body(resp, _shown(self.url), max_bytes, budget)


@contextlib.contextmanager
def _as_fetch_error(hops: _Hops, timeout: int) -> Iterator[None]:
    """Client-side failures of one HTTP source as ``FetchError`` naming the URL at fault."""
    try:
        yield
    except (asyncio.TimeoutError, httpx.TimeoutException):
        shown = _shown(hops.url)
        raise FetchError(f"media fetch: GET {shown}: timed out after {timeout} s (REQUEST_TIMEOUT)") from None
    except (_Refused, httpx.HTTPError, httpx.InvalidURL) as e:
        raise FetchError(f"media fetch: GET {_shown(hops.url)}: {e}") from None


def _http_get(url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    timeout = request_timeout()
    deadline = time.monotonic() + timeout
    guard = _AddressGuard.of(policy)
    hops = _Hops(url, policy)
    token = _DEADLINE.set(deadline)
    try:
        with _as_fetch_error(hops, timeout):
            while True:
                host, port = _target_of(hops.url)
                proxy = proxy_for(hops.url)
                if proxy is not None and guard is not None:
                    guard.check_before_proxy(host, port)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise httpx.TimeoutException("deadline passed")
                with _sync_client(proxy, guard).stream("GET", hops.url, timeout=httpx.Timeout(left)) as resp:
                    if hops.follow(resp):
                        continue
                    body = hops.body(resp, max_bytes, budget)
                    for raw in resp.iter_raw():
                        body.feed(raw)
                    return body.result()
    finally:
        _DEADLINE.reset(token)


async def _http_get_async(
    url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy, clients: _AsyncClients
) -> bytes:
    guard = _AddressGuard.of(policy)
    hops = _Hops(url, policy)

    async def follow() -> bytes:
        while True:
            host, port = _target_of(hops.url)
            proxy = proxy_for(hops.url)
            if proxy is not None and guard is not None:
                await guard.check_before_proxy_async(host, port)
            async with clients.get(proxy).stream("GET", hops.url) as resp:
                if hops.follow(resp):
                    continue
                body = hops.body(resp, max_bytes, budget)
                async for raw in resp.aiter_raw():
                    body.feed(raw)
                return body.result()

    timeout = request_timeout()
    with _as_fetch_error(hops, timeout):
        return await asyncio.wait_for(follow(), timeout)


# --------------------------------------------------------------------------- entry points


def _resolve_one(src: Any, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    if isinstance(src, str):
        form = source_form(src)
        _check_form(form, policy)
        if form in HTTP_FORMS:
            return _http_get(src, max_bytes, budget, policy)
        return _fetch_local(src, form, max_bytes, budget, policy)
    if isinstance(src, (bytes, bytearray, memoryview)):
        return _take_bytes(src, max_bytes, budget)
    raise InvalidInputError(f"unsupported source type {type(src).__name__}; expected bytes or str")


def resolve_sources(
    sources: Sequence[bytes | str], *, limits: Limits, policy: FetchPolicy | None = None
) -> list[bytes]:
    """Resolve every source inline on the caller's thread, sequentially, in input order.

    The first failure rejects the request, attributed to its item index.
    """
    policy = DEFAULT_POLICY if policy is None else policy
    budget = ByteBudget(limits.max_request_bytes)
    out: list[bytes] = []
    for i, src in enumerate(sources):
        try:
            out.append(_resolve_one(src, limits.max_source_bytes, budget, policy))
        except MmError as e:
            raise e.at_item(i) from None
    return out


def fetch_bytes(source: str) -> bytes:
    """One source with the default policy and a budget of exactly one source cap (64 MiB)."""
    cap = Limits().max_source_bytes
    return _resolve_one(source, cap, ByteBudget(cap), DEFAULT_POLICY)


async def _all_or_first_error(jobs: Sequence[Awaitable[T]]) -> list[T]:
    """Results in order; on the first failure the rest are cancelled and the failure of
    the lowest index among those that finished is raised."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        if tasks:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return [task.result() for task in tasks]


async def resolve_sources_async(
    sources: Sequence[bytes | str], *, limits: Limits, policy: FetchPolicy | None = None
) -> list[bytes]:
    """Like :func:`resolve_sources`, concurrently and without blocking the event loop.

    At most :data:`ASYNC_CONCURRENCY` sources are fetched at once. The budget is shared,
    so which item crosses it first can differ from the sync path.
    """
    policy = DEFAULT_POLICY if policy is None else policy
    budget = ByteBudget(limits.max_request_bytes)
    cap = limits.max_source_bytes
    gate = asyncio.Semaphore(ASYNC_CONCURRENCY)
    clients = _AsyncClients(_AddressGuard.of(policy))

    async def one(i: int, src: Any) -> bytes:
        try:
            if not isinstance(src, str):
                return _resolve_one(src, cap, budget, policy)
            form = source_form(src)
            _check_form(form, policy)
            async with gate:
                if form in HTTP_FORMS:
                    return await _http_get_async(src, cap, budget, policy, clients)
                return await asyncio.to_thread(_fetch_local, src, form, cap, budget, policy)
        except MmError as e:
            raise e.at_item(i) from None

    try:
        return await _all_or_first_error([one(i, src) for i, src in enumerate(sources)])
    finally:
        await clients.aclose()
