"""What ``mm-framework batch`` reads: a JSONL manifest, a directory or a glob of media files.

Each request becomes an :class:`Entry`, a small picklable value the worker processes
turn into an ``MmInput``. A line that is not a valid request is kept as an entry with a
``problem`` (it becomes an error row), so one bad line never stops a run; a manifest that
cannot be read at all does. The order is fixed (file order, or sorted paths), so a rerun
cuts the same shards (docs/batch.md, "Manifest").
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from blake3 import blake3

from .. import prompt
from ..checks import is_int
from ..errors import InvalidInputError
from ..media.policy import URL_PREFIXES

# Extensions a directory or glob contributes (case-insensitive), each file one request of
# its modality; decoding decides the rest.
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".mpo")
VIDEO_EXTENSIONS = (".mp4", ".webm", ".mkv", ".mov", ".avi")
AUDIO_EXTENSIONS = (".wav", ".flac", ".ogg", ".opus", ".mp3")
EXTENSIONS = {"image": IMAGE_EXTENSIONS, "video": VIDEO_EXTENSIONS, "audio": AUDIO_EXTENSIONS}
# Each modality's keys: one source, or a list of them (in item order images, videos, audios).
MEDIA_KEYS = {"image": "images", "video": "videos", "audio": "audios"}
_KEYS = ("id", *(k for pair in MEDIA_KEYS.items() for k in pair), "input_ids", "text")


@attrs.frozen
class Entry:
    """One request of the manifest; ``problem`` says why it is not a valid one."""

    id: str
    images: tuple[str, ...] = ()
    input_ids: tuple[int, ...] | None = None
    text: str | None = None
    problem: str | None = None
    videos: tuple[str, ...] = ()
    audios: tuple[str, ...] = ()

    @property
    def items(self) -> int:
        return len(self.images) + len(self.videos) + len(self.audios)

    @property
    def images_only(self) -> bool:
        """Whether the request's items are all images (the ones a one-image prompt repeats for)."""
        return not self.videos and not self.audios


def _source(value: str, base: str) -> str:
    """URLs and data URIs as given; anything else is a path relative to the manifest."""
    return value if value.startswith(URL_PREFIXES) else os.path.abspath(os.path.join(base, value))


def _entry(line_no: int, line: str, base: str) -> Entry:
    default_id = f"line {line_no}"
    try:
        obj = json.loads(line)
    except ValueError as e:
        return Entry(default_id, problem=f"manifest line {line_no}: invalid JSON: {e}")
    if not isinstance(obj, dict):
        return Entry(default_id, problem=f"manifest line {line_no}: expected a JSON object, got {type(obj).__name__}")
    rid = obj.get("id", default_id)
    rid = str(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) else default_id
    problem = _check(obj)
    if problem:
        return Entry(rid, problem=f"manifest line {line_no}: {problem}")
    media = {
        plural: tuple(_source(s, base) for s in obj.get(plural, [obj[one]] if one in obj else []))
        for one, plural in MEDIA_KEYS.items()
    }
    ids = obj.get("input_ids")
    return Entry(rid, media["images"], None if ids is None else tuple(ids), obj.get("text"),
                 videos=media["videos"], audios=media["audios"])


def _check(obj: dict[str, Any]) -> str | None:
    unknown = sorted(set(obj) - set(_KEYS))
    if unknown:
        return f"unknown key(s) {unknown}; expected {', '.join(_KEYS)}"
    for one, plural in MEDIA_KEYS.items():
        if one in obj and plural in obj:
            return f"give {one!r} or {plural!r}, not both"
        given = obj.get(plural, [obj.get(one)] if one in obj else None)
        if given is not None and (not isinstance(given, list) or not given
                                  or not all(isinstance(s, str) for s in given)):
            return f"{plural!r} must be a non-empty list of strings (or {one!r} one string)"
    if not any(k in obj for pair in MEDIA_KEYS.items() for k in pair):
        return "no media: give 'image'/'images', 'video'/'videos' or 'audio'/'audios'"
    ids = obj.get("input_ids")
    if ids is not None and (not isinstance(ids, list) or not all(is_int(v) for v in ids)):
        return "'input_ids' must be a list of integers"
    if obj.get("text") is not None and not isinstance(obj["text"], str):
        return "'text' must be a string"
    if "id" in obj and not (isinstance(obj["id"], (str, int)) and not isinstance(obj["id"], bool)):
        return "'id' must be a string or an integer"
    return None


def _jsonl(path: str) -> list[Entry]:
    base = os.path.dirname(os.path.abspath(path))
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"manifest {path}: {e}") from None
    return [_entry(n, line, base) for n, line in enumerate(lines, 1) if line.strip()]


def _files(paths: Sequence[str], root: str | None) -> list[Entry]:
    """One request per media file (by extension, not hidden), sorted by its id: the path
    relative to ``root``, or as matched."""
    found = []
    for p in paths:
        modality = next((m for m, ext in EXTENSIONS.items() if p.lower().endswith(ext)), None)
        if modality and not os.path.basename(p).startswith(".") and os.path.isfile(p):
            found.append((os.path.relpath(p, root).replace(os.sep, "/") if root else p, modality, p))
    return [Entry(i, **{MEDIA_KEYS[m]: (os.path.abspath(p),)}) for i, m, p in sorted(found)]


def read_manifest(manifest: str) -> list[Entry]:
    """The requests of a JSONL file, a directory (recursively) or a glob pattern."""
    if os.path.isdir(manifest):
        paths = [os.path.join(d, n) for d, _, names in os.walk(manifest) for n in names]
        entries = _files(paths, manifest)
    elif glob.has_magic(manifest):
        entries = _files(glob.glob(manifest, recursive=True), None)
    elif os.path.isfile(manifest):
        return _jsonl(manifest)
    else:
        raise InvalidInputError(f"manifest {manifest!r} is neither a file, a directory nor a glob pattern")
    if not entries:
        known = " ".join(ext for exts in EXTENSIONS.values() for ext in exts)
        raise InvalidInputError(f"manifest {manifest!r}: no image, video or audio files ({known})")
    return entries


def fingerprint(entries: Sequence[Entry]) -> str:
    """A digest of the requests, so a resumed run knows it is cutting the same shards."""
    h = blake3()
    for e in entries:
        h.update(json.dumps(attrs.astuple(e)).encode() + b"\n")
    return h.hexdigest()


def default_prompt(family: str, placeholders: Mapping[str, int], given: Sequence[int] | None) -> tuple[int, ...]:
    """The prompt of an all-image request that gives neither ids nor text, per image:
    ``--input-ids`` or else the pipeline's default prompt of one image. (A request with
    videos or audios gets the pipeline's own default, one placeholder per item.)"""
    return tuple(given) if given is not None else tuple(prompt.default_prompt(family, placeholders, ["image"]))
