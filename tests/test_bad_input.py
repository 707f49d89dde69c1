"""The bad-input matrix (docs/bad-input.md): every hostile input ends in one typed error.

Each case runs through one shared ``qwen2_vl`` pipeline with a good image before the bad
one where the case has items, and asserts: the error class (or acceptance), the item
index, under a second, a bounded allocation, and that the pipeline still gives the exact
same output for a good request afterwards.
"""

from __future__ import annotations

import base64
import io
import os
import re
import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing import sample_image
from mm_framework.testing.conformance import assert_same_output

pytest.importorskip("qwen_vl_plugin")

SPEC = mmf.preset("qwen2_vl")
PAD = SPEC["image_token_id"]
GOOD = sample_image(64, 48, "JPEG", 1)
DOCS = Path(__file__).parent.parent / "docs" / "bad-input.md"
MAX_SECONDS = 1.0
MAX_ALLOC = 64 << 20


def enc(fmt: str, im: Image.Image | None = None, **kw) -> bytes:
    im = im if im is not None else Image.open(io.BytesIO(sample_image(64, 48, "PNG", 2))).convert("RGB")
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def png_header(w: int, h: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def jpeg_bomb() -> bytes:
    data = bytearray(enc("JPEG"))
    sof = data.index(b"\xff\xc0")
    struct.pack_into(">HH", data, sof + 5, 65000, 65000)  # height, width in SOF0
    return bytes(data)


def many_frame_gif(n: int = 3000) -> bytes:
    frames = [Image.new("P", (8, 8), i % 256) for i in range(n)]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    return buf.getvalue()


def sized(w: int, h: int) -> bytes:
    return enc("PNG", Image.new("RGB", (w, h), (90, 120, 150)))


def mode_image(mode: str) -> bytes:
    base = Image.open(io.BytesIO(sample_image(40, 30, "PNG", 3)))
    if mode == "CMYK":
        return enc("JPEG", base.convert("CMYK"))
    if mode == "I;16":
        return enc("PNG", Image.fromarray(np.full((30, 40), 40000, dtype=np.uint16)))
    if mode == "RGB48":
        buf = io.BytesIO()
        arr = np.full((30, 40, 3), 0x1234, dtype=">u2")
        # Pillow cannot write 48-bit PNG: build it (colour type 2, depth 16) by hand.
        raw = b"".join(b"\0" + arr[y].tobytes() for y in range(30))
        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        buf.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 40, 30, 16, 2, 0, 0, 0))
                  + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
        return buf.getvalue()
    return enc("PNG", base.convert(mode))


def fifo(tmp: Path) -> str:
    path = tmp / "fifo"
    os.mkfifo(path)
    return str(path)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# id -> (builder(tmp) -> (images, ids, limits or None), expected class name or "accepted", item index)
CASES = {
    "zero-byte input": (lambda t: ([GOOD, b""], None, None), "MediaError", 1),
    "text bytes": (lambda t: ([GOOD, b"just some text\n"], None, None), "MediaError", 1),
    "HTML bytes": (lambda t: ([GOOD, b"<!doctype html><html><body>hi</body></html>"], None, None), "MediaError", 1),
    "truncated JPEG": (lambda t: ([GOOD, enc("JPEG")[:300]], None, None), "MediaError", 1),
    "truncated PNG": (lambda t: ([GOOD, enc("PNG")[:200]], None, None), "MediaError", 1),
    "truncated GIF": (lambda t: ([GOOD, enc("GIF")[:200]], None, None), "MediaError", 1),
    "truncated WebP": (lambda t: ([GOOD, enc("WEBP")[:100]], None, None), "MediaError", 1),
    "bit-flipped JPEG header": (lambda t: ([GOOD, flip(enc("JPEG"), 20)], None, None), "MediaError", 1),
    "bit-flipped PNG chunk (CRC)": (lambda t: ([GOOD, flip(enc("PNG"), len(enc("PNG")) // 2)], None, None), "MediaError", 1),
    "bit-flipped GIF signature": (lambda t: ([GOOD, flip(enc("GIF"), 1)], None, None), "MediaError", 1),
    "bit-flipped WebP header": (lambda t: ([GOOD, flip(enc("WEBP"), 20)], None, None), "MediaError", 1),
    "bit-flipped JPEG entropy data": (lambda t: ([GOOD, flip(enc("JPEG"), len(enc("JPEG")) // 2)], None, None), "accepted", None),
    "PNG header claiming 100000x100000": (lambda t: ([GOOD, png_header(100_000, 100_000)], None, None), "LimitExceededError", 1),
    "JPEG bomb declaring 65000x65000": (lambda t: ([GOOD, jpeg_bomb()], None, None), "LimitExceededError", 1),
    "GIF with 3000 frames": (lambda t: ([many_frame_gif()], None, None), "accepted", None),
    "16-bit grey PNG": (lambda t: ([GOOD, mode_image("I;16")], None, None), "MediaError", 1),
    "48-bit RGB PNG": (lambda t: ([mode_image("RGB48")], None, None), "accepted", None),
    "CMYK JPEG": (lambda t: ([mode_image("CMYK")], None, None), "accepted", None),
    "palette PNG": (lambda t: ([mode_image("P")], None, None), "accepted", None),
    "LA PNG": (lambda t: ([mode_image("LA")], None, None), "accepted", None),
    "1-bit PNG": (lambda t: ([mode_image("1")], None, None), "accepted", None),
    "1x1 image": (lambda t: ([sized(1, 1)], None, None), "accepted", None),
    "1x40000 image": (lambda t: ([GOOD, sized(1, 40000)], None, None), "MediaError", 1),
    "aspect ratio 200 (10x2000)": (lambda t: ([sized(2000, 10)], None, None), "accepted", None),
    "aspect ratio 201 (10x2010)": (lambda t: ([GOOD, sized(2010, 10)], None, None), "MediaError", 1),
    "data: URL without a comma": (lambda t: ([GOOD, "data:image/png;base64" + b64(GOOD)], None, None), "MediaError", 1),
    "data: URL with a wrong media type": (lambda t: (["data:text/plain;base64," + b64(GOOD)], None, None), "accepted", None),
    "data: URL with invalid base64": (lambda t: ([GOOD, "data:image/png;base64,***"], None, None), "MediaError", 1),
    "base64 with whitespace inside": (lambda t: ([GOOD, "data:image/png;base64," + b64(GOOD)[:40] + "\n" + b64(GOOD)[40:]], None, None), "MediaError", 1),
    "path that does not exist": (lambda t: ([GOOD, str(t / "missing.png")], None, None), "FetchError", 1),
    "path to a directory": (lambda t: ([GOOD, str(t)], None, None), "FetchError", 1),
    "device file /dev/zero": (lambda t: ([GOOD, "/dev/zero"], None, None), "FetchError", 1),
    "FIFO": (lambda t: ([GOOD, fifo(t)], None, None), "FetchError", 1),
    "65 images": (lambda t: ([GOOD] * 65, None, None), "LimitExceededError", None),
    "sources past the request budget": (
        lambda t: ([GOOD, GOOD, GOOD], None, mmf.Limits(max_request_bytes=2 * len(GOOD) + 10)), "LimitExceededError", 2),
    "negative input id": (lambda t: ([GOOD], [PAD, -7], None), "InvalidInputError", None),
    "input id above int32": (lambda t: ([GOOD], [2**31, PAD], None), "InvalidInputError", None),
    "more placeholders than images": (lambda t: ([GOOD], [PAD, 5, PAD], None), "LayoutError", None),
    "fewer placeholders than images": (lambda t: ([GOOD, GOOD], [5, PAD], None), "LayoutError", None),
}


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def reference(pipe):
    return pipe.process(mmf.MmInput(images=[GOOD], input_ids=[5, PAD, 6]))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, pipe, reference, tmp_path):
    build, expected, item = CASES[case]
    images, ids, limits = build(tmp_path)
    ids = ids if ids is not None else [5] + [PAD, 6] * len(images)
    p = pipe if limits is None else mmf.pipeline_from_spec(SPEC, limits=limits)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        p.process(mmf.MmInput(images=images, input_ids=ids))
        got, err = "accepted", None
    except mmf.MmError as e:
        got, err = type(e).__name__, e
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got == expected, f"{case}: {got} {err}"
    if err is not None:
        assert err.item == item, f"{case}: item {err.item} != {item}: {err}"
        if item is not None:
            assert str(err).startswith(f"item {item}: ")
    assert seconds < MAX_SECONDS, f"{case}: took {seconds:.2f}s"
    assert peak < MAX_ALLOC, f"{case}: allocated {peak / 2**20:.1f} MiB"
    after = pipe.process(mmf.MmInput(images=[GOOD], input_ids=[5, PAD, 6]))
    assert_same_output(reference, after, f"good request after {case!r}")


def _spec_cases():
    from qwen_vl_plugin.spec import DEFAULTS  # optional fields: omitting them is fine

    fields = [k for k in SPEC if k != "family"]
    out = []
    for f in fields:
        if f not in DEFAULTS:
            out.append((f"missing {f}", {k: v for k, v in SPEC.items() if k != f}, f))
        out.append((f"{f} of the wrong type", {**SPEC, f: {"a": 1}}, f))
    for f, v in [("patch_size", 0), ("merge_size", -2), ("temporal_patch_size", 0), ("min_pixels", -1),
                 ("max_pixels", 0), ("image_token_id", -1), ("image_std", [0.5, 0.0, 0.5]), ("backend", "cuda"),
                 ("alpha", "keep")]:
        out.append((f"{f} out of range ({v!r})", {**SPEC, f: v}, f))
    for f in ("image_mean", "image_std"):
        out.append((f"{f} with NaN", {**SPEC, f: [float("nan"), 0.5, 0.5]}, f))
        out.append((f"{f} with infinity", {**SPEC, f: [0.5, float("inf"), 0.5]}, f))
    out.append(("unknown field", {**SPEC, "colour": "red"}, "colour"))
    return out


@pytest.mark.parametrize("case, spec, field", _spec_cases(), ids=[c[0] for c in _spec_cases()])
def test_bad_spec(case, spec, field):
    t0 = time.perf_counter()
    with pytest.raises(mmf.SpecError) as e:
        mmf.pipeline_from_spec(spec)
    assert field in str(e.value), f"{case}: message does not name {field!r}: {e.value}"
    assert time.perf_counter() - t0 < MAX_SECONDS


def test_docs_table_lists_every_case():
    text = DOCS.read_text()
    rows = {m.group(1) for m in re.finditer(r"^\| ([^|]+?) \|", text, re.M)}
    missing = [c for c in CASES if c not in rows]
    assert not missing, f"docs/bad-input.md lacks rows for {missing}"
