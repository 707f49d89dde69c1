"""Fetch over HTTP: real sockets on 127.0.0.0/8 only, httpx unmocked.

Servers come from ``fetch_helpers``; each test finishes in a few seconds at most (the
timeout tests set ``REQUEST_TIMEOUT=1``).
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import urllib.parse

import pytest
from .fetch_helpers import (
    IMAGE, PLACEHOLDER, Server, clean_env, closed_port, probe_family, probe_pipeline, resolve, running,
)

import mm_framework as mmf
from mm_framework import media, par
from mm_framework import content_hash

MAX = 64 * 1024 * 1024
MiB = 1 << 20
MODES = ["sync", "async"]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_env(monkeypatch)


@pytest.fixture(scope="module")
def origin():
    with running(Server("127.0.0.1")) as s:
        yield s


@pytest.fixture(scope="module")
def origin_b():
    """A second server on the same address, another port."""
    with running(Server("127.0.0.1")) as s:
        yield s


@pytest.fixture(scope="module")
def other():
    """A server on another loopback address."""
    with running(Server("127.0.0.2")) as s:
        yield s


def goto(server: Server, target: str) -> str:
    """A URL on ``server`` that redirects to ``target``."""
    return server.url("/goto?" + urllib.parse.quote(target, safe=""))


def _raises(exc: type, match: str, mode: str, sources: list, **kw):
    with pytest.raises(exc, match=match) as info:
        resolve(mode, sources, **kw)
    return info.value


# --------------------------------------------------------------------------- basics


@pytest.mark.parametrize("mode", MODES)
def test_image_round_trips(mode, origin):
    assert resolve(mode, [origin.url("/img.png")]) == [IMAGE]


def test_fetch_bytes_over_http(origin):
    assert media.fetch_bytes(origin.url("/img.png")) == IMAGE


@pytest.mark.parametrize("mode", MODES)
def test_same_bytes_same_hash_across_every_form(mode, origin, tmp_path):
    path = tmp_path / "img.png"
    path.write_bytes(IMAGE)
    b64 = base64.b64encode(IMAGE).decode()
    sources = [IMAGE, f"data:image/png;base64,{b64}", b64, f"file://{path}", str(path),
               origin.url("/img.png"), origin.url("/encoded/gzip"), origin.url("/chain/2")]
    with probe_family():
        pipe = probe_pipeline()
        inp = mmf.MmInput(images=sources, input_ids=[PLACEHOLDER] * len(sources))
        out = pipe.process(inp) if mode == "sync" else asyncio.run(pipe.process_async(inp))
    assert [it.hash for it in out.items] == [content_hash(IMAGE)] * len(sources)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("status, reason", [(404, "Not Found"), (500, "Internal Server Error")])
def test_error_status_is_a_fetch_error_with_the_status(mode, status, reason, origin):
    url = origin.url(f"/status/{status}")
    err = _raises(mmf.FetchError, f"HTTP status {status} {reason}", mode, [IMAGE, url])
    assert err.item == 1 and url in str(err)


@pytest.mark.parametrize("mode", MODES)
def test_connection_refused_is_a_fetch_error(mode):
    _raises(mmf.FetchError, "media fetch: GET http://127.0.0.1", mode, [f"http://127.0.0.1:{closed_port()}/x"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("url", ["http://", "https://", "http://127.0.0.1:0/x", "http://127.0.0.1:65536/x", "http://:80/x"])
def test_url_without_a_usable_host_or_port_is_refused(mode, url):
    _raises(mmf.FetchError, "invalid URL: no host, or a port outside 1-65535", mode, [url])


@pytest.mark.parametrize("mode", MODES)
def test_redirect_to_an_invalid_url_is_a_fetch_error(mode, origin):
    _raises(mmf.FetchError, "invalid URL", mode, [goto(origin, "http://127.0.0.1:0/x")])


@pytest.mark.parametrize("mode", MODES)
def test_userinfo_is_kept_out_of_error_messages(mode, origin):
    url = f"http://user:s3cret@{origin.authority}/status/404"
    err = _raises(mmf.FetchError, "HTTP status 404", mode, [url])
    assert "s3cret" not in str(err)


@pytest.mark.parametrize("mode", MODES)
def test_cookies_are_never_kept(mode, origin):
    # Clients are shared across requests: one source's cookie must not reach another.
    url = origin.url("/cookie")
    assert resolve(mode, [url, url]) == [IMAGE, IMAGE]
    assert resolve(mode, [url]) == [IMAGE]


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("mode", MODES)
def test_redirect_chain_within_the_bound(mode, origin):
    assert resolve(mode, [origin.url("/chain/5"), origin.url("/relative")]) == [IMAGE, IMAGE]


@pytest.mark.parametrize("mode", MODES)
def test_redirect_chain_past_the_bound_and_loops_fail(mode, origin):
    _raises(mmf.FetchError, r"chain/6: too many redirects \(more than 5\)", mode, [origin.url("/chain/6")])
    _raises(mmf.FetchError, "too many redirects", mode, [origin.url("/loop")])
    policy = mmf.FetchPolicy(max_redirects=0)
    _raises(mmf.FetchError, r"more than 0", mode, [origin.url("/chain/1")], policy=policy)
    assert resolve(mode, [origin.url("/chain/0")], policy=policy) == [IMAGE]


@pytest.mark.parametrize("mode", MODES)
def test_redirect_to_another_host(mode, origin, other):
    assert resolve(mode, [goto(origin, other.url("/img.png"))]) == [IMAGE]


@pytest.mark.parametrize("mode", MODES)
def test_redirect_to_a_non_http_url_is_refused(mode, origin):
    _raises(mmf.FetchError, "redirect to a file: URL refused", mode, [goto(origin, "file:///dev/null")])
    _raises(mmf.FetchError, "redirect to a ftp: URL refused", mode, [goto(origin, "ftp://127.0.0.1/x")])


# --------------------------------------------------------------------------- caps


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("framing", ["cl", "close", "chunked"])
def test_body_over_the_cap_is_cut_off(mode, framing, origin):
    limits = mmf.Limits(max_source_bytes=MiB)
    url = origin.url(f"/big/{MiB + 1}?mode={framing}")
    err = _raises(mmf.LimitExceededError, f"exceeds {MiB} bytes", mode, [url], limits=limits)
    assert err.item == 0
    assert resolve(mode, [origin.url(f"/big/{MiB}?mode={framing}")], limits=limits) == [bytes(MiB)]


def test_reference_cap_vector(origin):
    # MAX + 2 bytes with a Content-Length, and an endless chunked body: both "exceeds".
    with pytest.raises(mmf.LimitExceededError, match="exceeds 67108864 bytes"):
        media.fetch_bytes(origin.url(f"/big/{MAX + 2}?mode=cl"))
    t0 = time.monotonic()
    with pytest.raises(mmf.LimitExceededError, match="exceeds 67108864 bytes"):
        media.fetch_bytes(origin.url("/forever"))
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("mode", MODES)
def test_endless_body_is_cut_off(mode, origin):
    # Would never end if the client buffered past the limit.
    _raises(mmf.LimitExceededError, f"exceeds {MiB} bytes", mode, [origin.url("/forever")],
            limits=mmf.Limits(max_source_bytes=MiB))


@pytest.mark.parametrize("mode", MODES)
def test_request_budget_spans_http_sources(mode, origin):
    limits = mmf.Limits(max_request_bytes=MiB)
    half = origin.url(f"/big/{600_000}?mode=chunked")
    err = _raises(mmf.LimitExceededError, "request media byte budget", mode, [half, half], limits=limits)
    assert err.item == 1 if mode == "sync" else err.item in (0, 1)
    # A declared Content-Length that cannot fit fails before the body is read.
    _raises(mmf.LimitExceededError, "request media byte budget", mode,
            [IMAGE, origin.url(f"/big/{MiB}?mode=cl")], limits=limits)


# --------------------------------------------------------------------------- content coding


@pytest.mark.parametrize("mode", MODES)
def test_compressed_bodies_are_decoded(mode, origin):
    codings = ["gzip", "deflate", "rawdeflate", "gzip-twice"]
    assert resolve(mode, [origin.url(f"/encoded/{c}") for c in codings]) == [IMAGE] * len(codings)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "coding, match",
    [
        ("truncated", "truncated gzip body"), ("garbage", "invalid gzip body"),
        ("br", "unsupported Content-Encoding 'br'"),
    ],
)
def test_bad_content_coding_is_a_fetch_error(mode, coding, match, origin):
    _raises(mmf.FetchError, match, mode, [origin.url(f"/encoded/{coding}")])


@pytest.mark.parametrize("mode", MODES)
def test_gzip_cap_applies_to_inflated_bytes(mode, origin):
    limits = mmf.Limits(max_source_bytes=MiB)
    _raises(mmf.LimitExceededError, f"exceeds {MiB} bytes", mode, [origin.url(f"/gzipbomb/{MiB + 1}")], limits=limits)
    assert resolve(mode, [origin.url(f"/gzipbomb/{MiB}")], limits=limits) == [bytes(MiB)]


def test_gzip_bomb_past_the_default_cap(origin):
    with pytest.raises(mmf.LimitExceededError, match="exceeds 67108864 bytes"):
        media.fetch_bytes(origin.url(f"/gzipbomb/{MAX + MiB}"))


# --------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize("raw, seconds", [(None, 3), ("", 3), ("2", 2), (" 7 ", 7)])
def test_request_timeout_parsing(raw, seconds, monkeypatch):
    if raw is not None:
        monkeypatch.setenv("REQUEST_TIMEOUT", raw)
    assert media.request_timeout() == seconds


@pytest.mark.parametrize("raw", ["abc", "1.5", "0", "-2", "3s"])
def test_bad_request_timeout_names_the_variable(raw, monkeypatch):
    monkeypatch.setenv("REQUEST_TIMEOUT", raw)
    match = f"REQUEST_TIMEOUT must be a positive whole number of seconds .*got '{raw}'"
    with pytest.raises(mmf.SpecError, match=match):
        media.request_timeout()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("route", ["/stall", "/stallbody", "/trickle"])
def test_stalled_server_times_out_as_an_overall_deadline(mode, route, origin, monkeypatch):
    # /trickle sends a byte every 0.2 s forever: per-read timeouts would never fire.
    monkeypatch.setenv("REQUEST_TIMEOUT", "1")
    t0 = time.monotonic()
    err = _raises(mmf.FetchError, r"timed out after 1 s \(REQUEST_TIMEOUT\)", mode, [origin.url(route)])
    elapsed = time.monotonic() - t0
    assert err.item == 0 and 0.9 < elapsed < 2.5


@pytest.mark.parametrize("mode", MODES)
def test_deadline_covers_every_redirect_hop(mode, origin, monkeypatch):
    monkeypatch.setenv("REQUEST_TIMEOUT", "1")
    t0 = time.monotonic()
    _raises(mmf.FetchError, "timed out", mode, [goto(origin, origin.url("/stall"))])
    assert time.monotonic() - t0 < 2.5


# --------------------------------------------------------------------------- policy


PRIVATE = "refused by fetch policy allow_private_networks=False: 127.0.0.1 resolves to a loopback address"


@pytest.mark.parametrize("mode", MODES)
def test_private_target_refused_before_connecting(mode, origin):
    origin.reset()
    policy = mmf.FetchPolicy(allow_private_networks=False)
    err = _raises(mmf.FetchError, PRIVATE, mode, [origin.url("/img.png")], policy=policy)
    assert err.item == 0
    assert origin.connections == 0 and origin.requests == []


@pytest.mark.parametrize("mode", MODES)
def test_allowed_hosts_are_the_exception(mode, origin):
    for entry in (origin.authority, "127.0.0.1"):
        policy = mmf.FetchPolicy(allow_private_networks=False, allowed_hosts=[entry])
        assert resolve(mode, [origin.url("/img.png")], policy=policy) == [IMAGE]
    # A host:port entry allows that port only.
    policy = mmf.FetchPolicy(allow_private_networks=False, allowed_hosts=["127.0.0.1:1"])
    _raises(mmf.FetchError, PRIVATE, mode, [origin.url("/img.png")], policy=policy)


@pytest.mark.parametrize("mode", MODES)
def test_redirect_from_allowed_host_to_another_loopback_target_is_refused(mode, origin, origin_b, other):
    policy = mmf.FetchPolicy(allow_private_networks=False, allowed_hosts=[origin.authority])
    other.reset()
    origin_b.reset()
    err = _raises(mmf.FetchError, "127.0.0.2 resolves to a loopback address", mode,
                  [goto(origin, other.url("/img.png"))], policy=policy)
    assert other.url("/img.png") in str(err)
    # Same address, another port: not covered by a host:port entry either.
    _raises(mmf.FetchError, PRIVATE, mode, [goto(origin, origin_b.url("/img.png"))], policy=policy)
    assert other.connections == 0 and origin_b.connections == 0
    # Allowing the redirect target too lets the chain through.
    policy = mmf.FetchPolicy(allow_private_networks=False, allowed_hosts=[origin.authority, "127.0.0.2"])
    assert resolve(mode, [goto(origin, other.url("/img.png"))], policy=policy) == [IMAGE]


def test_pipeline_passes_its_policy_to_http(origin):
    with probe_family():
        pipe = probe_pipeline(fetch_policy=mmf.FetchPolicy(allow_private_networks=False))
        inp = mmf.MmInput(images=[IMAGE, origin.url("/img.png")], input_ids=[PLACEHOLDER, PLACEHOLDER])
        with pytest.raises(mmf.FetchError, match=r"item 1 \(http://[^)]*/img.png\): .*allow_private_networks=False"):
            pipe.process(inp)
        with pytest.raises(mmf.FetchError, match=r"item 1 \(http://[^)]*/img.png\): .*allow_private_networks=False"):
            asyncio.run(pipe.process_async(inp))


# --------------------------------------------------------------------------- threading


def test_async_fetches_concurrently_with_a_bound(origin):
    origin.reset()
    n = media.ASYNC_CONCURRENCY + 2
    t0 = time.monotonic()
    out = resolve("async", [origin.url("/slow/500")] * n)
    elapsed = time.monotonic() - t0
    assert out == [IMAGE] * n
    assert origin.max_in_flight == media.ASYNC_CONCURRENCY
    assert elapsed < n * 0.5 * 0.6  # two waves, far from n sequential waits


def test_sync_fetches_inline_and_sequentially_in_order(origin):
    origin.reset()
    urls = [origin.url(p) for p in ("/slow/100", "/chain/1", "/slow/50", "/slow/1", "/img.png")]
    assert resolve("sync", urls) == [IMAGE] * 5
    assert origin.max_in_flight == 1
    assert origin.requests == ["/slow/100", "/chain/1", "/chain/0", "/slow/50", "/slow/1", "/img.png"]


def test_async_first_failure_cancels_the_rest(origin, monkeypatch):
    monkeypatch.setenv("REQUEST_TIMEOUT", "3")
    t0 = time.monotonic()
    err = _raises(mmf.FetchError, "HTTP status 404", "async", [origin.url("/stall"), origin.url("/status/404")])
    assert err.item == 1 and time.monotonic() - t0 < 1.5


def _pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(par.THREAD_PREFIX)]


@pytest.mark.parametrize("mode", MODES)
def test_fetch_never_uses_the_cpu_pool(mode, origin, tmp_path):
    path = tmp_path / "x.png"
    path.write_bytes(IMAGE)
    par.set_threads(2)  # a fresh, not yet started pool
    try:
        assert _pool_threads() == []
        resolve(mode, [origin.url("/img.png"), str(path), base64.b64encode(IMAGE).decode()])
        assert _pool_threads() == []
    finally:
        par.set_threads(None)
