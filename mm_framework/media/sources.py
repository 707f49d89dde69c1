"""Resolving media sources to raw bytes, under the request's byte limits and a fetch policy.

This module holds the entry points (:func:`resolve_sources`,
:func:`resolve_sources_async`, :func:`fetch_bytes`) and the inline forms (``data:`` URLs
and base64); files are read by :mod:`.files`, HTTP by :mod:`.http`, and what may be
read, and how much, is :mod:`.policy`.

Source forms, in precedence order (prefix checks are case-sensitive, as the reference):

====================  ==========  ====================================================
prefix                form        read as
====================  ==========  ====================================================
``http://``           ``http``    HTTP GET through httpx (:mod:`.http`)
``https://``          ``https``   same, over TLS
``file://``           ``file``    the path after the prefix (``file:///a/x`` is ``/a/x``;
                                  ``file://rel`` is the relative path ``rel``)
``/``                 ``path``    that absolute path
``data:``             ``data``    everything after the first ``,``, strict base64 (the
                                  media type and ``;base64`` marker are not inspected)
anything else         ``base64``  strict base64 of the whole string
====================  ==========  ====================================================

So a bare base64 JPEG (``/9j/...``) is read as a path: send JPEG payloads as ``data:``
URLs, and a relative path string is read as base64 too (as by the reference; its error
says to pass an absolute path or a ``pathlib.Path``). Besides strings: bytes-like sources
are taken as they are (a private copy of mutable buffers); a ``pathlib.Path`` is a path
(relative to the working directory); a ``PIL.Image.Image`` or a uint8 array is an item
given as pixels (:mod:`.decoded`).

Limits: every source is capped at ``Limits.max_source_bytes`` and all sources of one
request share one :class:`ByteBudget` of ``Limits.max_request_bytes``. Bodies are
streamed and cut off as soon as a limit is crossed; ``Content-Length`` and file sizes
only let an oversize source fail earlier, they are never trusted to bound a read. A
base64 payload's decoded size is checked before it is decoded. Only regular files are
read (no directories, FIFOs or devices such as ``/dev/zero``).

Threading: nothing here touches the CPU fan-out pool (:mod:`mm_framework.par`).
:func:`resolve_sources` works inline on the caller's thread, one source after another.
:func:`resolve_sources_async` fetches a request's sources concurrently (at most
:data:`ASYNC_CONCURRENCY` at a time); file reads and base64 decoding go to the event
loop's default executor. HTTP runs on the I/O loop of :mod:`.http` in both cases.

Errors: a policy refusal or I/O failure is a ``FetchError`` naming the rule or cause,
an undecodable ``data:``/base64 payload a ``MediaError``, a crossed cap a
``LimitExceededError``; :func:`resolve_sources` attributes each to its item index.
"""

from __future__ import annotations

import asyncio
import binascii
import os
import re
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar, Union

import numpy as np
from PIL import Image

from ..carriers import VideoFrames
from ..errors import InvalidInputError, LimitExceededError, MediaError, MmError
from ..limits import Limits
from .clips import DecodedClip, take_clip
from .decoded import DecodedSource, take_decoded
from .files import read_file
from .http import http_get, http_get_async
from .policy import (
    DEFAULT_POLICY, HTTP_FORMS, ByteBudget, FetchPolicy, check_form, shown_source, source_form, take_bytes,
)


T = TypeVar("T")

ASYNC_CONCURRENCY = 8  # concurrent fetches per request on the async path


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


_PATH_HINT = " (sources starting with '/' are paths; send base64 as a data: URL)"


def _fetch_local(source: str, form: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy) -> bytes:
    """Every form but http(s): blocking file I/O or CPU-only decoding."""
    if form == "file":
        return read_file(shown_source(source), source[len("file://") :], max_bytes, budget, policy)
    if form == "path":
        hint = _PATH_HINT if _looks_like_base64(source) else ""
        return read_file(shown_source(source), source, max_bytes, budget, policy, hint)
    if form == "data":
        _, comma, payload = source.partition(",")
        if not comma:
            raise MediaError("media fetch: malformed data: URL (no comma before the payload)")
        return _decode_base64(payload, "data: URL", max_bytes, budget)
    try:
        return _decode_base64(source, "base64 source", max_bytes, budget)
    except MediaError as e:
        if _looks_like_a_path(source):
            raise MediaError(
                f"{e.cause} (read as base64, as the reference reads any string that is not a URL or an "
                f"absolute path: pass an absolute path or a pathlib.Path)"
            ) from None
        raise


_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")


def _looks_like_base64(text: str) -> bool:
    """A long run of base64 symbols (a JPEG's is ``/9j/...``): a payload sent as a path."""
    return _BASE64_TEXT.fullmatch(text.strip()) is not None


def _looks_like_a_path(text: str) -> bool:
    """A relative file name: a '.' (never in base64), or an existing file's name."""
    if len(text) > 4096:
        return False
    return "." in text or os.path.exists(text)


# --------------------------------------------------------------------------- entry points


Resolved = Union[bytes, DecodedSource, DecodedClip]


def _inline(src: Any, limits: Limits, budget: ByteBudget, policy: FetchPolicy, video: bool = False) -> Resolved | None:
    """Sources that need no network, resolved here; None for the string and path forms."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        return take_bytes(src, limits.max_source_bytes, budget)
    if video and isinstance(src, (VideoFrames, np.ndarray)):
        return take_clip(src, limits, budget, lambda frame: _resolve_one(frame, limits, budget, policy))
    if isinstance(src, (Image.Image, np.ndarray)):
        return take_decoded(src, limits.max_image_pixels, budget)
    if not isinstance(src, (str, os.PathLike)):
        raise InvalidInputError(f"unsupported source type {type(src).__name__}")
    return None


def _form_of(src: str | os.PathLike[str], policy: FetchPolicy) -> tuple[str, str]:
    """``(source string, form)``, the form allowed by the policy. A ``Path`` is a path."""
    if isinstance(src, os.PathLike):
        src, form = os.path.abspath(os.fspath(src)), "path"
    else:
        form = source_form(src)
    check_form(form, policy)
    return src, form


def _resolve_one(src: Any, limits: Limits, budget: ByteBudget, policy: FetchPolicy, video: bool = False) -> Resolved:
    done = _inline(src, limits, budget, policy, video)
    if done is not None:
        return done
    text, form = _form_of(src, policy)
    if form in HTTP_FORMS:
        return http_get(text, limits.max_source_bytes, budget, policy)
    return _fetch_local(text, form, limits.max_source_bytes, budget, policy)


def resolve_sources(
    sources: Sequence[Any],
    *,
    limits: Limits,
    policy: FetchPolicy | None = None,
    times: list[float] | None = None,
    videos: Sequence[bool] = (),
) -> list[Resolved]:
    """Resolve every source inline on the caller's thread, sequentially, in input order.

    The first failure rejects the request, attributed to its item index. ``times``, when
    given, receives each source's milliseconds. ``videos[i]`` marks item ``i`` a video,
    whose decoded frames become a :class:`~.clips.DecodedClip`.
    """
    policy = DEFAULT_POLICY if policy is None else policy
    budget = ByteBudget(limits.max_request_bytes)
    out: list[Resolved] = []
    for i, src in enumerate(sources):
        t0 = time.perf_counter()
        try:
            out.append(_resolve_one(src, limits, budget, policy, i < len(videos) and videos[i]))
        except MmError as e:
            raise e.at_item(i) from None
        if times is not None:
            times.append((time.perf_counter() - t0) * 1000.0)
    return out


def fetch_bytes(source: str) -> bytes:
    """One source with the default policy and a budget of exactly one source cap (64 MiB)."""
    limits = Limits()
    data = _resolve_one(source, limits, ByteBudget(limits.max_source_bytes), DEFAULT_POLICY)
    assert isinstance(data, bytes)
    return data


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
    sources: Sequence[Any],
    *,
    limits: Limits,
    policy: FetchPolicy | None = None,
    times: list[float] | None = None,
    videos: Sequence[bool] = (),
) -> list[Resolved]:
    """Like :func:`resolve_sources`, concurrently and without blocking the event loop.

    At most :data:`ASYNC_CONCURRENCY` sources are fetched at once. The budget is shared,
    so which item crosses it first can differ from the sync path.
    """
    policy = DEFAULT_POLICY if policy is None else policy
    budget = ByteBudget(limits.max_request_bytes)
    cap = limits.max_source_bytes
    gate = asyncio.Semaphore(ASYNC_CONCURRENCY)

    took = [0.0] * len(sources)

    async def one(i: int, src: Any) -> Resolved:
        t0 = time.perf_counter()
        try:
            return await fetch(src, i < len(videos) and videos[i])
        except MmError as e:
            raise e.at_item(i) from None
        finally:
            took[i] = (time.perf_counter() - t0) * 1000.0

    async def fetch(src: Any, video: bool) -> Resolved:
        if isinstance(src, (bytes, bytearray, memoryview)):
            return take_bytes(src, cap, budget)
        if not isinstance(src, (str, os.PathLike)):  # pixels: a copy, off the loop
            return await asyncio.to_thread(_inline, src, limits, budget, policy, video)
        text, form = _form_of(src, policy)
        async with gate:
            if form in HTTP_FORMS:
                return await http_get_async(text, cap, budget, policy)
            return await asyncio.to_thread(_fetch_local, text, form, cap, budget, policy)

    out = await _all_or_first_error([one(i, src) for i, src in enumerate(sources)])
    if times is not None:
        times.extend(took)
    return out
