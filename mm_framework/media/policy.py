"""What a media fetch may do and how much it may read.

* the source forms (:data:`FORMS`) and :func:`source_form`, which tells them apart by
  the reference's precedence (table in :mod:`.sources`), and :func:`shown_source` and
  :func:`source_label`, the places that decide how a source appears in messages;
* :class:`FetchPolicy`, the forms, local roots and network targets a pipeline allows;
* the byte caps: :class:`ByteBudget`, one request's shared budget, and
  :class:`Collector`, one source's bytes under its cap and that budget.

The lowest of the fetch modules: :mod:`.files`, :mod:`.http` and :mod:`.sources` build
on it, it imports none of them.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import attrs

from ..checks import check_int
from ..errors import FetchError, LimitExceededError, SpecError
from .proxy import parse_port, redact

# The one source-prefix table: the prefixed forms in the reference's precedence (case-sensitive;
# the table in :mod:`.sources` says how each is read). A string without any is ``base64``.
PREFIXES = (("http://", "http"), ("https://", "https"), ("file://", "file"), ("/", "path"), ("data:", "data"))
FORMS = (*(form for _, form in PREFIXES), "base64")
# What a command line or a manifest passes on as written; any other string there is a path.
URL_PREFIXES = tuple(prefix for prefix, form in PREFIXES if form != "path")
HTTP_FORMS = frozenset({"http", "https"})
CHUNK_BYTES = 256 * 1024  # largest piece inflated or read in one step


# --------------------------------------------------------------------------- policy


def _schemes(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        raise SpecError("FetchPolicy.schemes must be a collection of form names, not one string")
    forms = frozenset(value)
    unknown = forms - set(FORMS)
    if unknown:
        raise SpecError(f"FetchPolicy.schemes: unknown form(s) {sorted(unknown)}; known: {list(FORMS)}")
    return forms


def _roots(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes, os.PathLike)):
        raise SpecError("FetchPolicy.local_roots must be a sequence of directories, not one path")
    roots = tuple(os.fspath(r) for r in value)
    if any(not isinstance(r, str) or not r for r in roots):
        raise SpecError(f"FetchPolicy.local_roots: every root must be a non-empty str path, got {roots!r}")
    # Absolute now, so a later chdir cannot move the roots.
    return tuple(os.path.abspath(r) for r in roots)


def allowed_entry(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` as ``(host, port or None)``."""
    if entry.startswith("["):
        host, close, rest = entry[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise SpecError(f"FetchPolicy.allowed_hosts: malformed entry {entry!r}")
        port_text = rest[1:] if rest else None
    elif entry.count(":") == 1:
        host, port_text = entry.split(":")
    elif ":" in entry:
        raise SpecError(f"FetchPolicy.allowed_hosts: write IPv6 hosts in brackets, got {entry!r}")
    else:
        host, port_text = entry, None
    port = None if port_text is None else parse_port(port_text)
    if not host or (port_text is not None and port is None):
        raise SpecError(f"FetchPolicy.allowed_hosts: malformed entry {entry!r} (expected host or host:port)")
    return host, port


def _hosts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise SpecError("FetchPolicy.allowed_hosts must be a sequence of entries, not one string")
    entries = tuple(value)
    if any(not isinstance(e, str) for e in entries):
        raise SpecError(f"FetchPolicy.allowed_hosts entries must be str, got {entries!r}")
    entries = tuple(e.strip().lower() for e in entries)
    for e in entries:
        allowed_entry(e)
    return entries


def _non_negative(_inst: object, attr: attrs.Attribute, value: int) -> None:
    check_int(value, f"FetchPolicy.{attr.name}", minimum=0)


def _flag(_inst: object, attr: attrs.Attribute, value: bool) -> None:
    if not isinstance(value, bool):
        raise SpecError(f"FetchPolicy.{attr.name} must be true or false, got {value!r}")


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
    allow_private_networks: bool = attrs.field(default=True, validator=_flag)
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=_hosts)
    max_redirects: int = attrs.field(default=5, validator=_non_negative)


DEFAULT_POLICY = FetchPolicy()


def source_form(source: str) -> str:
    """Which of :data:`FORMS` a string source is, by the reference's precedence."""
    return next((form for prefix, form in PREFIXES if source.startswith(prefix)), "base64")


def shown_source(source: str) -> str:
    """A source as error messages show it: no userinfo, and long text abbreviated."""
    source = redact(source)
    return source if len(source) <= 256 else f"{source[:128]}... ({len(source)} chars)"


LABEL_CHARS = 80  # the most of a source an error's "item N (...)" shows


def source_label(source: Any) -> str | None:
    """The short name an error gives an item's source: a path's (or ``file://`` URL's)
    file name, an http(s) URL without userinfo, query or fragment (signed URLs carry
    credentials there), the start of a ``data:`` URL; None for inline data (bytes,
    base64 text, pixels), which has no name worth showing."""
    if isinstance(source, os.PathLike):
        return _file_name(os.fsdecode(source))
    if not isinstance(source, str):
        return None
    form = source_form(source)
    if form in ("path", "file"):
        return _file_name(source.removeprefix("file://"))
    if form in HTTP_FORMS:
        url = redact(source)
        cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        return _abbreviated(url[:cut]) + ("?..." if cut < len(url) else "")
    if form == "data":
        head, comma, _ = source[: LABEL_CHARS // 2].partition(",")
        if comma:
            return f"{head},..."
        media, semi, _ = head.partition(";")  # without a comma, what follows may be payload: never shown
        return f"{media};..." if semi else "data:..."
    return None


def _file_name(path: str) -> str:
    return _abbreviated(os.path.basename(path.rstrip("/")) or path)


def _abbreviated(text: str) -> str:
    # The end of a path or URL is its file name: keep both ends.
    if len(text) <= LABEL_CHARS:
        return text
    tail = LABEL_CHARS // 2
    return f"{text[: LABEL_CHARS - tail - 3]}...{text[-tail:]}"


def check_form(form: str, policy: FetchPolicy) -> None:
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


class Collector:
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


def take_bytes(src: bytes | bytearray | memoryview, max_bytes: int, budget: ByteBudget) -> bytes:
    data = src if isinstance(src, bytes) else bytes(src)  # a private copy of mutable buffers
    if len(data) > max_bytes:
        raise LimitExceededError(f"media source of {len(data)} bytes exceeds {max_bytes} bytes")
    if not budget.claim(len(data)):
        raise LimitExceededError(f"media source of {len(data)} bytes exceeds the request media byte budget")
    return data
