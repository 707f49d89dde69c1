"""The ``kimi_k25`` video fields (``Kimi_K25VideoProcessor`` + ``Kimi_K25Processor.replace_video_token``).

A spec without ``video_token_id`` takes no video. The ids of the text inside a video's expansion
(the timestamp pieces and the word ``video``) cannot be known without the Kimi tokenizer, so they
are the optional ``video_text_token_ids`` table (docs/families/kimi_k25.md §5); without it a
video is processed and counted, but a prompt given as ids cannot be expanded (``UnsupportedError``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from mm_framework import kernels
from mm_framework import plugin as mmp

MAX_ID = 2**31 - 1
RESAMPLES = tuple(kernels.TORCHVISION_RESAMPLERS)
# The pieces a timestamp "HH:MM:SS.mmm" pre-tokenizes into under the Kimi tokenizer's regex
# (digits in runs of at most three, each punctuation mark on its own), and the word between
# <|media_begin|> and <|media_content|>. gmtime's hours are 00-23, so two-digit pieces up to 59.
TEXT_PIECES = ("video", ":", ".", *(f"{i:02d}" for i in range(60)), *(f"{i:03d}" for i in range(1000)))

VIDEO_FIELDS: dict[str, Any] = {
    "video_token_id": None,
    "media_begin_token_id": None,
    "media_content_token_id": None,
    "media_end_token_id": None,
    "video_sample_frames": True,
    "video_fps": 2.0,
    "video_max_patches": 4096,
    "video_max_size_per_side": 512,
    "temporal_patch_size": 4,
    "video_resample": "pil_bicubic",
    "video_text_token_ids": None,
}


def _id_table(value: Any) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, Mapping):
        raise ValueError(f"must be an object of text piece -> list of ids, got {type(value).__name__}")
    missing = [p for p in TEXT_PIECES if p not in value]
    extra = [p for p in value if p not in TEXT_PIECES]
    if missing or extra:
        raise ValueError(f"must map exactly the {len(TEXT_PIECES)} pieces 'video', ':', '.', '00'..'59', "
                         f"'000'..'999' (missing {missing[:3]}, unknown {extra[:3]})")
    out = {}
    for piece in TEXT_PIECES:
        ids = value[piece]
        if (not isinstance(ids, (list, tuple)) or not ids
                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_ID for i in ids)):
            raise ValueError(f"piece {piece!r} must map to a non-empty list of ids in 0..{MAX_ID}, got {ids!r}")
        out[piece] = tuple(ids)
    return out


@attrs.frozen
class KimiVideoSpec:
    """A validated set of video fields (see :data:`VIDEO_FIELDS` for the defaults)."""

    # <|kimi_k25_video_placeholder|>: the prompt's placeholder and the pad of every chunk.
    video_token_id: int
    media_begin_token_id: int
    media_content_token_id: int
    media_end_token_id: int
    sample_frames: bool
    fps: float | None
    max_patches: int
    max_size_per_side: int
    temporal_patch_size: int
    resample: str
    text_ids: dict[str, tuple[int, ...]] | None = attrs.field(eq=False, hash=False)

    @property
    def resizer(self) -> str:
        return kernels.TORCHVISION_RESAMPLERS[self.resample]

    def to_dict(self) -> dict[str, Any]:
        return {
            "video_token_id": self.video_token_id, "media_begin_token_id": self.media_begin_token_id,
            "media_content_token_id": self.media_content_token_id, "media_end_token_id": self.media_end_token_id,
            "video_sample_frames": self.sample_frames, "video_fps": self.fps,
            "video_max_patches": self.max_patches, "video_max_size_per_side": self.max_size_per_side,
            "temporal_patch_size": self.temporal_patch_size, "video_resample": self.resample,
            "video_text_token_ids": None if self.text_ids is None else {k: list(v) for k, v in self.text_ids.items()},
        }


def read_video(f: mmp.SpecFields, params: Mapping[str, Any], image_token_id: int, max_canvas_pixels: int,
               patch: int, factor: int) -> KimiVideoSpec | None:
    """The video fields of a spec, or ``None`` when ``video_token_id`` is absent (no video);
    then no other video field may be given."""
    token = f.integer("video_token_id", minimum=0, maximum=MAX_ID, nullable=True)
    if token is None:
        stray = [k for k in VIDEO_FIELDS if k != "video_token_id" and k in params]
        if stray:
            raise f.error(stray, "need video_token_id (a spec without it takes no video)")
        return None
    ids = {}
    for name in ("media_begin_token_id", "media_content_token_id", "media_end_token_id"):
        value = f.integer(name, minimum=0, maximum=MAX_ID, nullable=True)
        if value is None:
            raise f.error(name, "is required with video_token_id (the markers of every chunk)")
        ids[name] = value
    roles = [image_token_id, token, *ids.values()]
    if len(set(roles)) != len(roles):
        raise f.error(["image_token_id", "video_token_id", *ids], "must be five different ids")
    sample = f.boolean("video_sample_frames")
    fps = f.number("video_fps", positive=True, nullable=True)
    if sample and fps is None:
        raise f.error("video_fps", "is required when video_sample_frames is true (the sampler's rate)")
    if not sample and params.get("video_fps") is not None:
        raise f.error("video_fps", "has no effect without video_sample_frames (every frame is used)")
    side = f.integer("video_max_size_per_side", minimum=1)
    canvas = -(-side * patch // factor) * factor
    if canvas * canvas > max_canvas_pixels:
        raise f.error("video_max_size_per_side", f"={side}: a {canvas}x{canvas} frame canvas is above the "
                                                 f"{max_canvas_pixels} pixels the core decodes by default")
    raw = params.get("video_text_token_ids")  # a table: SpecFields has no getter for it
    try:
        text_ids = None if raw is None else _id_table(raw)
    except ValueError as e:
        raise f.error("video_text_token_ids", str(e)) from None
    return KimiVideoSpec(
        video_token_id=token, **ids, sample_frames=sample, fps=fps if sample else None,
        max_patches=f.integer("video_max_patches", minimum=1), max_size_per_side=side,
        temporal_patch_size=f.integer("temporal_patch_size", minimum=1, maximum=1024),
        resample=f.choice("video_resample", RESAMPLES), text_ids=text_ids,
    )


def video_text_token_ids(encode: Callable[[str], Any]) -> dict[str, list[int]]:
    """The ``video_text_token_ids`` table from a tokenizer's ``encode`` (text -> ids, no special
    tokens added), each piece encoded on its own as the Kimi tokenizer's regex splits it."""
    return {piece: [int(i) for i in encode(piece)] for piece in TEXT_PIECES}
