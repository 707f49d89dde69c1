"""Modalities: the kinds of media item a request holds, each a registered plugin object.

A modality owns what is true of its items whatever the family: the decoded forms it
accepts besides the encoded ones every modality shares (bytes, base64, ``data:`` URLs,
paths, URLs: fetched by :mod:`.media.sources`), a header probe that sizes an item without
decoding it, its decode, its processed-size limit, and the hash domain of its decoded
forms (each hashes under its own blake3 context; encoded bytes share the content hash).
The family decides what an item becomes (``mm_plan_item``, ``mm_process_item``).

Image, video and audio are built in (:mod:`.default_modalities`), registered through the
``mm_register_modalities`` hook like any plugin's. Item numbering follows registration
order: images, then videos, then audios, then the modalities of plugins.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs

from .carriers import DecodeOptions, ItemPlan
from .errors import InvalidInputError
from .limits import Limits

# The source forms every modality takes, fetched to bytes by the core.
ENCODED_FORMS = (bytes, bytearray, memoryview, str, os.PathLike)

# fetch(encoded source) -> its bytes, under the request's policy and budget: for decoded
# forms that hold encoded parts (a clip given as a list of image files).
Fetch = Callable[[Any], bytes]


@attrs.frozen
class ItemContext:
    """One item's view of its pipeline: the family facade (``hooks``, a
    :class:`~.family.FamilyHooks`), the limits, the decode options and the item number."""

    hooks: Any
    limits: Limits
    decode_options: DecodeOptions
    index: int


class Modality:
    """Base of every modality; override what differs. Instances must be immutable and
    thread-safe: one serves every request of the process."""

    #: What ``OutputItem.modality``, ``Capabilities.modalities`` and layouts call it.
    name: str = ""
    #: The ``MmInput`` keyword taking a sequence of its sources (``"images"``).
    keyword: str = ""
    #: The kinds of decoded source it takes, for messages ("a PIL.Image.Image or a uint8 array").
    decoded_forms: str = ""

    def check_source(self, source: Any) -> Any:
        """``source`` as a request keeps it, after a type check (no I/O); raise
        ``InvalidInputError`` for a type this modality cannot take. Default: the encoded
        forms (:data:`ENCODED_FORMS`) as they are, anything else refused; a modality with
        decoded forms checks those and leaves the rest to this."""
        if isinstance(source, ENCODED_FORMS):
            return source
        also = f", {self.decoded_forms}" if self.decoded_forms else ""
        raise InvalidInputError(
            f"unsupported {self.name} source type {type(source).__name__}; expected bytes, str, a pathlib.Path{also}"
        )

    def take_decoded(self, source: Any, limits: Limits, budget: Any, fetch: Fetch) -> Any | None:
        """A decoded form copied, limited (``budget.claim`` its bytes) and hashed: an
        object with an int ``hash``. ``None`` for the encoded forms, which the core fetches."""
        return None

    def probe(self, source: Any, item: ItemContext) -> Any:
        """The item's header (``ImageHeader``, ``ClipHeader``, ...) without decoding its
        content; ``source`` is bytes or what :meth:`take_decoded` returned."""
        raise NotImplementedError

    def decode(self, source: Any, item: ItemContext) -> Any:
        """The item decoded for the family's ``mm_process_item``; limits checked."""
        raise NotImplementedError

    def header_of(self, media: Any) -> Any:
        """The header of decoded ``media``, as :meth:`probe` would have given it."""
        raise NotImplementedError

    def check_processed(self, header: Any, plan: ItemPlan, media: Any, limits: Limits) -> None:
        """Refuse (``LimitExceededError``) an item the family would process past a limit,
        from its plan, before the family allocates (``media`` is ``None`` in a token count,
        before decoding). Default: no size limit."""

    def size_of(self, header: Any) -> tuple[int, int] | None:
        """``OutputItem.size`` of an item with ``header``; ``None`` for media without one."""
        return None

    def frames_of(self, media: Any) -> int | None:
        """``OutputItem.frames`` of decoded ``media``: how many frames were used, if any."""
        return None
