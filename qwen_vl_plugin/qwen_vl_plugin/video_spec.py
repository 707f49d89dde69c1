"""The ``qwen_vl`` spec's video fields: what the video path needs, validated like the image fields.

A spec without ``video_processor`` takes no video (its pipelines refuse video items);
every other video field then must be absent. With it, the fields say which of
transformers' two video processors to reproduce (docs/families/qwen_vl_video.md §1) and
with what settings; a field that would have no effect under the others is refused, so a
spec holds exactly the settings its outputs depend on:

- ``video_processor``: ``"qwen2"`` (``Qwen2VLVideoProcessor``: Qwen2-VL, Qwen2.5-VL) or
  ``"qwen3"`` (``Qwen3VLVideoProcessor`` + ``Qwen3VLProcessor``: Qwen3-VL, Qwen3.5);
- ``video_token_id``: the ``<|video_pad|>`` id;
- ``video_min_pixels`` / ``video_max_pixels``: per frame for ``qwen2``, the budget over all
  sampled frames for ``qwen3``;
- ``video_sample_frames``: transformers' ``do_sample_frames``; when true, ``video_min_frames``
  and ``video_max_frames`` (4 and 768 when absent: both processors' class attributes, which an
  instance whose config names none samples with, as when a request turns sampling on), and
  ``video_fps`` (required for ``qwen2``; ``qwen3`` without it takes
  ``min(max(total, min_frames), max_frames)`` frames);
- ``tokens_per_second`` (``qwen2`` only): Qwen2.5-VL's ``vision_config.tokens_per_second``;
  its presence also makes the outputs carry ``second_per_grid_ts``;
- ``vision_start_token_id``, ``vision_end_token_id`` and ``timestamp_token_ids`` (``qwen3``
  only): the markers and the ids of ``<``, the digits, ``.``, `` seconds`` and ``>`` that the
  per-group ``<t seconds>`` prompt text tokenizes to (§5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework.plugin import SpecError, SpecFields

from .video_prompt import TimestampVocab

VIDEO_PROCESSORS = ("qwen2", "qwen3")
TIMESTAMP_PIECES = ("<", *"0123456789", ".", " seconds", ">")
VIDEO_FIELDS = (
    "video_processor", "video_token_id", "video_min_pixels", "video_max_pixels", "video_sample_frames",
    "video_fps", "video_min_frames", "video_max_frames", "tokens_per_second", "vision_start_token_id",
    "vision_end_token_id", "timestamp_token_ids",
)
_SAMPLING = ("video_fps", "video_min_frames", "video_max_frames")
# transformers 5.24's Qwen2VLVideoProcessor and Qwen3VLVideoProcessor class attributes
# min_frames and max_frames.
DEFAULT_FRAMES = (4, 768)
_QWEN3_ONLY = ("vision_start_token_id", "vision_end_token_id", "timestamp_token_ids")


@attrs.frozen
class VideoSpec:
    """The validated video fields (see the module docstring)."""

    processor: str
    token_id: int
    min_pixels: int
    max_pixels: int
    sample_frames: bool
    fps: float | None = None
    min_frames: int | None = None
    max_frames: int | None = None
    tokens_per_second: int | None = None
    vision_start_token_id: int | None = None
    vision_end_token_id: int | None = None
    timestamps: TimestampVocab | None = None

    @property
    def qwen3(self) -> bool:
        return self.processor == "qwen3"

    def to_dict(self) -> dict[str, Any]:
        """The spec fields, without the ones this configuration leaves out."""
        ts = self.timestamps
        values = {
            "video_processor": self.processor, "video_token_id": self.token_id, "video_min_pixels": self.min_pixels,
            "video_max_pixels": self.max_pixels, "video_sample_frames": self.sample_frames, "video_fps": self.fps,
            "video_min_frames": self.min_frames, "video_max_frames": self.max_frames,
            "tokens_per_second": self.tokens_per_second, "vision_start_token_id": self.vision_start_token_id,
            "vision_end_token_id": self.vision_end_token_id,
            "timestamp_token_ids": None if ts is None else dict(zip(TIMESTAMP_PIECES, timestamp_ids(ts))),
        }
        return {k: v for k, v in values.items() if v is not None}


def timestamp_ids(vocab: TimestampVocab) -> list[int]:
    """The ids of :data:`TIMESTAMP_PIECES`, in that order."""
    return [vocab.open, *vocab.digits, vocab.dot, vocab.seconds, vocab.close]


def parse_video(f: SpecFields, params: Mapping[str, Any], image_token_id: int) -> VideoSpec | None:
    """The video fields of ``params`` read through ``f`` (which declared them all optional)."""
    present = [k for k in VIDEO_FIELDS if params.get(k) is not None]
    if params.get("video_processor") is None:
        if present:
            raise f.error(present[0], "is set but 'video_processor' is not (video fields need a video processor)")
        return None
    processor = f.choice("video_processor", VIDEO_PROCESSORS)

    missing: dict[str, list[str]] = {}  # why -> the fields it requires that are absent

    def need(name: str, why: str) -> None:
        if params.get(name) is None:
            missing.setdefault(why, []).append(name)

    def refuse(name: str, why: str) -> None:
        if params.get(name) is not None:
            raise f.error(name, f"has no effect {why}; leave it out")

    for name in ("video_token_id", "video_min_pixels", "video_max_pixels", "video_sample_frames"):
        need(name, "when 'video_processor' is set")
    if processor == "qwen3":
        for name in _QWEN3_ONLY:
            need(name, f"with video_processor {processor!r}")
    sample = None if params.get("video_sample_frames") is None else f.boolean("video_sample_frames")
    if sample and processor == "qwen2":
        # transformers' Qwen2 sampler crashes without a rate (docs/families/qwen_vl_video.md §3).
        need("video_fps", f"when video_sample_frames is true (video_processor {processor!r})")
    if missing:
        raise _missing(f, missing)
    for name in _SAMPLING:
        if not sample:
            refuse(name, "when video_sample_frames is false")
    if processor == "qwen2":
        for name in _QWEN3_ONLY:
            refuse(name, f"with video_processor {processor!r}")
    else:
        refuse("tokens_per_second", "with video_processor 'qwen3' (it is Qwen2.5-VL's)")
    spec = VideoSpec(
        processor=processor,
        token_id=f.integer("video_token_id", minimum=0),
        # transformers refuses a zero (falsy) shortest_edge/longest_edge at call time.
        min_pixels=f.integer("video_min_pixels", minimum=1),
        max_pixels=f.integer("video_max_pixels", minimum=1),
        sample_frames=sample,
        fps=f.number("video_fps", positive=True, nullable=True),
        min_frames=_frames(f, "video_min_frames", sample, DEFAULT_FRAMES[0]),
        max_frames=_frames(f, "video_max_frames", sample, DEFAULT_FRAMES[1]),
        tokens_per_second=f.integer("tokens_per_second", minimum=1, nullable=True),
        vision_start_token_id=f.integer("vision_start_token_id", minimum=0, nullable=True),
        vision_end_token_id=f.integer("vision_end_token_id", minimum=0, nullable=True),
        timestamps=_timestamps(f, params.get("timestamp_token_ids")),
    )
    _check_distinct(f, image_token_id, spec)
    return spec


def _frames(f: SpecFields, name: str, sample: bool | None, default: int) -> int | None:
    value = f.integer(name, minimum=1, nullable=True)
    return default if value is None and sample else value


def _missing(f: SpecFields, missing: dict[str, list[str]]) -> SpecError:
    """One error naming every absent field the others require (a spec filled in halfway
    learns all it lacks at once), with why each is needed."""
    names = [name for group in missing.values() for name in group]
    verb = "is" if len(names) == 1 else "are"
    if len(missing) == 1:
        return f.error(names, f"{verb} required {next(iter(missing))}")
    why = "; ".join(f"{', '.join(map(repr, group))} {reason}" for reason, group in missing.items())
    return f.error(names, f"{verb} required: {why}")


def check_pixels(f: SpecFields, v: VideoSpec, factor: int) -> None:
    """The video bounds' rules, as the image bounds' (docs/families/qwen_vl.md, "Spec
    rules"): smart_resize keeps a side at least one merged block long whatever the budget,
    and a minimum above the maximum breaks one of them silently."""
    if v.max_pixels < factor**2:
        raise f.error(
            "video_max_pixels", f"must be at least (patch_size * merge_size)**2 = {factor**2}, got {v.max_pixels}"
        )
    if v.min_pixels > v.max_pixels:
        raise f.error("video_min_pixels", f"must not exceed video_max_pixels, got {v.min_pixels} > {v.max_pixels}")


def _timestamps(f: SpecFields, value: Any) -> TimestampVocab | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != set(TIMESTAMP_PIECES):
        raise f.error(
            "timestamp_token_ids", f"must map exactly the pieces {list(TIMESTAMP_PIECES)} to token ids, got {value!r}"
        )
    ids = [value[k] for k in TIMESTAMP_PIECES]
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63 for v in ids):
        raise f.error("timestamp_token_ids", f"must hold non-negative int64 token ids, got {value!r}")
    return TimestampVocab(open=ids[0], digits=ids[1:11], dot=ids[11], seconds=ids[12], close=ids[13])


def _check_distinct(f: SpecFields, image_token_id: int, v: VideoSpec) -> None:
    # The expansion is found by these ids in the prompt and the model tells its
    # modalities apart by them: two roles on one id cannot be laid out.
    roles = {"image_token_id": image_token_id, "video_token_id": v.token_id,
             "vision_start_token_id": v.vision_start_token_id, "vision_end_token_id": v.vision_end_token_id}
    seen: dict[int, str] = {}
    for name, value in roles.items():
        if value is None:
            continue
        if value in seen:
            raise f.error(name, f"must differ from {seen[value]!r} (both are {value})")
        seen[value] = name
