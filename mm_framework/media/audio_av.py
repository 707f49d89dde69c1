"""Audio in containers libsndfile cannot read (MP4/M4A/MOV, WebM/Matroska), through PyAV.

The first audio stream is decoded frame by frame, each frame converted to float32 as
libsndfile converts PCM (``x / 2**(bits - 1)``) and downmixed with the soundfile path's
expression, so the family's ``kernels.resample`` (soxr, ``soxr_hq``) sees what it sees there.

Length rule (docs/audio.md, "Other containers"). Counts are made from the header, so the
header's length is the item's length: MP4's stream duration, Matroska's container duration.
Neither is the decoded length: an AAC or MP3 stream in MP4 decodes to the end of its last
codec frame, past the declared duration (the encoder's padding; the priming samples before
it are dropped by FFmpeg through the edit list), and Matroska rounds its duration up to the
millisecond and counts the Opus pre-skip. So the decoded samples are cut at the header's
length, and a stream ending short of it by at most one codec frame is padded with zeros (as
``load_audio`` pads soxr's output); one ending shorter is truncated, a ``MediaError``.
Decoding stops at the header's length, which was checked against ``max_audio_seconds``, so a
header understating its stream bounds nothing but what is kept.

A video item's own track, for a family that asks for it (``DecodeOptions.video_audio``), is
read by the same code (:func:`track_header`, :func:`decode_track`), ``None`` for a silent clip.

PyAV is the ``video`` extra, imported when such an item arrives.
"""

from __future__ import annotations

import io
from fractions import Fraction
from typing import Any

import numpy as np

from ..carriers import AudioHeader, DecodedAudio
from ..errors import MediaError, UnsupportedError
from ..limits import Limits
from .audio_samples import Keep, check_finite, check_seconds, downmix, kept_frames
from .video import EXTRA, _refuse_nested_open, _why

# How messages name the container of a video clip's audio track.
TRACK = "video clip"
# PyAV sample formats (planar ones end in "p") and the scale libsndfile reads them with.
_SCALE = {"u8": None, "s16": 1 / (1 << 15), "s32": 1 / (1 << 31), "flt": 1.0, "dbl": 1.0}


def _av(container: str) -> Any:
    try:
        import av
    except ImportError:
        raise UnsupportedError(f"audio: decoding {container} needs PyAV, which is not installed: "
                               f"pip install '{EXTRA}'") from None
    return av


def _open(data: bytes, container: str, *, optional: bool = False) -> tuple[Any, Any, Any] | None:
    """PyAV, the opened container and its first audio stream; ``None`` for a container
    without one when ``optional`` (a video clip's track)."""
    av = _av(container)
    try:
        box = av.open(io.BytesIO(data), mode="r", io_open=_refuse_nested_open, metadata_errors="replace")
    except av.FFmpegError as e:
        raise MediaError(f"audio: not a readable {container} file ({_why(e)})") from None
    if not box.streams.audio:
        kinds = sorted({s.type for s in box.streams}) or ["none"]
        box.close()
        if optional:
            return None
        raise MediaError(f"audio: no audio stream in the {container} file (streams: {', '.join(kinds)})")
    return av, box, box.streams.audio[0]


def _header(box: Any, stream: Any, container: str) -> AudioHeader:
    codec = stream.codec_context
    if codec is None:
        raise MediaError(f"audio: the {container} file's audio stream has a codec PyAV cannot decode")
    rate, channels = int(codec.sample_rate or 0), int(codec.channels or 0)
    if stream.duration is not None and stream.time_base is not None:
        frames = round(stream.duration * stream.time_base * rate)
    elif box.duration is not None:
        frames = round(Fraction(box.duration, 1_000_000) * rate)
    else:
        raise MediaError(f"audio: the {container} header declares no duration")
    return AudioHeader(rate, channels, frames)


def read_header(data: bytes, limits: Limits, container: str) -> AudioHeader:
    """The header of an MP4/Matroska audio stream, read without decoding a sample."""
    return _read_header(_open(data, container), limits, container)


def track_header(data: bytes, limits: Limits) -> AudioHeader | None:
    """The header of a video clip's audio track (its first audio stream), ``None`` for a
    clip without one; limits checked."""
    return _read_header(_open(data, TRACK, optional=True), limits, TRACK)


def _read_header(opened: tuple[Any, Any, Any] | None, limits: Limits, container: str) -> AudioHeader | None:
    if opened is None:
        return None
    _, box, stream = opened
    with box:
        header = _header(box, stream, container)
    check_seconds(header, limits)
    return header


def _samples(frame: Any, header: AudioHeader) -> np.ndarray:
    """One decoded frame as float32 ``[frames, channels]``, soundfile's layout."""
    name = frame.format.name
    planar = name.endswith("p")
    kind = name[:-1] if planar else name
    if kind not in _SCALE:
        raise MediaError(f"audio: the decoder gives samples as {name}, which is not read")
    if frame.sample_rate != header.sample_rate or frame.layout.nb_channels != header.channels:
        raise MediaError(f"audio: the stream changes from {header.sample_rate} Hz, {header.channels} channels to "
                         f"{frame.sample_rate} Hz, {frame.layout.nb_channels} channels")
    a = frame.to_ndarray()
    a = a.T if planar else a.reshape(-1, header.channels)
    scale = _SCALE[kind]
    if scale is None:  # unsigned 8-bit, centred at 128
        return (a.astype(np.float32) - np.float32(128)) * np.float32(1 / 128)
    a = a.astype(np.float32)
    return a if scale == 1.0 else a * np.float32(scale)


def decode_audio(data: bytes, limits: Limits, container: str, keep: Keep = None) -> DecodedAudio:
    """The first audio stream as float32 mono at its own rate, of the header's length (or
    its first ``keep(header)`` frames)."""
    return _decode(_open(data, container), limits, container, keep)


def decode_track(data: bytes, limits: Limits) -> DecodedAudio | None:
    """A video clip's audio track as :func:`decode_audio` decodes an audio file, ``None``
    for a clip without one."""
    return _decode(_open(data, TRACK, optional=True), limits, TRACK)


def _decode(opened: tuple[Any, Any, Any] | None, limits: Limits, container: str, keep: Keep = None
            ) -> DecodedAudio | None:
    if opened is None:
        return None
    av, box, stream = opened
    with box:
        header = _header(box, stream, container)
        check_seconds(header, limits)
        wanted = kept_frames(header, keep)
        out = np.empty(wanted, np.float32)
        n, longest = 0, 0
        try:
            for frame in box.decode(stream):
                block = _samples(frame, header)
                longest = max(longest, len(block))
                take = min(len(block), wanted - n)
                out[n:n + take] = downmix(block[:take])
                n += take
                if n == wanted:
                    break
        except av.FFmpegError as e:
            raise MediaError(f"audio: corrupt {header.frames}-frame {container} stream ({_why(e)})") from None
    if n < wanted - longest or n == 0:
        raise MediaError(f"audio: truncated stream ({n} of the {header.frames} frames its header declares)")
    out[n:] = 0  # the declared duration's rounding and codec delay: under one codec frame
    check_finite(out, "audio: the decoded samples")
    return DecodedAudio(out, header.sample_rate, header.channels, None if wanted == header.frames else header.frames)
