"""Proxy choice: URL host parsing, NO_PROXY matching, environment order, and real traffic
through a forward proxy started here (127.0.0.1 only).

The reference's NO_PROXY vectors (docs/architecture.md, "Fetch") include addresses outside
127.0.0.0/8 (10.x, 192.168.x, 8.8.8.8). These tests may name loopback addresses only,
so every IPv4 vector is rewritten inside 127.0.0.0/8 with the same shape: a /8 that
matches and its non-match, a /24 with a port, a /0 matching everything, a hostname never
matching a CIDR. Likewise ``[::1]`` in the host-parsing vectors becomes
``[::ffff:127.0.0.1]`` (IPv4-mapped 127.0.0.1), which exercises the same bracket rule.
"""

from __future__ import annotations

import pytest
from .fetch_helpers import IMAGE, Server, clean_env, closed_port, proxy_server, resolve, running

import mm_framework as mmf
from mm_framework.media.proxy import (
    host_port_of, no_proxy_from_env, no_proxy_matches, proxy_for, proxy_from_env, redact,
)

MODES = ["sync", "async"]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_env(monkeypatch)


# --------------------------------------------------------------------------- pure vectors


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://Example.COM/a/b.png", ("example.com", None)),
        ("https://u:p@images.internal:8443/x", ("images.internal", 8443)),
        ("http://[::ffff:127.0.0.1]:8080/x.png", ("::ffff:127.0.0.1", 8080)),
        ("http://host?q=1", ("host", None)),
        ("http://host#frag", ("host", None)),
        ("http://a@b@host:81/x@y", ("host", 81)),  # userinfo ends at the last @ of the authority
        ("http://host:99999/x", ("host", None)),  # not a u16
        ("http://host:/x", ("host", None)),
        ("http://127.0.0.1:80/x", ("127.0.0.1", 80)),  # explicit default port kept
        ("https://127.0.0.1/x", ("127.0.0.1", None)),  # no default port filled in
        ("http:///x", None),
        ("data:...", None),
        ("file:///x", None),
        ("HTTP://host/x", None),  # prefixes are case-sensitive
    ],
)
def test_host_port_of(url, expected):
    assert host_port_of(url) == expected


NAMES = " .internal ,localhost"


@pytest.mark.parametrize(
    "no_proxy, host, port, match",
    [
        # The reference's table, hostnames as given.
        (NAMES, "images.internal", None, True),
        (NAMES, "internal", None, True),
        (NAMES, "localhost", None, True),
        (NAMES, "notinternal", None, False),
        (NAMES, "example.com", None, False),
        ("*", "anything.example.com", None, True),
        ("", "anything", None, False),
        (" , ", "anything", None, False),
        ("internal:8443", "internal", 8443, True),
        ("internal:8443", "internal", 80, False),
        ("internal:8443", "internal", None, False),
        ("internal:8443", "img.internal", 8443, True),
        ("internal", "internal", 8443, True),
        # The reference's IPv4 rows, rewritten inside 127.0.0.0/8.
        ("127.0.0.0/8", "127.1.2.3", None, True),  # was 10.0.0.0/8 vs 10.1.2.3
        ("127.0.0.0/16", "127.1.2.3", None, False),  # was 10.0.0.0/8 vs 11.1.2.3
        ("127.0.0.0/8", "example.com", None, False),  # a CIDR never matches a hostname
        ("127.0.0.0/8", "localhost", None, False),  # not even one that resolves into it
        ("127.168.1.0/24", "127.168.1.77", 80, True),  # was 192.168.1.0/24 vs 192.168.1.77:80
        ("127.168.1.0/24", "127.168.2.1", None, False),  # was ... vs 192.168.2.1
        ("127.0.0.0/0", "127.8.8.8", None, True),  # was 0.0.0.0/0 vs 8.8.8.8: /0 has mask 0
        # Further rules of the same section.
        ("127.64.0.0/10", "127.127.255.255", None, True),
        ("127.64.0.0/10", "127.128.0.0", None, False),
        ("127.0.0.1/32", "127.0.0.1", None, True),
        ("127.0.0.1/32", "127.0.0.2", None, False),
        ("127.9.9.9/8", "127.1.1.1", None, True),  # host bits of the entry are masked off
        ("127.0.0.0/33", "127.0.0.1", None, False),  # not a CIDR: compared as a name
        ("127.0.0.1", "127.0.0.1", None, True),  # a plain IPv4 entry is a string match...
        ("0.0.1", "127.0.0.1", None, True),  # ...so it matches as a "subdomain" too
        ("..internal", "a.internal", None, True),  # every leading dot stripped
        ("INTERNAL", "a.Internal", None, True),  # case-insensitive
        ("internal:", "internal", 1234, True),  # empty port digits: any port
        ("internal:99999", "internal", 1234, True),  # digits that are not a u16: any port
        ("internal:http", "internal", 80, False),  # not digits: the whole entry is a name
        ("other, *", "x", None, True),  # '*' anywhere in the list
        ("nomatch,  internal ", "internal", None, True),
    ],
)
def test_no_proxy_matches(no_proxy, host, port, match):
    assert no_proxy_matches(no_proxy, host, port) is match


def test_no_proxy_lookup_order():
    assert no_proxy_from_env({"no_proxy": "a", "NO_PROXY": "b"}) == "a"
    assert no_proxy_from_env({"NO_PROXY": "b"}) == "b"
    assert no_proxy_from_env({"no_proxy": "", "NO_PROXY": "b"}) == ""  # exists, so it wins
    assert no_proxy_from_env({}) is None


def test_proxy_lookup_order():
    order = ["ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"]
    for i, name in enumerate(order):
        env = {n: f"http://127.0.0.{j + 1}:3128" for j, n in enumerate(order[i:], start=i)}
        assert proxy_from_env(env) == f"http://127.0.0.{i + 1}:3128", name
    assert proxy_from_env({}) is None


@pytest.mark.parametrize("bad", ["", "   ", "ftp://127.0.0.1:21", "http://:80", "http://127.0.0.1:notaport", "http://"])
def test_unparseable_proxy_values_are_skipped(bad):
    assert proxy_from_env({"ALL_PROXY": bad, "http_proxy": "127.0.0.1:3128"}) == "http://127.0.0.1:3128"


def test_proxy_for_applies_no_proxy():
    env = {"HTTP_PROXY": "http://127.0.0.1:3128", "NO_PROXY": "127.0.0.0/8"}
    assert proxy_for("http://127.1.2.3/x", env) is None
    assert proxy_for("http://images.internal/x", env) == "http://127.0.0.1:3128"
    # With no proxy configured nothing needs a bypass list.
    assert proxy_for("http://images.internal/x", {"NO_PROXY": "*"}) is None


def test_redact():
    assert redact("http://u:p@127.0.0.1:80/x@y") == "http://127.0.0.1:80/x@y"
    assert redact("http://127.0.0.1/x?a=b@c") == "http://127.0.0.1/x?a=b@c"
    assert redact("data:,abc") == "data:,abc"


# --------------------------------------------------------------------------- traffic


@pytest.fixture(scope="module")
def origin():
    with running(Server("127.0.0.1")) as s:
        yield s


@pytest.fixture(scope="module")
def proxy():
    with running(proxy_server()) as s:
        yield s


def _fetch_and_route(mode, origin, proxy) -> str:
    """Fetch the image and say whether it went through the proxy or directly."""
    proxy.reset()
    origin.reset()
    url = origin.url("/img.png")
    assert resolve(mode, [url]) == [IMAGE]
    assert origin.requests == ["/img.png"]
    return "proxy" if proxy.requests == [url] else "direct" if proxy.requests == [] else f"? {proxy.requests}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("var", ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"])
def test_proxy_from_env_is_used(mode, var, origin, proxy, monkeypatch):
    monkeypatch.setenv(var, f"http://{proxy.authority}")
    assert _fetch_and_route(mode, origin, proxy) == "proxy"


@pytest.mark.parametrize("mode", MODES)
def test_scheme_less_proxy_value_means_http(mode, origin, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", proxy.authority)
    assert _fetch_and_route(mode, origin, proxy) == "proxy"


@pytest.mark.parametrize("mode", MODES)
def test_redirect_hops_go_through_the_proxy(mode, origin, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.authority}")
    proxy.reset()
    assert resolve(mode, [origin.url("/chain/2")]) == [IMAGE]
    assert proxy.requests == [origin.url(f"/chain/{n}") for n in (2, 1, 0)]


def _no_proxy_forms(port: int) -> list[tuple[str, str]]:
    """``(NO_PROXY value, expected route)`` for a target at 127.0.0.1:``port``."""
    other_port = port + 1 if port < 65535 else port - 1
    return [
        ("127.0.0.1", "direct"),  # exact host
        (".127.0.0.1", "direct"),  # leading dot stripped
        ("0.0.1", "direct"),  # suffix on a dot boundary (the subdomain rule)
        ("*", "direct"),
        ("unrelated, *", "direct"),
        ("127.0.0.0/8", "direct"),  # CIDR containing the target
        ("127.0.0.0/24", "direct"),
        ("127.0.0.0/0", "direct"),
        (f"127.0.0.1:{port}", "direct"),  # host:port with the URL's port
        ("127.0.0.1:", "direct"),  # empty port digits: any port
        (f" , 127.0.0.1:{port} ,", "direct"),
        (f"127.0.0.1:{other_port}", "proxy"),  # another port
        ("127.9.0.0/16", "proxy"),  # CIDR not containing the target
        ("127.0.0.1/33", "proxy"),  # not a CIDR, not the host string either
        ("x.127.0.0.1", "proxy"),  # the target is not a subdomain of the entry
        ("", "proxy"),
        (" , ", "proxy"),
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lookup", ["NO_PROXY", "no_proxy"])
def test_each_no_proxy_form_routes_as_the_reference(mode, lookup, origin, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.authority}")
    for value, route in _no_proxy_forms(origin.port):
        monkeypatch.setenv(lookup, value)
        assert _fetch_and_route(mode, origin, proxy) == route, value


@pytest.mark.parametrize("mode", MODES)
def test_lowercase_no_proxy_hides_uppercase_even_when_empty(mode, origin, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.authority}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "")
    assert _fetch_and_route(mode, origin, proxy) == "proxy"
    monkeypatch.delenv("no_proxy")
    assert _fetch_and_route(mode, origin, proxy) == "direct"


@pytest.mark.parametrize("mode", MODES)
def test_unparseable_all_proxy_falls_through(mode, origin, proxy, monkeypatch):
    monkeypatch.setenv("ALL_PROXY", "ftp://127.0.0.1:21")
    monkeypatch.setenv("http_proxy", f"http://{proxy.authority}")
    assert _fetch_and_route(mode, origin, proxy) == "proxy"


@pytest.mark.parametrize("mode", MODES)
def test_unreachable_proxy_fails_instead_of_going_direct(mode, origin, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
    origin.reset()
    with pytest.raises(mmf.FetchError, match="item 0: media fetch: GET"):
        resolve(mode, [origin.url("/img.png")])
    assert origin.requests == []


@pytest.mark.parametrize("mode", MODES)
def test_socks_proxy_is_reported_unsupported(mode, origin, monkeypatch):
    # A setting of the process, like any bad environment variable: a SpecError, no item.
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(mmf.SpecError, match="^ALL_PROXY must be an http:// or https:// URL.*only http and https "
                       r"proxies are supported.*; got 'socks5://127\.0\.0\.1:1080'$") as info:
        resolve(mode, [origin.url("/img.png")])
    assert info.value.item is None


@pytest.mark.parametrize("mode", MODES)
def test_private_target_refused_before_reaching_the_proxy(mode, origin, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.authority}")
    proxy.reset()
    with pytest.raises(mmf.FetchError, match="allow_private_networks=False: 127.0.0.1 resolves to a loopback"):
        resolve(mode, [origin.url("/img.png")], policy=mmf.FetchPolicy(allow_private_networks=False))
    assert proxy.requests == [] and proxy.connections == 0
    # The proxy itself is operator configuration, not a target: allowing the target suffices.
    policy = mmf.FetchPolicy(allow_private_networks=False, allowed_hosts=["127.0.0.1"])
    assert resolve(mode, [origin.url("/img.png")], policy=policy) == [IMAGE]
    assert proxy.requests == [origin.url("/img.png")]


@pytest.mark.parametrize("mode", MODES)
def test_target_that_local_dns_cannot_resolve_is_refused_before_the_proxy(mode, proxy, monkeypatch):
    # The proxy could resolve the name to an internal address, so the policy fails closed.
    # Resolution is made to fail locally (no DNS query leaves the machine).
    import socket

    def no_dns(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setenv("HTTP_PROXY", f"http://{proxy.authority}")
    proxy.reset()
    with pytest.raises(mmf.FetchError, match="allow_private_networks=False: cannot resolve images.internal"):
        resolve(mode, ["http://images.internal/x.png"], policy=mmf.FetchPolicy(allow_private_networks=False))
    assert proxy.requests == []
