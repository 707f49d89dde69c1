"""Chat messages as a request sends them, normalised for the template and the pipeline.

Accepted content: a string, or a list of parts, each one of

* OpenAI Chat Completions: ``{"type": "text", "text": ...}``, ``{"type": "image_url",
  "image_url": {"url": ..., "detail": ...}}`` (``detail`` is checked and ignored),
  ``{"type": "input_audio", "input_audio": {"data": <base64>, "format": "wav" | "mp3" | ...}}``
  (``format`` is checked and ignored: the decoder reads the container), and the common
  ``{"type": "video_url" | "audio_url", "video_url" | "audio_url": {"url": ...}}`` extensions;
* transformers' own items: ``{"type": "image", "image" | "url" | "path" | "base64": ...}``,
  ``{"type": "video", "video" | "url" | "path": ...}``, ``{"type": "audio", "audio" | "url" |
  "path": ...}``.

A media part whose modality the pipeline's family does not take is an ``UnsupportedError``
naming the message and the part.

Every other key of a media part is a processor option of that item, the way qwen-vl-utils
users write them (``{"type": "image", "image": ..., "max_pixels": 512 * 28 * 28}``); the
family declares which it takes (``Capabilities.item_options``) and the core refuses the rest.

The template sees what transformers' processor hands it: messages without their ``None``
keys, ``image_url`` / ``video_url`` parts as ``{"type": "image" | "video", "url": ...}``, and
only plain JSON values (a decoded image becomes the text ``"<Image>"``, as there).
``audio_url`` parts reach it unchanged (transformers does not rewrite them, and audio
templates test for an ``audio_url`` key); ``input_audio`` parts, which transformers has no
form of, as its audio item ``{"type": "audio", "audio": <the base64 data>}``, the form audio
templates test for.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ..carriers import Capabilities
from ..errors import InvalidInputError, LimitExceededError, UnsupportedError
from ..limits import Limits
from ..request import Item

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
# Each media part type: its modality and the keys that hold its source, in transformers' order.
MEDIA = {
    "image": ("image", ("image", "url", "path", "base64")),
    "video": ("video", ("video", "url", "path")),
    "audio": ("audio", ("audio", "url", "path")),
    "image_url": ("image", ("image_url",)),
    "video_url": ("video", ("video_url",)),
    "audio_url": ("audio", ("audio_url",)),
    "input_audio": ("audio", ("input_audio",)),
}
DETAILS = ("auto", "low", "high")
# OpenAI's input_audio formats, and the containers the audio decoder reads.
AUDIO_FORMATS = ("wav", "mp3", "flac", "ogg", "opus")
PART_TYPES = ("text", *MEDIA)


@attrs.frozen
class Place:
    """Where a media item came from: message ``message``, part ``part`` (both 0-based)."""

    message: int
    part: int

    def __str__(self) -> str:
        return f"message {self.message} part {self.part}"


@attrs.frozen
class Chat:
    """A chat request normalised: the messages the template renders, and the media items
    in message order with where each came from."""

    messages: list[dict[str, Any]]
    items: tuple[Item, ...]
    places: tuple[Place, ...]


def plain(value: Any) -> Any:
    """``value`` as plain JSON types, anything else an inert ``"<TypeName>"`` (transformers'
    ``_plain_template_data``): the template never reaches a method of a caller's object."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, np.generic):
        return plain(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return f"<{type(value).__name__}>"


def _url_of(part: Mapping[str, Any], kind: str, at: Place) -> str:
    inner = part.get(kind)
    if isinstance(inner, str):
        return inner
    if not isinstance(inner, Mapping):
        raise InvalidInputError(f"{at}: a {kind} part needs {kind}: {{\"url\": ...}}")
    url = inner.get("url")
    if url in (None, ""):
        raise InvalidInputError(f"{at}: {kind} has no url")
    if not isinstance(url, str):
        raise InvalidInputError(f"{at}: {kind}.url must be a string")
    detail = inner.get("detail")
    if detail is not None and detail not in DETAILS:
        raise InvalidInputError(f"{at}: {kind}.detail must be one of {', '.join(DETAILS)}, got {detail!r}")
    return url


def _input_audio(part: Mapping[str, Any], at: Place) -> tuple[bytes, str]:
    """An ``input_audio`` part's decoded bytes and its base64 text."""
    inner = part.get("input_audio")
    if not isinstance(inner, Mapping):
        raise InvalidInputError(f'{at}: an input_audio part needs input_audio: {{"data": ..., "format": ...}}')
    unknown = sorted(set(inner) - {"data", "format"})
    if unknown:
        raise InvalidInputError(f"{at}: input_audio takes data and format, got {', '.join(map(repr, unknown))}")
    data, fmt = inner.get("data"), inner.get("format")
    if data in (None, ""):
        raise InvalidInputError(f"{at}: input_audio has no data")
    if not isinstance(data, str):
        raise InvalidInputError(f"{at}: input_audio.data must be base64 text, got {type(data).__name__}")
    if fmt not in AUDIO_FORMATS:
        raise InvalidInputError(f"{at}: input_audio.format must be one of {', '.join(AUDIO_FORMATS)}, got {fmt!r}")
    try:
        return base64.b64decode(data, validate=True), data
    except (binascii.Error, ValueError):
        raise InvalidInputError(f"{at}: input_audio.data is not valid base64 text") from None


def _source_of(part: Mapping[str, Any], kind: str, keys: Sequence[str], at: Place) -> tuple[str, Any]:
    given = [k for k in keys if k in part]
    if len(given) != 1:
        which = "none" if not given else ", ".join(given)
        raise InvalidInputError(f"{at}: the {kind} part needs exactly one of {', '.join(keys)} (got {which})")
    key = given[0]
    value = part[key]
    if key == "path":
        if not isinstance(value, (str, os.PathLike)):
            raise InvalidInputError(f"{at}: path must be a string, got {type(value).__name__}")
        value = os.path.abspath(os.fspath(value))
    elif key == "base64":
        if not isinstance(value, str):
            raise InvalidInputError(f"{at}: base64 must be a string, got {type(value).__name__}")
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError(f"{at}: base64 is not valid base64 text") from None
    return key, value


def normalise(messages: Any, capabilities: Capabilities, limits: Limits) -> Chat:
    """``messages`` checked and normalised; every rejection names ``message N part K``."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidInputError(f"messages must be a list of message objects, got {type(messages).__name__}")
    if not messages:
        raise InvalidInputError("messages is empty: a chat request needs at least one message")
    if len(messages) > limits.max_messages:
        raise LimitExceededError(f"chat request exceeds {limits.max_messages} messages (got {len(messages)})")
    out, items, places, text_bytes = [], [], [], 0
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidInputError(f"message {i} must be an object with a role and content, "
                                    f"got {type(message).__name__}")
        message = {k: v for k, v in message.items() if v is not None}
        role = message.get("role")
        if not isinstance(role, str):
            shown = "has no role" if role is None else f"role must be a string, got {type(role).__name__}"
            raise InvalidInputError(f"message {i} {shown}")
        if role not in ROLES:
            raise InvalidInputError(f"message {i}: unknown role {role!r}; roles: {', '.join(ROLES)}")
        content = message.get("content")
        if isinstance(content, str):
            text_bytes += len(content.encode("utf-8", "surrogatepass"))
        elif isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
            parts = []
            for k, part in enumerate(content):
                at = Place(i, k)
                part, item, size = _part(part, at, capabilities)
                parts.append(part)
                text_bytes += size
                if item is not None:
                    items.append(item)
                    places.append(at)
            message["content"] = parts
        elif content is not None:
            raise InvalidInputError(f"message {i}: content must be a string or a list of parts, "
                                    f"got {type(content).__name__}")
        out.append(plain(message))
    if text_bytes > limits.max_text_bytes:
        raise LimitExceededError(f"chat request text exceeds {limits.max_text_bytes} bytes (got {text_bytes})")
    return Chat(out, tuple(items), tuple(places))


def _part(part: Any, at: Place, capabilities: Capabilities) -> tuple[Any, Item | None, int]:
    """One content part: what the template sees, its media item (if any) and its text bytes."""
    if not isinstance(part, Mapping):
        raise InvalidInputError(f"{at} must be an object with a type, got {type(part).__name__}")
    kind = part.get("type")
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidInputError(f"{at}: text must be a string, got {type(text).__name__}")
        return part, None, len(text.encode("utf-8", "surrogatepass"))
    if kind not in MEDIA:
        shown = "no type" if kind is None else f"unknown part type {kind!r}"
        raise InvalidInputError(f"{at}: {shown}; part types: {', '.join(PART_TYPES)}")
    modality, keys = MEDIA[kind]
    if modality not in capabilities.modalities:
        raise UnsupportedError(f"{at}: this model takes no {modality} ({kind} part)")
    if kind in ("image_url", "video_url"):
        key, source = kind, _url_of(part, kind, at)
        shown = {"type": modality, "url": source}
    elif kind == "audio_url":
        key, source = kind, _url_of(part, kind, at)
        shown = part
    elif kind == "input_audio":
        key = kind
        source, data = _input_audio(part, at)
        shown = {**{k: v for k, v in part.items() if k not in ("type", key)}, "type": "audio", "audio": data}
    else:
        key, source = _source_of(part, kind, keys, at)
        shown = part
    options = {k: v for k, v in part.items() if k not in ("type", key)}
    return shown, Item(modality, source, **options), 0
