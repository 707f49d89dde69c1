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
from mm_framework.text_prompt import expand_as_text

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


# --- a prompt expanded as text (Capabilities.text_prompts), through a tokenizer whose answer
# is spoiled: only success with spans read from sound offsets, or a typed MmError.
TEXT_CAPS = mmp.Capabilities(modalities=("image", "video"), placeholders={"image": 98, "video": 99},
                             placeholder_texts={"image": "<image>", "video": "<video>"}, text_prompts={"video"},
                             id_range=(0, 2000))


def _chars(text: str) -> tuple[list, list]:
    return [ord(c) % 1500 for c in text], [(k, k + 1) for k in range(len(text))]


@st.composite
def spoiled_answers(draw):
    """A request's expansion texts and ops spoiling the one-token-per-character answer."""
    texts = draw(st.lists(st.text("xyz<>", max_size=5), min_size=1, max_size=2))
    ops = draw(st.lists(st.tuples(
        st.sampled_from(["swap", "shift", "drop", "insert", "zero", "ragged", "float", "id", "merge", "wrap"]),
        st.integers(0, 40), st.integers(-50, 3000)), max_size=4))
    return texts, ops


def _spoil(ids: list, offsets: list, ops) -> tuple[object, object]:
    out_ids, out = list(ids), list(offsets)
    for op, at, value in ops:
        k = at % max(1, len(out))
        if op == "wrap":  # the answer as a mapping or a generator: no (ids, offsets) pair of arrays
            return {"ids": out_ids}, (pair for pair in out)
        if not out:
            continue
        if op == "swap":
            out[k], out[-1] = out[-1], out[k]
        elif op == "shift":
            out[k] = (out[k][0] + value % 7 - 3, out[k][1] + value % 5 - 2)
        elif op == "drop":
            del out[k]
        elif op == "insert":
            out.insert(k, (value, value + 1))
        elif op == "zero":
            out[k] = (0, 0)
        elif op == "ragged":
            out[k] = (value,)
        elif op == "float":
            out[k] = (out[k][0] + 0.5, out[k][1])
        elif op == "id":
            out_ids[k % len(out_ids)] = value
        elif op == "merge" and k + 1 < len(out) and k + 1 < len(out_ids):  # a BPE merge: sound
            out[k:k + 2] = [(out[k][0], out[k + 1][1])]
            out_ids[k:k + 2] = [out_ids[k]]
    return out_ids, out


@SETTINGS
@given(spoiled_answers())
def test_text_prompt_with_spoiled_tokenizer_answers(case):
    texts, ops = case
    pieces = ["a", *"bc"[: len(texts)]]  # "a<video>b" or "a<video>b<video>c"
    answer = type("Spoiled", (), {"encode_with_offsets": lambda self, text: _spoil(*_chars(text), ops)})()
    inp = mmf.MmInput(videos=[b"x"] * len(texts), text="<video>".join(pieces))
    try:
        out = expand_as_text(inp, answer, "toy", TEXT_CAPS, ["video"] * len(texts), lambda k: texts[k])
    except mmf.MmError:
        return
    assert out.input_ids.dtype == np.int64 and ((out.input_ids >= 0) & (out.input_ids <= 2000)).all()
    expanded = pieces[0] + "".join(t + p for t, p in zip(texts, pieces[1:]))
    spans = np.asarray(answer.encode_with_offsets(expanded)[1], dtype=np.int64)
    # Accepted offsets are sound: within the text, each start <= end, held characters in order.
    assert ((spans[:, 0] >= 0) & (spans[:, 0] <= spans[:, 1]) & (spans[:, 1] <= len(expanded))).all()
    held = spans[spans[:, 1] > spans[:, 0]]
    assert (np.diff(held, axis=0) >= 0).all()
    at, a = 0, len(pieces[0])
    for k, (start, end) in enumerate(out.offsets):
        b = a + len(texts[k])
        inside = (spans[:, 0] >= a) & (spans[:, 1] <= b) & (spans[:, 1] > spans[:, 0])
        # The span is exactly the tokens wholly inside the item's text, after the previous item's.
        assert start >= at and inside[start : end + 1].all() and inside.sum() == end - start + 1, (k, start, end)
        at, a = end + 1, b + len(pieces[k + 1])
