"""A video item's audio track (``DecodeOptions.video_audio``; docs/video.md, "Audio tracks"):
the file's first audio stream through media/audio_av.py, exactly as an audio item of the same
bytes, or ``VideoFrames.audio``; absent unless the family asks, ``None`` for a silent clip."""

from __future__ import annotations

import io

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.carriers import DecodeOptions
from mm_framework.media import audio_av
from mm_framework.media.audio import decode_audio, read_header
from mm_framework.media.clips import take_clip
from mm_framework.media.policy import ByteBudget
from mm_framework.modality import ItemContext
from mm_framework.plugins import modalities

from .audio_helpers import av_encode, tone

av = pytest.importorskip("av")
LIMITS = mmf.Limits()
VIDEO = modalities()["video"]


class Hooks:
    """What the video modality asks of a family while decoding: every frame."""

    def sample_frames(self, header, index):
        return None


def context(video_audio: bool, limits: mmf.Limits = LIMITS) -> ItemContext:
    return ItemContext(Hooks(), limits, DecodeOptions(video_audio=video_audio), 0)


def silent_clip() -> bytes:
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        vs = out.add_stream("mpeg4", rate=10)
        vs.width, vs.height, vs.pix_fmt = 32, 24, "yuv420p"
        for _ in range(4):
            out.mux(vs.encode(av.VideoFrame.from_ndarray(np.zeros((24, 32, 3), np.uint8), format="rgb24")))
        out.mux(vs.encode())
    return buf.getvalue()


@pytest.fixture(scope="module")
def clip():
    return av_encode(tone(1.5, 22050, channels=2), 22050, "mp4", "aac", video=True)


def test_track_is_the_audio_item_of_the_same_bytes(clip):
    assert audio_av.track_header(clip, LIMITS) == read_header(clip, LIMITS)
    track, item = audio_av.decode_track(clip, LIMITS), decode_audio(clip, LIMITS)
    assert track.samples.tobytes() == item.samples.tobytes() and track.header == item.header


def test_silent_clip_has_no_track():
    clip = silent_clip()
    assert audio_av.track_header(clip, LIMITS) is None and audio_av.decode_track(clip, LIMITS) is None
    assert VIDEO.probe(clip, context(True)).audio is None
    assert VIDEO.decode(clip, context(True)).audio is None


def test_the_video_modality_reads_the_track_only_when_asked(clip):
    assert VIDEO.probe(clip, context(False)).audio is None
    assert VIDEO.decode(clip, context(False)).audio is None
    header = VIDEO.probe(clip, context(True))
    assert header.audio == read_header(clip, LIMITS) and header.total_frames == 15
    decoded = VIDEO.decode(clip, context(True))
    assert decoded.audio.samples.tobytes() == decode_audio(clip, LIMITS).samples.tobytes()
    assert VIDEO.header_of(decoded).audio == header.audio
    with pytest.raises(mmf.LimitExceededError, match="item 0: audio of 1.50 s"):
        VIDEO.decode(clip, context(True, mmf.Limits(max_audio_seconds=1)))
    with pytest.raises(mmf.LimitExceededError, match="audio of 1.50 s"):
        VIDEO.probe(clip, context(True, mmf.Limits(max_audio_seconds=1)))


def test_video_frames_carry_their_audio():
    frames = np.zeros((3, 8, 8, 3), np.uint8)
    samples = tone(0.5, 8000, channels=2)
    with_audio = take_clip(mmf.VideoFrames(frames, fps=3.0, audio=mmf.Audio(samples, sample_rate=8000)), LIMITS,
                           ByteBudget(1 << 30), bytes)
    without = take_clip(mmf.VideoFrames(frames, fps=3.0), LIMITS, ByteBudget(1 << 30), bytes)
    assert with_audio.hash != without.hash  # different items for the cache
    assert with_audio.audio.header == mmf.plugin.AudioHeader(8000, 2, 4000)
    assert VIDEO.probe(with_audio, context(False)).audio is None
    assert VIDEO.probe(with_audio, context(True)).audio == with_audio.audio.header
    assert VIDEO.decode(with_audio, context(True)).audio is with_audio.audio.audio
    assert VIDEO.decode(without, context(True)).audio is None
    with pytest.raises(mmf.LimitExceededError, match="max_audio_seconds = 1"):
        take_clip(mmf.VideoFrames(frames, audio=mmf.Audio(tone(2.0, 8000), sample_rate=8000)),
                  mmf.Limits(max_audio_seconds=1), ByteBudget(1 << 30), bytes)
