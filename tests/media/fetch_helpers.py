"""Shared pieces of the fetch tests: loopback HTTP servers, a probe family, env hygiene.

Every server listens on a 127.0.0.0/8 address only. Handlers that stall wait on the
server's ``stopping`` event, so closing a server never waits for a stalled response.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import http.client
import io
import socket
import sys
import threading
import urllib.parse
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from PIL import Image

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import media, plugins
from mm_framework.media.proxy import NO_PROXY_ENV_ORDER, PROXY_ENV_ORDER

# Stalling routes give up after this long, so a client that wrongly waits them out makes
# a test fail in seconds instead of hanging (the tests' timeouts are 1-3 s).
STALL_S = 5.0


def make_png(w: int = 16, h: int = 12) -> bytes:
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 0] = np.arange(w, dtype=np.uint8)[None, :] * 15
    rgb[..., 1] = np.arange(h, dtype=np.uint8)[:, None] * 20
    rgb[..., 2] = 77
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    return buf.getvalue()


IMAGE = make_png()


def clean_env(monkeypatch) -> None:
    """No proxy or timeout settings leak in from the machine running the tests."""
    for name in (*PROXY_ENV_ORDER, *NO_PROXY_ENV_ORDER, "REQUEST_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------- origin server


@functools.cache
def gzip_zeros(n: int) -> bytes:
    z = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [z.compress(block) for _ in range(n >> 20)]
    parts.append(z.compress(bytes(n & ((1 << 20) - 1))))
    parts.append(z.flush())
    return b"".join(parts)


def _encode(coding: str, data: bytes) -> tuple[str, bytes]:
    """``(Content-Encoding header, body)`` for the /encoded routes."""
    if coding == "gzip":
        return "gzip", gzip.compress(data)
    if coding == "deflate":
        return "deflate", zlib.compress(data)
    if coding == "rawdeflate":
        z = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return "deflate", z.compress(data) + z.flush()
    if coding == "gzip-twice":
        return "gzip, gzip", gzip.compress(gzip.compress(data))
    if coding == "truncated":
        return "gzip", gzip.compress(data)[:-12]
    if coding == "garbage":
        return "gzip", b"this is not gzip at all"
    if coding == "br":
        return "br", data
    raise ValueError(coding)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _OriginServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str, status: int = 302) -> None:
        self._send(status, b"", {"Location": location})

    def _stall(self) -> None:
        self.server.stopping.wait(STALL_S)
        self.close_connection = True

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.requests.append(self.path)
        self._route()

    def _route(self) -> None:  # noqa: C901 - one flat route table
        parts = urllib.parse.urlsplit(self.path)
        seg = parts.path.strip("/").split("/")
        head, arg = seg[0], (seg[1] if len(seg) > 1 else "")
        if parts.path == "/img.png":
            self._send(200, IMAGE, {"Content-Type": "image/png"})
        elif head == "status":
            self._send(int(arg), b"nope")
        elif head == "chain":  # /chain/N needs N redirects to reach the image
            n = int(arg)
            self._redirect(f"/chain/{n - 1}") if n else self._send(200, IMAGE)
        elif head == "loop":
            self._redirect("/loop")
        elif head == "relative":
            self._redirect("img.png", 301)
        elif head == "goto":  # /goto?<percent-encoded absolute URL>
            self._redirect(urllib.parse.unquote(parts.query), 307)
        elif head == "big":  # /big/N?mode=cl|close|chunked: N zero bytes
            self._big(int(arg), urllib.parse.parse_qs(parts.query).get("mode", ["cl"])[0])
        elif head == "forever":  # chunked zeros until the client hangs up
            self._chunked(iter(lambda: bytes(64 * 1024), None))
        elif head == "gzipbomb":  # /gzipbomb/N: gzip of N zero bytes
            self._send(200, gzip_zeros(int(arg)), {"Content-Encoding": "gzip"})
        elif head == "encoded":
            coding, body = _encode(arg, IMAGE)
            self._send(200, body, {"Content-Encoding": coding})
        elif head == "stall":  # no response at all
            self._stall()
        elif head == "stallbody":  # headers and a few bytes, then nothing
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 10)
            self.wfile.flush()
            self._stall()
        elif head == "trickle":  # one byte every 0.2 s, for STALL_S
            self._chunked(self._trickle())
        elif head == "cookie":  # sets a cookie; refuses any request that sends one back
            if self.headers.get("Cookie"):
                self._send(400, b"cookie came back")
            else:
                self._send(200, IMAGE, {"Set-Cookie": "session=abc; Path=/"})
        elif head == "slow":  # /slow/MS: the image after MS milliseconds
            self._slow(int(arg) / 1000)
        else:
            self._send(404, b"no route")

    def _slow(self, seconds: float) -> None:
        """Counts how many /slow requests overlap (stalled routes are not counted)."""
        srv = self.server
        with srv.lock:
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        try:
            srv.stopping.wait(seconds)
        finally:
            with srv.lock:
                srv.in_flight -= 1
        self._send(200, IMAGE)

    def _trickle(self) -> Iterator[bytes]:
        for _ in range(int(STALL_S / 0.2)):
            if self.server.stopping.wait(0.2):
                return
            yield b"x"

    def _big(self, n: int, mode: str) -> None:
        self.send_response(200)
        if mode == "cl":
            self.send_header("Content-Length", str(n))
        elif mode == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        if mode == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            block = 64 * 1024
            self._chunked_body((bytes(min(block, n - i)) for i in range(0, n, block)))
            return
        self.end_headers()
        sent = 0
        while sent < n:
            k = min(64 * 1024, n - sent)
            self.wfile.write(bytes(k))
            sent += k

    def _chunked(self, chunks: Iterator[bytes]) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunked_body(chunks)

    def _chunked_body(self, chunks: Iterator[bytes]) -> None:
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class _OriginServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64

    def __init__(self, host: str, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__((host, 0), handler)
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.requests: list[str] = []
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0

    def verify_request(self, request: object, client_address: object) -> bool:
        with self.lock:
            self.connections += 1
        return True

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients hanging up mid-body is what several tests do on purpose; anything else
        # is a bug in the test server and is printed.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Server:
    """A running loopback server; ``url(path)`` addresses it."""

    def __init__(self, host: str = "127.0.0.1", handler: type[BaseHTTPRequestHandler] = _Handler) -> None:
        self.httpd = _OriginServer(host, handler)
        self.host, self.port = self.httpd.server_address[:2]
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.authority}{path}"

    @property
    def requests(self) -> list[str]:
        with self.httpd.lock:
            return list(self.httpd.requests)

    @property
    def connections(self) -> int:
        with self.httpd.lock:
            return self.httpd.connections

    @property
    def max_in_flight(self) -> int:
        with self.httpd.lock:
            return self.httpd.max_in_flight

    def reset(self) -> None:
        with self.httpd.lock:
            self.httpd.requests.clear()
            self.httpd.connections = 0
            self.httpd.max_in_flight = 0

    def close(self) -> None:
        self.httpd.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


# --------------------------------------------------------------------------- forward proxy


class _ProxyHandler(BaseHTTPRequestHandler):
    """A minimal forward proxy for absolute-form ``GET http://...`` requests."""

    protocol_version = "HTTP/1.1"
    server: _OriginServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.requests.append(self.path)
        target = urllib.parse.urlsplit(self.path)
        if target.scheme != "http" or not target.hostname:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=5)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            upstream.request("GET", path or "/", headers={"Host": target.netloc, "Accept-Encoding": "identity"})
            resp = upstream.getresponse()
            body = resp.read()
        finally:
            upstream.close()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        self.send_header("X-Test-Proxy", "1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def proxy_server() -> Server:
    return Server("127.0.0.1", _ProxyHandler)


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    try:
        yield server
    finally:
        server.close()


# --------------------------------------------------------------------------- probe family

PLACEHOLDER = 9


class _ProbeProcessor:
    """The smallest family: one token per item, the first three bytes as its "pixel".

    It decodes nothing, so these tests exercise fetch and hashing whatever the state
    of the image decoder.
    """

    @mmp.hookimpl
    def mm_decode(self, data: bytes, options: mmp.DecodeOptions) -> mmp.DecodedImage:
        return mmp.DecodedImage(np.frombuffer(data[:3].ljust(3, b"\0"), np.uint8).reshape(1, 1, 3))

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        return mmp.ProcessedItem(feature=mmp.Tensor.f32(media.rgb[:1, :1].reshape(1, 3)), geometry=None)

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: list) -> mmp.TokenLayout:
        return mmp.layout_by_placeholder(input_ids, PLACEHOLDER, [1] * len(geometries))

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        return mmp.ItemPlan(mmf.Grid(1, 1, 1), (header.width, header.height))


class _ProbePlugin:
    @mmp.hookimpl
    def mm_register_families(self, register) -> None:
        register("fetch_probe", lambda params: _ProbeProcessor())


@contextlib.contextmanager
def probe_family() -> Iterator[None]:
    name = plugins.register(_ProbePlugin(), name="fetch_probe_plugin")
    try:
        yield
    finally:
        plugins.unregister(name)


def probe_pipeline(**kwargs: object) -> mmf.Pipeline:
    return mmf.pipeline_from_spec({"family": "fetch_probe"}, **kwargs)


def resolve(
    mode: str, sources: list, *, limits: mmf.Limits | None = None, policy: mmf.FetchPolicy | None = None
) -> list[bytes]:
    """``resolve_sources`` (mode ``"sync"``) or ``resolve_sources_async`` on a fresh loop."""
    limits = mmf.Limits() if limits is None else limits
    if mode == "sync":
        return media.resolve_sources(sources, limits=limits, policy=policy)
    return asyncio.run(media.resolve_sources_async(sources, limits=limits, policy=policy))


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = [
    "IMAGE", "PLACEHOLDER", "Server", "clean_env", "gzip_zeros", "make_png", "probe_family", "probe_pipeline",
    "closed_port", "proxy_server", "resolve", "running",
]
