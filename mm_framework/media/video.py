"""Video clips: encoded bytes decoded with PyAV exactly as transformers' ``pyav`` loader.

The decoder is part of the reference: the same PyAV call (``frame.to_ndarray(format="rgb24")``,
swscale bilinear, the frame's own colorspace and range) gives the same bytes, and any other
path does not. Only the frames a family will use are converted, and decoding stops where
transformers' loader stops (docs/families/qwen_vl_video.md §2). PyAV is an optional extra
(``mm-framework[video]``), imported on first use.

Frames the caller decoded become the same :class:`VideoClip` in :mod:`.video_frames`;
limits are checked before any frame is converted.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from ..carriers import ClipHeader, DecodedAudio
from ..checks import is_int
from ..errors import InternalError, LimitExceededError, MediaError, UnsupportedError

EXTRA = "mm-framework[video]"


@attrs.frozen(eq=False)
class VideoClip:
    """Decoded RGB frames and where they came from.

    ``frames``: ``[T, H, W, 3]`` uint8, C-contiguous, read-only. ``indices[k]`` is the
    source frame of ``frames[k]`` (transformers' ``metadata.frames_indices``);
    ``total_frames`` is the source's frame count the indices refer to; ``fps`` is the
    source frame rate, ``None`` when unknown (a decoded clip without metadata). ``audio``:
    the clip's audio track, when the family asked for it (``DecodeOptions.video_audio``)
    and the clip has one.
    """

    frames: np.ndarray
    indices: tuple[int, ...]
    total_frames: int
    fps: float | None
    audio: DecodedAudio | None = None

    def __attrs_post_init__(self) -> None:
        f = self.frames
        if not (isinstance(f, np.ndarray) and f.dtype == np.uint8 and f.ndim == 4 and f.shape[3] == 3):
            raise InternalError(f"VideoClip frames must be uint8 [T, H, W, 3], got {describe_array(f)}")
        if f.flags.writeable or not f.flags.c_contiguous:
            raise InternalError("VideoClip frames must be a read-only C-contiguous array")
        if len(self.indices) != f.shape[0]:
            raise InternalError(f"VideoClip has {f.shape[0]} frames but {len(self.indices)} indices")

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def height(self) -> int:
        return int(self.frames.shape[1])

    @property
    def width(self) -> int:
        return int(self.frames.shape[2])

    @property
    def header(self) -> ClipHeader:
        """The clip as its source declared it (what the family planned it from)."""
        return ClipHeader(total_frames=self.total_frames, fps=self.fps, width=self.width, height=self.height,
                          audio=None if self.audio is None else self.audio.header)


# choose(header) -> the source frame indices to keep, in output order, or None for every
# frame (transformers' default loader: frames 0..total-1, and whatever a short stream has).
Chooser = Callable[[ClipHeader], Sequence[int] | None]


def decode_clip(data: bytes, choose: Chooser, *, max_frames: int, max_pixels: int) -> VideoClip:
    """Decode the frames ``choose`` picks from the encoded clip ``data``.

    ``choose`` sees the :class:`ClipHeader` and returns source frame indices (each in
    ``0..total_frames-1``, any order, repeats allowed: output frame ``k`` is source frame
    ``indices[k]``, like indexing the fully decoded clip), or ``None`` for every frame.
    Frames are decoded in stream order; only chosen ones are converted to RGB, and
    decoding stops at the first frame after the last chosen one, as transformers' loader.

    Limits, from the header before decoding: at most ``max_frames`` output frames and
    ``frames * width * height <= max_pixels`` (:class:`LimitExceededError`).

    :class:`MediaError` for bytes PyAV cannot open, no video stream (audio-only), no frame
    count or frame rate in the header (where transformers would crash), a decode error
    (truncated or corrupt data) before the loader would stop, frames whose size changes,
    and a stream that ends before a chosen frame. With ``None`` (every frame) a stream
    shorter than its header yields the frames it has, which is what transformers
    processes (and ``total_frames`` is what it had); a stream longer than its header is
    read only up to the header's count.
    """
    av = _import_av()
    with _open(av, data) as container:
        header = _header(container.streams.video[0])
        wanted = choose(header)
        every = wanted is None
        indices = list(range(header.total_frames)) if every else check_frame_indices(wanted, header.total_frames)
        check_limits(len(indices), header.width, header.height, max_frames=max_frames, max_pixels=max_pixels)
        distinct = sorted(set(indices))
        slot = {src: k for k, src in enumerate(distinct)}
        out = np.empty((len(distinct), header.height, header.width, 3), dtype=np.uint8)
        got, seen = _decode_into(av, container, slot, out)
    if got < len(distinct):
        if not every or got == 0:
            raise MediaError(
                f"video decode: the stream ended after {seen} frames but its header says "
                f"{header.total_frames}; frame {distinct[got]} was to be used"
            )
        # transformers keeps what a short stream has when it takes every frame, at the
        # source rate (its second_per_grid_ts is 2/fps), so those frames are the clip (§2).
        out, indices, total = out[:got], indices[:got], got
    else:
        total = header.total_frames
    frames = out if len(indices) == len(distinct) and indices == distinct else out[[slot[i] for i in indices]]
    frames = np.ascontiguousarray(frames)
    frames.flags.writeable = False
    return VideoClip(frames=frames, indices=tuple(indices), total_frames=total, fps=header.fps)


def read_header(data: bytes) -> ClipHeader:
    """The :class:`ClipHeader` of ``data`` without decoding a frame (same errors as decoding)."""
    with _open(_import_av(), data) as container:
        return _header(container.streams.video[0])


def check_limits(n_frames: int, width: int, height: int, *, max_frames: int, max_pixels: int) -> None:
    """:class:`LimitExceededError` when ``n_frames`` frames of ``width x height`` cross a limit."""
    if n_frames > max_frames:
        raise LimitExceededError(f"video: {n_frames} frames, above the limit of {max_frames} frames per clip")
    total = n_frames * width * height
    if total > max_pixels:
        raise LimitExceededError(
            f"video: {n_frames} frames of {width}x{height} = {total} pixels, above the limit of {max_pixels}"
        )


# --------------------------------------------------------------------------- internals


def _import_av() -> Any:
    try:
        import av
    except ImportError:
        raise UnsupportedError(
            f"decoding an encoded video clip needs PyAV, which is not installed: pip install '{EXTRA}' "
            "(decoded frames work without it)"
        ) from None
    return av


def _open(av: Any, data: bytes) -> Any:
    """The container of ``data``, which has at least one video stream."""
    try:
        # Tags are never read; PyAV's default (strict UTF-8) raises on a Latin-1 title.
        container = av.open(io.BytesIO(data), mode="r", io_open=_refuse_nested_open, metadata_errors="replace")
    except av.FFmpegError as e:
        raise MediaError(
            f"video decode: not a clip PyAV can open (corrupt, truncated or not a video): {_why(e)}"
        ) from None
    if not container.streams.video:
        kinds = sorted({s.type for s in container.streams}) or ["none"]
        container.close()
        raise MediaError(f"video decode: no video stream (streams: {', '.join(kinds)})")
    return container


def _refuse_nested_open(url: str, flags: int, options: dict) -> Any:
    # A clip is one self-contained byte string: playlists, concat scripts and external
    # data references must not make FFmpeg open other files or URLs.
    raise PermissionError("a video clip may not open other resources")


def _header(stream: Any) -> ClipHeader:
    """transformers' metadata of the first video stream, refusing what would crash it (§2)."""
    total = int(stream.frames)
    rate = stream.average_rate
    if total <= 0:
        # transformers would index an empty frame list; counting frames by decoding the
        # whole stream is a different (unbounded) reference.
        raise MediaError(
            "video decode: the stream header has no frame count (e.g. WebM/Matroska, a still image or "
            "a zero-frame clip); transformers' loader needs it"
        )
    if rate is None or rate <= 0:
        raise MediaError("video decode: the stream header has no average frame rate; transformers' loader needs it")
    width, height = int(stream.width), int(stream.height)
    if width <= 0 or height <= 0:
        raise MediaError(f"video decode: the stream header has an empty frame size {width}x{height}")
    fps = float(rate)
    return ClipHeader(
        total_frames=total,
        fps=fps,
        width=width,
        height=height,
        duration=float(total / rate),
        codec=str(stream.codec_context.name),
        pixel_format=None if stream.codec_context.pix_fmt is None else str(stream.codec_context.pix_fmt),
    )


def _decode_into(av: Any, container: Any, slot: dict[int, int], out: np.ndarray) -> tuple[int, int]:
    """Decode in stream order, converting frames in ``slot`` into ``out[slot[i]]``.

    Stops on the first frame after the last wanted one (transformers' loop decodes that
    frame too, so a decode error there fails both). Returns how many wanted frames
    arrived and how many frames the stream yielded.
    """
    last = max(slot)
    got = seen = 0
    h, w = out.shape[1:3]
    container.seek(0)
    try:
        for i, frame in enumerate(container.decode(video=0)):
            if i > last:
                break
            seen = i + 1
            k = slot.get(i)
            if k is None:
                continue
            rgb = frame.to_ndarray(format="rgb24")
            if rgb.shape != (h, w, 3):
                raise MediaError(
                    f"video decode: frame {i} is {rgb.shape[1]}x{rgb.shape[0]}, the stream header says {w}x{h}"
                )
            out[k] = rgb
            got += 1
    except av.FFmpegError as e:
        # Not how many frames arrived first: with FFmpeg's frame threads that depends on timing,
        # and the same request must fail with the same message.
        raise MediaError(
            f"video decode: decoding failed before the {len(slot)} frames used were read "
            f"(truncated or corrupt clip): {_why(e)}"
        ) from None
    return got, seen


def check_frame_indices(
    indices: Any, total: int, *, error: type[Exception] = InternalError, what: str = "source frame"
) -> list[int]:
    """Python ints in ``0..total-1`` (numpy integers accepted), at least one; else ``error``."""
    out = []
    for v in indices:
        if not is_int(v):
            raise error(f"video: {what} index {v!r} is not an integer")
        v = int(v)
        if not 0 <= v < total:
            raise error(f"video: {what} index {v} is outside 0..{total - 1}")
        out.append(v)
    if not out:
        raise error("video: no frame chosen")
    return out


def describe_array(a: Any) -> str:
    return f"{a.dtype} {tuple(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__


_NO_NAME = re.compile(r":\s*'<none>'$")


def _why(e: BaseException) -> str:
    # PyAV names an in-memory input '<none>'; drop it so the message stays about the data.
    return _NO_NAME.sub("", str(e)).strip() or type(e).__name__
