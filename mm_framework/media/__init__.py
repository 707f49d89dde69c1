"""How media arrive and become pixels: sources -> bytes -> hash -> decoded RGB.

* :mod:`.sources`: every source form to raw bytes, inline (sync) or concurrently
  (async), under the request's byte budget; :mod:`.files` and :mod:`.http` (with
  :mod:`.body`, :mod:`.guard` and :mod:`.proxy`) do the reading;
* :mod:`.policy`: what a pipeline may fetch (:class:`FetchPolicy`) and how much;
* :mod:`.hashing`: the content hash of an item's raw bytes;
* :mod:`.decode`: Pillow to RGB uint8 with limits checked from the header.
"""

from __future__ import annotations

from .decode import decode_rgb, image_size, take_source
from .hashing import content_hash
from .http import request_timeout
from .policy import FORMS, FetchPolicy, source_form
from .sources import ASYNC_CONCURRENCY, base64_decode_strict, fetch_bytes, resolve_sources, resolve_sources_async

__all__ = [
    "ASYNC_CONCURRENCY", "FORMS", "FetchPolicy", "base64_decode_strict", "content_hash", "decode_rgb", "fetch_bytes",
    "image_size", "request_timeout", "resolve_sources", "resolve_sources_async", "source_form", "take_source",
]
