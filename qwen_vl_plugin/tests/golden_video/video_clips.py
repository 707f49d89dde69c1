"""The clips behind the qwen_vl video goldens, encoded with PyAV (numpy + PyAV only).

Each clip is a pan over a photo-like picture with a per-frame brightness drift, so every
frame differs and resizing has real detail to filter. The committed bytes under
``clips/`` are the inputs; this module only makes them (encoders are not bit-stable
across FFmpeg builds, so the bytes, not this recipe, are the golden input).

``ACCEPTED`` clips decode for some configuration; ``BROKEN`` ones exercise each way a
clip can fail (docs/families/qwen_vl_video.md §2).
"""

from __future__ import annotations

import io
import os
import tempfile
import zlib
from fractions import Fraction
from typing import Any

import numpy as np

NTSC = Fraction(30000, 1001)


def _clip(codec: str, pix_fmt: str, w: int, h: int, n: int, rate: Any, container: str = "mp4", **extra: Any) -> dict:
    return {"codec": codec, "pix_fmt": pix_fmt, "width": w, "height": h, "frames": n, "rate": rate,
            "container": container, **extra}


ACCEPTED: dict[str, dict] = {
    "x264_yuv420p_160x120_30f_10fps.mp4": _clip("libx264", "yuv420p", 160, 120, 30, 10),
    "mpeg4_yuv420p_65x49_7f_29.97fps.mp4": _clip("mpeg4", "yuv420p", 65, 49, 7, NTSC),
    "vp9_yuv420p_81x47_9f_25fps.mp4": _clip("libvpx-vp9", "yuv420p", 81, 47, 9, 25),
    "mjpeg_yuvj422p_33x17_3f_10fps.avi": _clip("mjpeg", "yuvj422p", 33, 17, 3, 10, "avi"),
    "x264_yuv444p_50x36_45f_29.97fps.mp4": _clip("libx264", "yuv444p", 50, 36, 45, NTSC),
    # fps=2 sampling: 12 frames, second_per_grid_ts f32(1.1); positions need f32 math.
    "x264_yuv420p_32x24_66f_10fps.mp4": _clip("libx264", "yuv420p", 32, 24, 66, 10),
    # fps=2 sampling: 8 frames, f32(7/6) whose f64 product truncates differently.
    "x264_yuv420p_32x24_56f_12fps.mp4": _clip("libx264", "yuv420p", 32, 24, 56, 12),
    # fps=2 sampling: 14 frames asked, the float-step arange gives 15.
    "x264_yuv420p_32x24_75f_10fps.mp4": _clip("libx264", "yuv420p", 32, 24, 75, 10),
    "mpeg4_yuv420p_48x40_30f_12fps.mp4": _clip("mpeg4", "yuv420p", 48, 40, 30, 12),
    "x265_yuv420p10le_40x32_4f_24fps.mp4": _clip("libx265", "yuv420p10le", 40, 32, 4, 24),
    "x264_yuv420p_64x48_2f_10fps.mp4": _clip("libx264", "yuv420p", 64, 48, 2, 10),
    "x264_yuv420p_64x48_1f_10fps.mp4": _clip("libx264", "yuv420p", 64, 48, 1, 10),
    # Header 30 frames, 28 decodable, no decode error: cut inside the last packets.
    "mpeg4_short_header30_48x40_10fps.mp4": _clip("mpeg4", "yuv420p", 48, 40, 30, 10, cut=0.97, faststart=True),
}

BROKEN: dict[str, dict] = {
    "vp9_no_frame_count_40x30_5f.webm": _clip("libvpx-vp9", "yuv420p", 40, 30, 5, 25, "webm"),
    "x264_truncated_64x48_30f.mp4": _clip("libx264", "yuv420p", 64, 48, 30, 10, cut=0.6, faststart=True),
    "mp4_moov_missing_64x48_30f.mp4": _clip("libx264", "yuv420p", 64, 48, 30, 10, cut=0.6),
    "gif_no_frame_rate_20x10.gif": {"kind": "gif"},
    "audio_only_aac.m4a": {"kind": "audio"},
    "not_a_video.bin": {"kind": "text"},
}


def frame(w: int, h: int, k: int, n: int, seed: int) -> np.ndarray:
    """Frame ``k`` of ``n``: a window panning over a wider smooth-noise picture."""
    rng = np.random.default_rng(seed)
    wide = w + 2 * n
    coarse = rng.integers(0, 256, (max(2, h // 6), max(2, wide // 6), 3)).astype(np.float64)
    ys = np.linspace(0, coarse.shape[0] - 1, h)
    xs = np.linspace(0, coarse.shape[1] - 1, wide)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, coarse.shape[0] - 1), np.minimum(x0 + 1, coarse.shape[1] - 1)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    top = coarse[y0][:, x0] * (1 - fx) + coarse[y0][:, x1] * fx
    bottom = coarse[y1][:, x0] * (1 - fx) + coarse[y1][:, x1] * fx
    pic = top * (1 - fy) + bottom * fy + rng.integers(-10, 11, (h, wide, 3))
    pic = pic[:, 2 * k : 2 * k + w] + 40.0 * np.sin(k / 3.0)
    return np.clip(pic, 0, 255).astype(np.uint8)


def encode(name: str, spec: dict) -> bytes:
    """The bytes of clip ``name`` made from ``spec`` (one entry of ACCEPTED or BROKEN)."""
    import av

    kind = spec.get("kind")
    if kind == "text":
        return b"This is not a video, just some bytes that no demuxer should accept.\n" * 4
    if kind == "gif":
        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(frame(20, 10, 0, 1, 7)).save(buf, "GIF")
        return buf.getvalue()
    if kind == "audio":
        buf = io.BytesIO()
        with av.open(buf, "w", format="mp4") as out:
            s = out.add_stream("aac", rate=8000)
            for i in range(4):
                samples = (0.1 * np.sin(np.arange(1024) * (i + 1) / 20.0)).astype(np.float32)[None]
                fr = av.AudioFrame.from_ndarray(samples, format="fltp", layout="mono")
                fr.sample_rate, fr.pts = 8000, i * 1024
                for p in s.encode(fr):
                    out.mux(p)
            for p in s.encode():
                out.mux(p)
        return buf.getvalue()
    data = _encode_video(av, spec, zlib.crc32(name.encode()))
    if "cut" in spec:
        data = data[: int(len(data) * spec["cut"])]
    return data


def _encode_video(av: Any, spec: dict, seed: int) -> bytes:
    w, h, n = spec["width"], spec["height"], spec["frames"]
    options = {"movflags": "faststart"} if spec.get("faststart") else {}
    if spec["container"] == "webm":
        # No random segment id, so a rerun gives the same bytes. (Not for MP4: this FFmpeg
        # build corrupts its heap with bitexact + faststart.)
        options["fflags"] = "+bitexact"
    with tempfile.TemporaryDirectory() as tmp:
        # faststart rewrites the file after the fact, which needs a real path; otherwise
        # memory (writing through a path made some x264 clips differ from run to run).
        target: Any = os.path.join(tmp, "clip." + spec["container"]) if spec.get("faststart") else io.BytesIO()
        with av.open(target, "w", format=spec["container"], options=options) as out:
            s = out.add_stream(spec["codec"], rate=spec["rate"])
            s.width, s.height, s.pix_fmt = w, h, spec["pix_fmt"]
            s.codec_context.thread_count = 1
            for k in range(n):
                vf = av.VideoFrame.from_ndarray(frame(w, h, k, n, seed), format="rgb24")
                for p in s.encode(vf):
                    out.mux(p)
            for p in s.encode():
                out.mux(p)
        if isinstance(target, io.BytesIO):
            return target.getvalue()
        with open(target, "rb") as f:
            return f.read()


def write_all(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for name, spec in {**ACCEPTED, **BROKEN}.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(encode(name, spec))


if __name__ == "__main__":
    import sys

    write_all(sys.argv[1])
