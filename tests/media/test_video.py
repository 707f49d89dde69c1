"""Video clips (mm_framework.media.video and .video_frames): PyAV decoding as transformers'
``pyav`` loader, limits, every way a clip can be refused, and decoded-frame clips.

Clips are encoded here with PyAV's built-in mpeg4 and mjpeg encoders; tests that need
PyAV skip without it, and the no-PyAV behaviour is tested by hiding the module.
"""

from __future__ import annotations

import io
import os
import sys

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.media.video import ClipHeader, VideoClip, decode_clip, read_header
from mm_framework.media.video_frames import clip_from_frames, select_frames

BIG = 1 << 40


def _frame(w: int, h: int, k: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([(xx * 7 + k * 19) % 256, (yy * 5 + k * 3) % 256, (xx + yy + k * 11) % 256], -1).astype(np.uint8)


def encode(
    n: int, w: int = 48, h: int = 32, *, codec: str = "mpeg4", fmt: str = "mp4", rate=10, faststart: bool = False,
    tmp: str | None = None,
) -> bytes:
    av = pytest.importorskip("av")
    target = os.path.join(tmp, "clip." + fmt) if tmp else io.BytesIO()
    options = {"movflags": "faststart"} if faststart else {}
    with av.open(target, "w", format=fmt, options=options) as out:
        s = out.add_stream(codec, rate=rate)
        s.width, s.height, s.pix_fmt = w, h, "yuvj420p" if codec == "mjpeg" else "yuv420p"
        for k in range(n):
            for p in s.encode(av.VideoFrame.from_ndarray(_frame(w, h, k), format="rgb24")):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    if tmp:
        with open(target, "rb") as f:
            return f.read()
    return target.getvalue()


def every_frame(data: bytes) -> np.ndarray:
    """What transformers' loader returns without sampling: all frames, in order."""
    import av

    with av.open(io.BytesIO(data)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


@pytest.fixture(scope="module")
def clip30() -> bytes:
    return encode(30)


def test_header_is_transformers_metadata(clip30):
    h = read_header(clip30)
    assert h == ClipHeader(total_frames=30, fps=10.0, width=48, height=32, duration=3.0, codec="mpeg4",
                           pixel_format="yuv420p")


def test_chosen_frames_equal_the_fully_decoded_clip_indexed(clip30):
    full = every_frame(clip30)
    seen = []
    for chosen in ([0, 5, 10, 29], [29, 3, 3, 0], [7]):
        def choose(header, chosen=chosen):
            seen.append(header)
            return np.asarray(chosen)  # numpy indices, as the samplers return

        clip = decode_clip(clip30, choose, max_frames=30, max_pixels=BIG)
        assert clip.indices == tuple(chosen) and clip.total_frames == 30 and clip.fps == 10.0
        assert clip.frames.tobytes() == full[chosen].tobytes()
        assert not clip.frames.flags.writeable and clip.frames.flags.c_contiguous
    assert seen[0] == read_header(clip30)


def test_every_frame(clip30):
    clip = decode_clip(clip30, lambda h: None, max_frames=30, max_pixels=BIG)
    assert clip.indices == tuple(range(30)) and clip.frames.tobytes() == every_frame(clip30).tobytes()


def test_decoding_is_deterministic(clip30):
    a = decode_clip(clip30, lambda h: [1, 17, 28], max_frames=3, max_pixels=BIG)
    b = decode_clip(clip30, lambda h: [1, 17, 28], max_frames=3, max_pixels=BIG)
    assert a.frames.tobytes() == b.frames.tobytes()


def test_limits_are_checked_from_the_header_before_decoding(clip30, tmp_path):
    # A truncated clip whose decoding would fail: the limit must win.
    fast = encode(30, faststart=True, tmp=str(tmp_path))
    cut = fast[: int(len(fast) * 0.6)]
    with pytest.raises(mmf.LimitExceededError, match="31 frames, above the limit of 30"):
        decode_clip(clip30, lambda h: list(range(30)) + [0], max_frames=30, max_pixels=BIG)
    with pytest.raises(mmf.LimitExceededError, match=r"30 frames of 48x32 = 46080 pixels, above the limit of 46079"):
        decode_clip(clip30, lambda h: None, max_frames=100, max_pixels=46079)
    assert decode_clip(clip30, lambda h: None, max_frames=30, max_pixels=46080).num_frames == 30
    with pytest.raises(mmf.LimitExceededError):
        decode_clip(cut, lambda h: None, max_frames=1, max_pixels=BIG)


def test_decoding_stops_after_the_last_chosen_frame(tmp_path):
    data = encode(30, faststart=True, tmp=str(tmp_path))
    cut = data[: int(len(data) * 0.6)]
    assert read_header(cut).total_frames == 30
    early = decode_clip(cut, lambda h: [0, 2], max_frames=2, max_pixels=BIG)
    assert early.frames.tobytes() == every_frame(data)[[0, 2]].tobytes()
    # Depending on where the cut falls the decoder errors or just runs dry; either way, refused.
    refused = r"decoding failed before the 1 frames used were read|the stream ended after \d+ frames"
    with pytest.raises(mmf.MediaError, match=refused):
        decode_clip(cut, lambda h: [29], max_frames=1, max_pixels=BIG)


def _short_stream(tmp_path) -> tuple[bytes, int]:
    """An MP4 whose header says 30 frames but whose data ends cleanly a frame or two early."""
    data = encode(30, faststart=True, tmp=str(tmp_path))
    for cut in range(len(data) - 1, len(data) // 2, -16):
        try:
            n = len(every_frame(data[:cut]))
        except Exception:  # a decode error, not a clean early end
            continue
        if n < 30:
            return data[:cut], n
    pytest.skip("this FFmpeg build reports every cut of the clip as an error")


def test_short_stream_every_frame_keeps_what_it_has(tmp_path):
    short, n = _short_stream(tmp_path)
    clip = decode_clip(short, lambda h: None, max_frames=30, max_pixels=BIG)
    # transformers processes the frames there are, at the source rate: they are the clip.
    assert clip.num_frames == n and clip.total_frames == n and clip.indices == tuple(range(n))


def test_short_stream_sampled_past_its_end_is_refused(tmp_path):
    short, n = _short_stream(tmp_path)
    with pytest.raises(mmf.MediaError, match=f"the stream ended after {n} frames but its header says 30; frame 29"):
        decode_clip(short, lambda h: [0, 29], max_frames=2, max_pixels=BIG)
    assert decode_clip(short, lambda h: [0, n - 1], max_frames=2, max_pixels=BIG).indices == (0, n - 1)


def test_zero_frame_clip(tmp_path):
    av = pytest.importorskip("av")
    if "libx264" not in av.codecs_available:
        pytest.skip("needs the libx264 encoder")
    data = encode(30, codec="libx264", faststart=True, tmp=str(tmp_path))
    empty = data[: data.find(b"mdat") + 4]  # the index says 30 frames, no frame data follows
    assert read_header(empty).total_frames == 30
    # transformers' loader stacks an empty list (ValueError); refused with the cause.
    with pytest.raises(mmf.MediaError, match="the stream ended after 0 frames but its header says 30"):
        decode_clip(empty, lambda h: None, max_frames=30, max_pixels=BIG)


def test_refused_clips():
    av = pytest.importorskip("av")
    from PIL import Image

    cases = {b"not a video at all" * 8: "not a clip PyAV can open", b"": "not a clip PyAV can open"}
    webm = encode(5, fmt="webm", codec="libvpx-vp9") if "libvpx-vp9" in av.codecs_available else None
    if webm:
        cases[webm] = "no frame count"
    png, gif = io.BytesIO(), io.BytesIO()
    Image.fromarray(_frame(8, 6, 0)).save(png, "PNG")
    Image.fromarray(_frame(8, 6, 0)).save(gif, "GIF")
    cases[png.getvalue()] = "no frame count"  # a still image is a one-frame stream without a count
    cases[gif.getvalue()] = "no average frame rate"
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream("aac", rate=8000)
        fr = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        fr.sample_rate = 8000
        for i in range(3):
            fr.pts = i * 1024
            for p in s.encode(fr):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    cases[buf.getvalue()] = "no video stream (streams: audio)"
    for data, match in cases.items():
        with pytest.raises(mmf.MediaError, match=match.replace("(", r"\(").replace(")", r"\)")):
            decode_clip(data, lambda h: None, max_frames=BIG, max_pixels=BIG)


def test_moov_at_the_end_cut_off(clip30):
    with pytest.raises(mmf.MediaError, match="not a clip PyAV can open"):
        decode_clip(clip30[: len(clip30) // 2], lambda h: None, max_frames=BIG, max_pixels=BIG)


def test_a_clip_cannot_open_other_resources(tmp_path, clip30):
    (tmp_path / "secret.mp4").write_bytes(clip30)
    playlists = [
        f"ffconcat version 1.0\nfile '{tmp_path / 'secret.mp4'}'\n".encode(),
        f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:1.0,\nfile://{tmp_path / 'secret.mp4'}\n#EXT-X-ENDLIST\n".encode(),
    ]
    for data in playlists:
        with pytest.raises(mmf.MediaError):
            decode_clip(data, lambda h: None, max_frames=BIG, max_pixels=BIG)


def test_chooser_bugs_are_internal_errors(clip30):
    for bad in ([], [30], [-1], [1.0], [True]):
        with pytest.raises(mmf.InternalError):
            decode_clip(clip30, lambda h, bad=bad: bad, max_frames=BIG, max_pixels=BIG)


def test_mjpeg_avi_full_range():
    data = encode(3, 33, 17, codec="mjpeg", fmt="avi")
    clip = decode_clip(data, lambda h: None, max_frames=3, max_pixels=BIG)
    assert (clip.num_frames, clip.height, clip.width) == (3, 17, 33)
    assert clip.frames.tobytes() == every_frame(data).tobytes()


def test_without_pyav_encoded_clips_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(mmf.UnsupportedError, match=r"pip install 'mm-framework\[video\]'"):
        decode_clip(b"\x00" * 64, lambda h: None, max_frames=1, max_pixels=BIG)
    with pytest.raises(mmf.UnsupportedError, match="PyAV"):
        read_header(b"\x00" * 64)
    # Decoded frames need no PyAV.
    assert clip_from_frames(np.zeros((2, 4, 4, 3), np.uint8), max_frames=2, max_pixels=BIG).num_frames == 2


def test_clip_from_frames():
    arr = np.arange(3 * 4 * 5 * 3, dtype=np.uint8).reshape(3, 4, 5, 3)
    clip = clip_from_frames(arr, max_frames=3, max_pixels=60)
    assert clip.frames.tobytes() == arr.tobytes() and clip.frames is not arr and not clip.frames.flags.writeable
    assert (clip.indices, clip.total_frames, clip.fps) == ((0, 1, 2), 3, None)
    listed = clip_from_frames(list(arr), fps=np.float64(29.97), indices=[3, 9, 12], total_frames=40,
                              max_frames=3, max_pixels=60)
    assert listed.frames.tobytes() == arr.tobytes()
    assert (listed.indices, listed.total_frames, listed.fps) == ((3, 9, 12), 40, 29.97)
    arr[0] = 0  # the clip holds its own copy
    assert clip.frames[0].any()


@pytest.mark.parametrize("frames, kw, error, match", [
    (np.zeros((2, 4, 4), np.uint8), {}, mmf.InvalidInputError, r"uint8 \[T, H, W, 3\]"),
    (np.zeros((2, 4, 4, 3), np.float32), {}, mmf.InvalidInputError, "float32"),
    (np.zeros((0, 4, 4, 3), np.uint8), {}, mmf.InvalidInputError, "empty frames"),
    ([], {}, mmf.InvalidInputError, "no frames"),
    ([np.zeros((4, 4, 3), np.uint8), np.zeros((4, 5, 3), np.uint8)], {}, mmf.InvalidInputError, "frame 1 is"),
    ([np.zeros((4, 4, 4), np.uint8)], {}, mmf.InvalidInputError, "frame 0 must be"),
    ("frames", {}, mmf.InvalidInputError, "array or a sequence"),
    (np.zeros((2, 4, 4, 3), np.uint8), {"fps": 0}, mmf.InvalidInputError, "fps"),
    (np.zeros((2, 4, 4, 3), np.uint8), {"fps": float("nan")}, mmf.InvalidInputError, "fps"),
    (np.zeros((2, 4, 4, 3), np.uint8), {"indices": [0, 1]}, mmf.InvalidInputError, "need total_frames"),
    (np.zeros((2, 4, 4, 3), np.uint8), {"indices": [0], "total_frames": 5}, mmf.InvalidInputError, "2 frames but 1"),
    (np.zeros((2, 4, 4, 3), np.uint8), {"indices": [0, 5], "total_frames": 5}, mmf.InvalidInputError, "outside 0..4"),
    (np.zeros((2, 4, 4, 3), np.uint8), {"total_frames": 0}, mmf.InvalidInputError, "total_frames"),
    (np.zeros((3, 4, 4, 3), np.uint8), {"max_frames": 2}, mmf.LimitExceededError, "3 frames"),
    (np.zeros((3, 4, 4, 3), np.uint8), {"max_pixels": 47}, mmf.LimitExceededError, "48 pixels"),
])
def test_clip_from_frames_refuses(frames, kw, error, match):
    kw = {"max_frames": 10, "max_pixels": BIG, **kw}
    with pytest.raises(error, match=match):
        clip_from_frames(frames, **kw)


def test_select_frames_is_array_indexing():
    arr = np.random.default_rng(0).integers(0, 256, (5, 2, 3, 3), dtype=np.uint8)
    clip = clip_from_frames(arr, fps=25.0, max_frames=5, max_pixels=BIG)
    picked = select_frames(clip, np.array([0, 2, 2, 4]))
    assert picked.frames.tobytes() == arr[[0, 2, 2, 4]].tobytes()
    assert (picked.indices, picked.total_frames, picked.fps) == ((0, 2, 2, 4), 5, 25.0)
    with pytest.raises(mmf.MediaError, match="clip frame index 5 is outside 0..4"):
        select_frames(clip, [0, 5])


def test_video_clip_validates():
    ok = np.zeros((1, 2, 2, 3), np.uint8)
    ok.flags.writeable = False
    with pytest.raises(mmf.InternalError, match="read-only"):
        VideoClip(frames=np.zeros((1, 2, 2, 3), np.uint8), indices=(0,), total_frames=1, fps=None)
    with pytest.raises(mmf.InternalError, match="1 frames but 2 indices"):
        VideoClip(frames=ok, indices=(0, 1), total_frames=1, fps=None)


def test_tags_that_are_not_utf8_are_ignored():
    from .audio_helpers import av_encode, tone

    clip = av_encode(tone(1.0, 16000), 16000, "mp4", "aac", video=True, title="QQQQQQ")
    latin1 = clip.replace(b"QQQQQQ", b"\xff\xfe\x8d\xefab")
    assert read_header(latin1) == read_header(clip)
