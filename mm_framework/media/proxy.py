"""Which proxy an HTTP fetch goes through: environment lookup, NO_PROXY and URL host parsing.

The rules are the reference's (docs/architecture.md, "Fetch"), kept as pure functions of
strings so every vector is testable without traffic:

* the proxy is the first parseable value of ``ALL_PROXY, all_proxy, HTTPS_PROXY,
  https_proxy, HTTP_PROXY, http_proxy``, used for every scheme (a SOCKS one is a
  ``SettingError``: only http and https proxies are supported);
* the bypass list is ``no_proxy`` if that variable exists (even empty), else ``NO_PROXY``;
* a URL bypasses the proxy when :func:`no_proxy_matches` says so for its host and
  *explicit* port.

The environment is read on every call, so a long-lived process follows changes.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import SettingError

PROXY_ENV_ORDER = ("ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
NO_PROXY_ENV_ORDER = ("no_proxy", "NO_PROXY")

# Schemes a proxy URL may carry to count as parseable (what the reference's client knows);
# of these the fetcher uses only http and https.
_PROXY_SCHEMES = frozenset({"http", "https", "socks4", "socks4a", "socks5", "socks5h"})
PROXY_FORMS = (
    "an http:// or https:// URL, or host[:port] for http:// (only http and https proxies are supported; "
    f"the first parseable of {', '.join(PROXY_ENV_ORDER)} is the proxy)"
)
NO_PROXY_FORMS = "comma-separated hosts, .domains, *, IPv4 CIDRs or host:port entries (no_proxy, even empty, wins)"


def parse_port(text: str) -> int | None:
    """``text`` as a TCP port (ASCII digits, at most 65535), else None."""
    if not (text and text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= 0xFFFF else None


def _authority_end(rest: str) -> int:
    """Where the authority of ``rest`` (a URL after ``scheme://``) ends: the first ``/?#``."""
    return min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))


def host_port_of(url: str) -> tuple[str, int | None] | None:
    """``(lowercased host, explicit port or None)`` of an http(s) URL; None for anything else.

    Default ports are not filled in, so a ``host:port`` NO_PROXY entry only matches
    URLs that spell the port out (as Python ``requests`` does). Userinfo is dropped.
    """
    for prefix in ("http://", "https://"):
        if url.startswith(prefix):
            rest = url[len(prefix) :]
            break
    else:
        return None
    authority = rest[: _authority_end(rest)].rpartition("@")[2]
    if authority.startswith("["):
        host, _, after = authority[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ""
    else:
        host, _, port_text = authority.partition(":")
    host = host.lower()
    if not host:
        return None
    return host, parse_port(port_text)


def _ipv4(text: str) -> int | None:
    try:
        return int(ipaddress.IPv4Address(text))
    except ValueError:
        return None


def _ipv4_cidr(entry: str) -> tuple[int, int] | None:
    """``(network, mask)`` for an ``a.b.c.d/bits`` entry with ``bits <= 32``, else None."""
    addr, slash, bits_text = entry.partition("/")
    if not slash or not (bits_text.isascii() and bits_text.isdigit()) or int(bits_text) > 32:
        return None
    net = _ipv4(addr)
    if net is None:
        return None
    bits = int(bits_text)
    mask = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF if bits else 0
    return net & mask, mask


def no_proxy_matches(no_proxy: str, host: str, port: int | None) -> bool:
    """Whether the comma-separated bypass list ``no_proxy`` covers ``host`` (and ``port``).

    Per entry (trimmed, leading dots stripped, lowercased): empty entries are skipped;
    ``*`` matches everything; an IPv4 CIDR matches IPv4 hosts inside it and never a
    hostname; ``name:port`` matches only URLs whose explicit port is ``port``; otherwise
    ``name`` matches the host itself and its subdomains (``.name`` suffix), never a
    lookalike suffix. A plain IPv4 entry is compared as a string, like a name.
    """
    host = host.lower()
    host_ip: int | None = None
    host_parsed = False
    for raw in no_proxy.split(","):
        entry = raw.strip().lstrip(".").lower()
        if not entry:
            continue
        if entry == "*":
            return True
        cidr = _ipv4_cidr(entry)
        if cidr is not None:
            if not host_parsed:
                host_ip, host_parsed = _ipv4(host), True
            if host_ip is not None and host_ip & cidr[1] == cidr[0]:
                return True
            continue
        entry_host, entry_port = entry, None
        colon = entry.rfind(":")
        if colon != -1:
            suffix = entry[colon + 1 :]
            # An empty suffix counts as "all digits": ``host:`` has no port and matches any.
            if suffix.isascii() and (suffix.isdigit() or not suffix):
                entry_host, entry_port = entry[:colon], parse_port(suffix)
        if entry_port is not None and entry_port != port:
            continue
        if host == entry_host or host.endswith("." + entry_host):
            return True
    return False


def no_proxy_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The bypass list: the first of ``no_proxy``, ``NO_PROXY`` that exists, even if empty."""
    env = os.environ if environ is None else environ
    for name in NO_PROXY_ENV_ORDER:
        if name in env:
            return env[name]
    return None


def _parse_proxy(value: str) -> str | None:
    value = value.strip()
    if not value:
        return None
    if "://" not in value:
        value = "http://" + value
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return None
    if parts.scheme.lower() not in _PROXY_SCHEMES or not parts.hostname:
        return None
    return value


def proxy_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL for every scheme: the first parseable variable in :data:`PROXY_ENV_ORDER`.

    A value without a scheme means ``http://``. Unparseable values are skipped; a SOCKS
    one is a ``SettingError`` naming the variable (a fetch through it would fail).
    """
    env = os.environ if environ is None else environ
    for name in PROXY_ENV_ORDER:
        value = env.get(name)
        if value is not None:
            parsed = _parse_proxy(value)
            if parsed is not None:
                if not parsed.lower().startswith(("http://", "https://")):
                    raise SettingError.bad_value(name, redact(parsed), PROXY_FORMS)
                return parsed
    return None


def proxy_for(url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy ``url`` goes through, or None to connect directly."""
    proxy = proxy_from_env(environ)
    if proxy is None:
        return None
    bypass = no_proxy_from_env(environ)
    target = host_port_of(url)
    if bypass is not None and target is not None and no_proxy_matches(bypass, *target):
        return None
    return proxy


def redact(url: str) -> str:
    """``url`` without its userinfo, for error messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    at = rest.rfind("@", 0, _authority_end(rest))
    return url if at == -1 else f"{scheme}://{rest[at + 1 :]}"
