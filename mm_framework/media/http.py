"""HTTP(S) sources: one async GET, and the bridge that gives sync callers the same code.

``REQUEST_TIMEOUT`` (whole seconds, read per fetch; default 3) is an overall deadline
per source covering every redirect hop, connect, TLS and the body. Redirects
(301/302/303/307/308) are followed by hand, at most ``FetchPolicy.max_redirects``, each
hop re-checked against the policy. Status >= 400 is an error. ``gzip`` and ``deflate``
bodies are inflated in bounded steps (:mod:`.body`), so the caps apply to decoded bytes. Proxies
follow the reference's environment rules (:mod:`.proxy`); httpx's own environment
handling is off.

Every fetch runs on one process-wide I/O event loop in a thread of its own
(:class:`_IoLoop`): sync callers block on it, async callers await it from their own
loop. So there is one implementation of the hop loop, and the httpx clients (one per
proxy and address guard) keep their connections across requests and callers. Measured
on loopback, handing a fetch to the I/O thread costs about 0.1 ms.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import http.cookiejar
import os
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

import httpcore
import httpx

from ..errors import FetchError, SettingError
from .body import Body
from .guard import AddressGuard, Refused
from .policy import HTTP_FORMS, ByteBudget, FetchPolicy, shown_source
from .proxy import proxy_for

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 3
TIMEOUT_ENV = "REQUEST_TIMEOUT"
TIMEOUT_FORMS = f"a positive whole number of seconds (default {DEFAULT_TIMEOUT_S})"
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEADERS = {"Accept-Encoding": "gzip, deflate", "User-Agent": "mm-framework"}


def request_timeout() -> int:
    """``REQUEST_TIMEOUT`` as whole seconds; unset or empty means 3. Anything but a
    positive whole number is a ``SettingError`` naming the variable (read per fetch)."""
    raw = os.environ.get(TIMEOUT_ENV, "")
    value = raw.strip()
    if not value:
        return DEFAULT_TIMEOUT_S
    if not (value.isascii() and value.isdigit() and int(value) > 0):
        raise SettingError.bad_value(TIMEOUT_ENV, raw, TIMEOUT_FORMS)
    return int(value)


# --------------------------------------------------------------------------- connections


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Connections only to the addresses the guard vetted (httpx takes no backend itself)."""

    def __init__(self, guard: AddressGuard) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._guard = guard

    async def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self._guard.addresses(host, port)
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


def _pool(proxy: str | None, backend: httpcore.AsyncNetworkBackend | None) -> Any:
    """An httpcore pool (direct or through an http(s) proxy) over ``backend``."""
    common = dict(
        ssl_context=_ssl_context(), max_connections=100, max_keepalive_connections=20,
        keepalive_expiry=5.0, network_backend=backend,
    )
    if proxy is None:
        return httpcore.AsyncConnectionPool(**common)
    spec = httpx.Proxy(proxy)
    url = httpcore.URL(scheme=spec.url.raw_scheme, host=spec.url.raw_host, port=spec.url.port, target=b"/")
    return httpcore.AsyncHTTPProxy(proxy_url=url, proxy_auth=spec.raw_auth, proxy_headers=spec.headers.raw, **common)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore errors as the httpx errors the hop loop handles."""
    try:
        yield
    except httpcore.TimeoutException as e:
        raise httpx.TimeoutException(str(e)) from e
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, httpcore.UnsupportedProtocol) as e:
        raise httpx.TransportError(str(e) or type(e).__name__) from e


class _Stream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Transport(httpx.AsyncBaseTransport):
    """An httpx transport over our own httpcore pool."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw, content=request.stream, extensions=request.extensions,
        )
        with _httpx_errors():
            resp = await self._pool.handle_async_request(core)
        return httpx.Response(
            resp.status, headers=resp.headers, stream=_Stream(resp.stream), extensions=resp.extensions
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


def _client(proxy: str | None, guard: AddressGuard | None) -> httpx.AsyncClient:
    """Redirects are ours, so is the proxy environment, and clients are shared by every
    caller, so no cookie is ever kept."""
    backend = _GuardedBackend(guard) if proxy is None and guard is not None else None
    no_cookies = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    return httpx.AsyncClient(
        transport=_Transport(_pool(proxy, backend)), timeout=None, trust_env=False, follow_redirects=False,
        headers=_HEADERS, cookies=no_cookies,
    )


# --------------------------------------------------------------------------- the hop loop


def _target_of(url: str) -> tuple[str, int]:
    """``(host, port)`` an http(s) URL connects to; ``httpx.InvalidURL`` if it has none."""
    parsed = httpx.URL(url)
    host = parsed.raw_host.decode("ascii")
    port = _DEFAULT_PORTS.get(parsed.scheme, 0) if parsed.port is None else parsed.port
    if not host or not 0 < port <= 0xFFFF:
        raise httpx.InvalidURL("invalid URL: no host, or a port outside 1-65535")
    return host, port


def _next_hop(url: str, start: str, hops: int, resp: httpx.Response, policy: FetchPolicy) -> str | None:
    """The redirect target of ``resp`` (re-checked against the policy), or None when final."""
    location = resp.headers.get("location")
    if resp.status_code not in _REDIRECT_STATUSES or location is None:
        return None
    shown = shown_source(url)
    if hops >= policy.max_redirects:
        raise FetchError(
            f"media fetch: GET {shown_source(start)}: too many redirects (more than {policy.max_redirects})"
        )
    try:
        target = resp.url.join(location)
    except httpx.InvalidURL as e:
        raise FetchError(f"media fetch: GET {shown}: invalid redirect location: {e}") from None
    if target.scheme not in HTTP_FORMS:
        raise FetchError(
            f"media fetch: GET {shown}: redirect to a {target.scheme}: URL refused (only http and https are followed)"
        )
    if target.scheme not in policy.schemes:
        raise FetchError(f"media fetch: GET {shown}: redirect to {target.scheme} refused by fetch policy schemes")
    return str(target)


class _Clients:
    """The I/O loop's clients, one per (proxy, guard); only touched on that loop."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str | None, AddressGuard | None], httpx.AsyncClient] = {}

    def get(self, proxy: str | None, guard: AddressGuard | None) -> httpx.AsyncClient:
        key = (proxy, guard if proxy is None else None)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = _client(*key)
        return client


async def _get(url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy, clients: _Clients) -> bytes:
    """GET ``url`` under the policy, following redirects; runs on the I/O loop."""
    timeout = request_timeout()
    guard = AddressGuard.of(policy)
    current, hops = url, 0

    async def follow() -> bytes:
        nonlocal current, hops
        while True:
            host, port = _target_of(current)
            proxy = proxy_for(current)
            if proxy is not None and guard is not None:
                await guard.check_before_proxy(host, port)
            async with clients.get(proxy, guard).stream("GET", current) as resp:
                target = _next_hop(current, url, hops, resp, policy)
                if target is not None:
                    current, hops = target, hops + 1
                    continue
                if resp.status_code >= 400:
                    status = f"{resp.status_code} {resp.reason_phrase}".rstrip()
                    raise FetchError(f"media fetch: GET {shown_source(current)}: HTTP status {status}")
                body = Body(resp, shown_source(current), max_bytes, budget)
                async for raw in resp.aiter_raw():
                    body.feed(raw)
                return body.result()

    try:
        return await asyncio.wait_for(follow(), timeout)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        raise FetchError(
            f"media fetch: GET {shown_source(current)}: timed out after {timeout} s (REQUEST_TIMEOUT)"
        ) from None
    except (Refused, httpx.HTTPError, httpx.InvalidURL) as e:
        raise FetchError(f"media fetch: GET {shown_source(current)}: {e}") from None


# --------------------------------------------------------------------------- the I/O loop


class _IoLoop:
    """The process-wide event loop every HTTP fetch runs on, started on first use.

    A daemon thread, so it never keeps a process alive; rebuilt after ``fork`` (a child
    inherits the memory of the parent's loop but not its thread).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients = _Clients()

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mm-fetch-io", daemon=True).start()
                self._loop = loop
            return self._loop

    def submit(self, job: Callable[[_Clients], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(job(self._clients), self._running())

    def forget(self) -> None:
        self._lock = threading.Lock()
        self._loop = None
        self._clients = _Clients()


_io = _IoLoop()
os.register_at_fork(after_in_child=_io.forget)


def http_get(url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    """GET ``url`` for a sync caller, which blocks until the I/O loop is done with it."""
    future = _io.submit(lambda clients: _get(url, max_bytes, budget, policy, clients))
    try:
        return future.result()
    finally:
        future.cancel()  # only has an effect when the wait itself was interrupted


async def http_get_async(url: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    """GET ``url`` for a coroutine on any event loop; cancelling it cancels the fetch."""
    future = _io.submit(lambda clients: _get(url, max_bytes, budget, policy, clients))
    return await asyncio.wrap_future(future)
