"""HTTP(S) sources: the sync and async GET behind :mod:`mm_framework.fetch`.

``REQUEST_TIMEOUT`` (whole seconds, read per fetch; default 3) is an overall deadline
per source covering every redirect hop, connect, TLS and the body. Redirects
(301/302/303/307/308) are followed by hand, at most ``FetchPolicy.max_redirects``, each
hop re-checked against the policy. Status >= 400 is an error. ``gzip`` and ``deflate``
bodies are inflated here in bounded steps, so the caps apply to decoded bytes. Proxies
follow the reference's environment rules (:mod:`mm_framework.proxy`); httpx's own
environment handling is off.

Connections go through httpcore pools built here, over network backends that bound
every socket call by the deadline (sync) and, under ``allow_private_networks=False``,
connect only to vetted addresses. Sync clients are shared process-wide; async ones
live for one request (:class:`AsyncClients`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import http.cookiejar
import ipaddress
import os
import socket
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anyio
import attrs
import httpcore
import httpx

from .errors import FetchError
from .fetch_policy import CHUNK_BYTES, HTTP_FORMS, ByteBudget, Collector, FetchPolicy, allowed_entry, shown_source
from .proxy import proxy_for

DEFAULT_TIMEOUT_S = 3
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEADERS = {"Accept-Encoding": "gzip, deflate", "User-Agent": "mm-framework"}


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
class AddressGuard:
    """``allow_private_networks=False``: which addresses a host may be connected at."""

    allowed: frozenset[tuple[str, int | None]]

    @classmethod
    def of(cls, policy: FetchPolicy) -> AddressGuard | None:
        if policy.allow_private_networks:
            return None
        return cls(frozenset(allowed_entry(e) for e in policy.allowed_hosts))

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

    def __init__(self, guard: AddressGuard | None) -> None:
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

    def __init__(self, guard: AddressGuard) -> None:
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
        raise FetchError(f"media fetch: proxy {shown_source(proxy)}: only http and https proxies are supported")
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


_sync_clients: dict[tuple[str | None, AddressGuard | None], httpx.Client] = {}
_sync_clients_lock = threading.Lock()


def _sync_client(proxy: str | None, guard: AddressGuard | None) -> httpx.Client:
    """A process-wide client per (proxy, guard): connections are reused across requests."""
    key = (proxy, guard if proxy is None else None)
    with _sync_clients_lock:
        client = _sync_clients.get(key)
        if client is None:
            transport = _SyncTransport(_pool(proxy, _SyncBackend(key[1]), is_async=False))
            client = httpx.Client(transport=transport, **_client_options())
            _sync_clients[key] = client
        return client


class AsyncClients:
    """One request's async clients, one per proxy setting, closed with the request.

    Async connections are bound to their event loop, so they are not pooled across
    requests (a caller may run several loops).
    """

    def __init__(self, guard: AddressGuard | None) -> None:
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
        shown = shown_source(self.url)
        if self.count >= self.policy.max_redirects:
            raise FetchError(
                f"media fetch: GET {shown_source(self.start)}: too many redirects "
                f"(more than {self.policy.max_redirects})"
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
            raise FetchError(f"media fetch: GET {shown_source(self.url)}: HTTP status {status}")
        return _Body(resp, shown_source(self.url), max_bytes, budget)


@contextlib.contextmanager
def _as_fetch_error(hops: _Hops, timeout: int) -> Iterator[None]:
    """Client-side failures of one HTTP source as ``FetchError`` naming the URL at fault."""
    try:
        yield
    except (asyncio.TimeoutError, httpx.TimeoutException):
        shown = shown_source(hops.url)
        raise FetchError(f"media fetch: GET {shown}: timed out after {timeout} s (REQUEST_TIMEOUT)") from None
    except (_Refused, httpx.HTTPError, httpx.InvalidURL) as e:
        raise FetchError(f"media fetch: GET {shown_source(hops.url)}: {e}") from None


def http_get(url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    timeout = request_timeout()
    deadline = time.monotonic() + timeout
    guard = AddressGuard.of(policy)
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


async def http_get_async(
    url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy, clients: AsyncClients
) -> bytes:
    guard = AddressGuard.of(policy)
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
