"""Fuzzing decode and source parsing: only success or a typed MmError, ever."""

from __future__ import annotations

import base64
import io

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import media
from mm_framework.media.decode import decode_rgb

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _encode(fmt: str, **kw) -> bytes:
    rng = np.random.default_rng(len(fmt))
    im = Image.fromarray(rng.integers(0, 256, size=(13, 17, 3), dtype=np.uint8), "RGB")
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


SEEDS = [_encode("PNG"), _encode("JPEG", quality=80), _encode("GIF"), _encode("WEBP"), _encode("BMP"),
         _encode("WEBP", lossless=True), _encode("TIFF")]


@st.composite
def mutated_images(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "zero"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "zero":
            data[pos : pos + draw(st.integers(1, 64))] = b"\0" * len(data[pos : pos + 64])
    return bytes(data)


@SETTINGS
@given(mutated_images())
def test_decode_mutated_images(data):
    try:
        out = decode_rgb(data, mmp.DecodeOptions(max_pixels=1 << 24))
    except (mmf.MediaError, mmf.LimitExceededError):
        return
    assert out.rgb.dtype == np.uint8 and out.rgb.ndim == 3 and out.rgb.shape[2] == 3


inline_sources = st.one_of(
    st.text(max_size=40).filter(lambda s: not s.startswith(("/", "file:", "http:", "https:"))),
    st.builds(lambda mime, payload: f"data:{mime},{payload}", st.text(max_size=12), st.text(max_size=30)),
    st.binary(max_size=30).map(lambda b: base64.b64encode(b).decode()),
    st.builds(lambda b, junk: "data:image/png;base64," + base64.b64encode(b).decode() + junk,
              st.binary(max_size=30), st.sampled_from(["", " ", "\n", "=", "==", "!", "\t"])),
)


@SETTINGS
@given(st.lists(inline_sources, min_size=1, max_size=3))
def test_source_parsing(sources):
    try:
        datas = media.resolve_sources(sources, limits=mmf.Limits())
    except mmf.MmError as e:
        assert e.item is not None and 0 <= e.item < len(sources)
        return
    assert len(datas) == len(sources) and all(isinstance(d, bytes) for d in datas)
