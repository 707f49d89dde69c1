"""The request driver end to end, through the in-process toy family."""

from __future__ import annotations

import asyncio
import io
import pickle
import struct
import threading
import time
import zlib

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import par
from mm_framework import content_hash
from mm_framework.family import bind

from .conftest import png_bytes


def run(pipe, images, ids=None, **kw):
    return pipe.process(mmf.MmInput(images=images, input_ids=ids, **{k: v for k, v in kw.items() if k == "text"}),
                        tokenize=kw.get("tokenize"))


def assert_same(a: mmf.Output, b: mmf.Output) -> None:
    assert np.array_equal(a.input_ids, b.input_ids)
    assert a.offsets == b.offsets and a.positions == b.positions
    assert len(a.items) == len(b.items)
    for x, y in zip(a.items, b.items):
        assert x.hash == y.hash and x.feature == y.feature and dict(x.aux) == dict(y.aux)
        assert x.feature.array.tobytes() == y.feature.array.tobytes()


def test_hash_vector():
    assert content_hash(b"abc") == 0x6437B3AC38465133


def test_one_image(toy_pipe):
    img = png_bytes(8, 8)
    out = run(toy_pipe, [img], [7, 1, 8], tokenize=lambda t: pytest.fail("tokenizer must not be called"))
    assert out.input_ids.dtype == np.int64 and out.input_ids.tolist() == [7, 1, 1, 1, 1, 8]
    assert out.offsets == ((1, 4),)
    item = out.items[0]
    assert item.feature.shape == (4, 3) and item.feature.dtype == "f32"
    assert item.aux["grid"].array.tolist() == [1, 2, 2]
    assert item.hash == content_hash(img)
    assert out.positions == mmf.Rope1D()
    assert not out.input_ids.flags.writeable and not item.feature.array.flags.writeable


def test_three_images_in_input_order(toy_pipe):
    imgs = [png_bytes(8, 8, 1), png_bytes(12, 4, 2), png_bytes(4, 8, 3)]
    out = run(toy_pipe, imgs, [1, 9, 1, 9, 1])
    assert [it.feature.shape[0] for it in out.items] == [4, 3, 2]
    assert out.offsets == ((0, 3), (5, 7), (9, 10))
    assert [it.hash for it in out.items] == [content_hash(b) for b in imgs]
    kw = out.model_kwargs()
    assert kw["features"].shape == (9, 3) and kw["grid"].tolist() == [[1, 2, 2], [1, 1, 3], [1, 2, 1]]


def test_no_images_rejected(toy_pipe):
    with pytest.raises(mmf.InvalidInputError, match=r"without media items \(images, videos or items\)"):
        run(toy_pipe, [], [1])


def test_item_cap(toy_pipe):
    img = png_bytes(4, 4)
    assert len(run(toy_pipe, [img] * 64, [1] * 64).items) == 64
    with pytest.raises(mmf.LimitExceededError, match="exceeds 64 media items"):
        run(toy_pipe, [img] * 65, [1] * 65)


def test_byte_caps(toy):
    pipe = mmf.pipeline_from_spec(
        {"family": "toy"}, limits=mmf.Limits(max_request_bytes=1000, max_source_bytes=600)
    )
    with pytest.raises(mmf.LimitExceededError, match="item 1: .*exceeds 600 bytes") as e:
        run(pipe, [b"x" * 10, b"x" * 601], [1, 1])
    assert e.value.item == 1
    with pytest.raises(mmf.LimitExceededError, match="item 1: .*exceeds the request media byte budget"):
        run(pipe, [b"x" * 501, b"x" * 500], [1, 1])


def huge_png_header(w: int, h: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_pixel_limit_checked_from_header(toy_pipe):
    bomb = huge_png_header(100_000, 100_000)
    t0 = time.perf_counter()
    with pytest.raises(mmf.LimitExceededError, match=r"item 1: image is 100000x100000 = 10000000000 pixels") as e:
        run(toy_pipe, [png_bytes(4, 4), bomb], [1, 1])
    assert time.perf_counter() - t0 < 0.5
    assert e.value.item == 1


def test_configured_pixel_limit(toy):
    pipe = mmf.pipeline_from_spec({"family": "toy"}, limits=mmf.Limits(max_image_pixels=63))
    run(pipe, [png_bytes(9, 7)], [1])
    with pytest.raises(mmf.LimitExceededError, match="8x8 = 64 pixels, above the limit of 63"):
        run(pipe, [png_bytes(8, 8)], [1])


@pytest.mark.parametrize(
    "ids, n, found",
    [([7, 8], 1, 0), ([1, 1, 7], 1, 2), ([1], 2, 0 + 1)],
    ids=["none-for-one", "two-for-one", "one-for-two"],
)
def test_placeholder_mismatch(toy_pipe, ids, n, found):
    with pytest.raises(mmf.LayoutError, match=rf"prompt has {found} media placeholder\(s\) but {n} media item\(s\)"):
        run(toy_pipe, [png_bytes(4, 4, i) for i in range(n)], ids)


@pytest.mark.parametrize(
    "kind, err, msg",
    [
        ("drop_tail", mmf.LayoutError, "layout: covers 2 of 3 source token"),
        ("zero", mmf.LayoutError, "expands to zero tokens"),
        ("not_a_layout", mmf.InternalError, "mm_layout returned list"),
    ],
)
def test_family_layout_errors_reach_the_caller(toy, kind, err, msg):
    pipe = mmf.pipeline_from_spec({"family": "toy", "layout": kind})
    with pytest.raises(err, match=msg):
        run(pipe, [png_bytes(8, 8)], [7, 1, 8])


def test_text_and_tokenize(toy_pipe):
    calls = []

    def tokenize(text):
        calls.append(text)
        return [5, 1, 6]

    out = run(toy_pipe, [png_bytes(4, 4)], None, text="hi <image>", tokenize=tokenize)
    assert out.input_ids.tolist() == [5, 1, 6] and calls == ["hi <image>"]
    # An empty id list counts as absent and falls through to text.
    out = run(toy_pipe, [png_bytes(4, 4)], [], text="x", tokenize=tokenize)
    assert out.input_ids.tolist() == [5, 1, 6]


def test_missing_prompt_and_failing_tokenizer(toy_pipe):
    unnamed = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1, "unnamed": True})
    with pytest.raises(mmf.InvalidInputError, match="without text or input_ids, and family 'toy' names no image"):
        run(unnamed, [png_bytes(4, 4)], None)

    def broken(text):
        raise KeyError("vocab")

    with pytest.raises(mmf.InvalidInputError, match="tokenize failed: KeyError"):
        run(toy_pipe, [png_bytes(4, 4)], None, text="x", tokenize=broken)
    with pytest.raises(mmf.InvalidInputError, match="input_ids must be a 1-D sequence of integers"):
        mmf.MmInput(images=[b"x"], input_ids=[1.5, 2.0])


@pytest.mark.parametrize("mode", ["inline", 1, 4])
def test_lowest_failing_index_is_reported(toy_pipe, threads, mode):
    threads(mode)
    imgs = [png_bytes(4, 4, 0), png_bytes(4, 4, 1), b"not an image", png_bytes(4, 4, 3)]
    with pytest.raises(mmf.MediaError, match="item 2: image decode") as e:
        run(toy_pipe, imgs, [1] * 4)
    assert e.value.item == 2
    imgs[1] = b""
    with pytest.raises(mmf.MediaError, match="item 1: image decode"):
        run(toy_pipe, imgs, [1] * 4)


def test_plugin_exception_becomes_internal_error(toy, threads):
    threads(2)
    pipe = mmf.pipeline_from_spec({"family": "toy", "fail_on_width": 6})
    with pytest.raises(mmf.InternalError, match="item 1: family 'toy' raised RuntimeError in mm_process_item") as e:
        run(pipe, [png_bytes(4, 4), png_bytes(6, 4), png_bytes(6, 4)], [1, 1, 1])
    assert e.value.item == 1
    # The pool survives and the same pipeline keeps working.
    assert len(run(pipe, [png_bytes(4, 4)] * 3, [1, 1, 1]).items) == 3


def test_deep_images_rejected(toy_pipe):
    buf = io.BytesIO()
    Image.fromarray(np.full((4, 4), 300, dtype=np.uint16)).save(buf, "PNG")
    with pytest.raises(mmf.MediaError, match="item 0: image decode: unsupported color mode I;16"):
        run(toy_pipe, [buf.getvalue()], [1])


def test_determinism_across_modes(toy_pipe, threads):
    imgs = [png_bytes(16 + i, 12, i) for i in range(6)]
    ids = [3, 1, 1, 4, 1, 1, 1, 1, 5]
    results = []
    for mode in ["inline", 1, 4]:
        threads(mode)
        results.append(run(toy_pipe, imgs, ids))
    for r in results[1:]:
        assert_same(results[0], r)


def test_inline_mode_starts_no_threads(toy_pipe, threads):
    threads("inline")
    before = threading.active_count()
    run(toy_pipe, [png_bytes(8, 8, i) for i in range(4)], [1] * 4)
    assert threading.active_count() == before
    assert not [t for t in threading.enumerate() if t.name.startswith(par.THREAD_PREFIX)]


def test_process_async_matches_sync(toy_pipe):
    imgs = [png_bytes(8, 8, 5), png_bytes(16, 4, 6)]

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(ticker())
        requests = [mmf.MmInput(images=imgs, input_ids=[1, 1]) for _ in range(4)]
        outs = await asyncio.gather(*[toy_pipe.process_async(r) for r in requests])
        t.cancel()
        return outs, ticks

    outs, ticks = asyncio.run(main())
    ref = run(toy_pipe, imgs, [1, 1])
    for o in outs:
        assert_same(ref, o)
    assert ticks > 0
    with pytest.raises(mmf.InvalidInputError):
        asyncio.run(toy_pipe.process_async(mmf.MmInput(images=[], input_ids=[1])))


@pytest.mark.parametrize("bad, k", [([7, -5, 1], 1), ([2**31, 1], 0)])
def test_family_id_range_enforced(toy, bad, k):
    pipe = mmf.pipeline_from_spec({"family": "toy", "int32_ids": True})
    assert run(pipe, [png_bytes(4, 4)], [0, 1, 2**31 - 1]).input_ids.tolist() == [0, 1, 2**31 - 1]
    match = rf"input_ids\[{k}\] = {bad[k]} is outside this family's id range \[0, 2147483647\]"
    with pytest.raises(mmf.InvalidInputError, match=match):
        run(pipe, [png_bytes(4, 4)], bad)
    # Families without a declared range take any int64 (negative protocol placeholders).
    assert run(mmf.pipeline_from_spec({"family": "toy"}), [png_bytes(4, 4)], [-3, 1]).input_ids.tolist() == [-3, 1]


def test_mrope_positions_from_family(toy):
    pipe = mmf.pipeline_from_spec({"family": "toy", "mrope": True})
    out = run(pipe, [png_bytes(8, 8)], [7, 1, 8])
    assert isinstance(out.positions, mmf.MRope) and out.positions.positions.shape == (3, 6)
    assert out.positions.delta == int(out.positions.positions.max()) + 1 - 6


def test_num_media_tokens_matches_real(toy_pipe):
    for w, h in [(4, 4), (9, 13), (1, 1), (40, 8)]:
        out = run(toy_pipe, [png_bytes(w, h)], [1])
        s, e = out.offsets[0]
        assert toy_pipe.num_media_tokens(w, h) == e - s + 1


def test_pipeline_is_immutable_and_pickles(toy_pipe):
    with pytest.raises(AttributeError):
        toy_pipe.limits = None
    spec = toy_pipe.spec
    spec["image_token_id"] = 99
    assert toy_pipe.spec["image_token_id"] == 1
    clone = pickle.loads(pickle.dumps(toy_pipe))
    img = png_bytes(8, 8)
    assert_same(run(clone, [img], [1]), run(toy_pipe, [img], [1]))


def test_alpha_options(toy):
    arr = np.zeros((4, 4, 4), dtype=np.uint8)
    arr[..., 0] = 200
    arr[..., 3] = 0  # fully transparent red
    buf = io.BytesIO()
    Image.fromarray(arr, "RGBA").save(buf, "PNG")
    from mm_framework.media.decode import decode_rgb

    drop = decode_rgb(buf.getvalue(), mmp.DecodeOptions(alpha="drop"))
    comp = decode_rgb(buf.getvalue(), mmp.DecodeOptions(alpha="composite"))
    assert drop.rgb[0, 0].tolist() == [200, 0, 0]
    assert comp.rgb[0, 0].tolist() == [255, 255, 255]


def test_stored_pixels_need_the_optional_hooks(toy_pipe):
    inp = mmf.MmInput(images=[png_bytes(8, 8)], input_ids=[1])
    with pytest.raises(mmf.UnsupportedError, match="family 'toy' does not implement mm_stored_pixels"):
        toy_pipe.stored_pixels(inp)
    with pytest.raises(mmf.UnsupportedError, match="does not implement mm_features_from_pixels"):
        bind(toy_pipe.spec).features_from_pixels(np.zeros((2, 2, 3), np.uint8))
