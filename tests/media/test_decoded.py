"""Items given as pixels (PIL images, uint8 arrays) and pathlib.Path sources."""

from __future__ import annotations

import io
import os
import pathlib

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import content_hash
from mm_framework.testing import assert_same_output

from ..conftest import png_bytes

RGB = np.random.default_rng(3).integers(0, 256, (24, 40, 3), dtype=np.uint8)


def run(pipe, images):
    return pipe.process(mmf.MmInput(images=images, input_ids=[5] + [1] * len(images)))


def png(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def test_array_pil_and_encoded_forms_give_the_same_features(toy_pipe):
    im = Image.fromarray(RGB)
    outs = [run(toy_pipe, [src]) for src in (png(im), im, RGB)]
    for other in outs[1:]:
        assert other.items[0].feature == outs[0].items[0].feature
        assert other.input_ids.tolist() == outs[0].input_ids.tolist()
    assert outs[0].items[0].size == outs[1].items[0].size == (40, 24)


def test_decoded_hash_is_stable_distinct_and_documented(toy_pipe):
    im = Image.fromarray(RGB)
    pil_hash = run(toy_pipe, [im]).items[0].hash
    arr_hash = run(toy_pipe, [RGB]).items[0].hash
    assert pil_hash == run(toy_pipe, [Image.fromarray(RGB.copy())]).items[0].hash
    assert arr_hash == run(toy_pipe, [RGB.copy()]).items[0].hash
    # Same pixels, but an encoded source hashes its bytes and decoded inputs live in
    # their own blake3 derive-key domain: the three never coincide.
    assert len({pil_hash, arr_hash, content_hash(png(im)), content_hash(RGB.tobytes())}) == 4
    changed = RGB.copy()
    changed[0, 0, 0] ^= 1
    assert run(toy_pipe, [changed]).items[0].hash != arr_hash
    # The palette is part of a P image's identity.
    p = im.quantize(16)
    q = p.copy()
    q.putpalette([255 - v for v in p.getpalette()])
    assert run(toy_pipe, [p]).items[0].hash != run(toy_pipe, [q]).items[0].hash


def test_grey_arrays_are_replicated(toy_pipe):
    grey = RGB[:, :, 0].copy()
    out = run(toy_pipe, [grey])
    assert out.items[0].feature == run(toy_pipe, [np.repeat(grey[:, :, None], 3, axis=2)]).items[0].feature


def test_pil_objects_follow_the_family_alpha_and_exif_rules(toy_pipe):
    rgba = Image.fromarray(np.dstack([RGB, np.full(RGB.shape[:2], 128, np.uint8)]), "RGBA")
    # The toy family keeps the core default: alpha dropped, no EXIF transpose.
    assert run(toy_pipe, [rgba]).items[0].feature == run(toy_pipe, [Image.fromarray(RGB)]).items[0].feature
    exif = Image.Exif()
    exif[0x0112] = 6
    rotated = Image.fromarray(RGB)
    rotated.info["exif"] = exif.tobytes()
    assert run(toy_pipe, [rotated]).items[0].size == (40, 24)


def test_the_caller_changing_its_array_afterwards_changes_nothing(toy_pipe):
    arr = RGB.copy()
    inp = mmf.MmInput(images=[arr], input_ids=[1])
    want = toy_pipe.process(inp)
    arr[:] = 0  # the pipeline took its own copy when the request was resolved
    again = toy_pipe.process(mmf.MmInput(images=[RGB], input_ids=[1]))
    assert_same_output(want, again, "array mutated after submission")


@pytest.mark.parametrize(
    "bad, match",
    [(np.zeros((4, 4, 3), np.float32), "uint8 array"), (np.zeros((4, 4, 4), np.uint8), r"\[H, W, 3\]"),
     (np.zeros((0, 4, 3), np.uint8), "empty image"), (np.zeros(5, np.uint8), "uint8 array")],
)
def test_bad_arrays_are_media_errors_naming_the_item(toy_pipe, bad, match):
    with pytest.raises(mmf.MediaError, match=f"item 1: decoded image: .*{match}"):
        run(toy_pipe, [RGB, bad])


def test_limits_apply_to_decoded_inputs(toy):
    pipe = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1}, limits=mmf.Limits(max_image_pixels=900))
    with pytest.raises(mmf.LimitExceededError, match="item 0: image is 40x24 = 960 pixels, above the limit of 900"):
        run(pipe, [RGB])
    with pytest.raises(mmf.LimitExceededError, match="item 0: image is 40x24"):
        run(pipe, [Image.fromarray(RGB)])
    tight = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1},
                                   limits=mmf.Limits(max_request_bytes=RGB.nbytes + 10))
    match = "item 1: decoded image of 2880 bytes exceeds the request media byte budget"
    with pytest.raises(mmf.LimitExceededError, match=match):
        run(tight, [RGB, RGB])


def test_path_objects_are_files_under_the_policy(toy_pipe, tmp_path, monkeypatch):
    data = png_bytes(20, 12, seed=4)
    (tmp_path / "a.png").write_bytes(data)
    monkeypatch.chdir(tmp_path)
    out = run(toy_pipe, [pathlib.Path("a.png"), tmp_path / "a.png"])
    assert out.items[0].hash == out.items[1].hash == content_hash(data)
    strict = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1},
                                    fetch_policy=mmf.FetchPolicy(schemes={"data", "base64"}))
    with pytest.raises(mmf.FetchError, match=r"item 0 \(a.png\): media fetch: path source refused by fetch policy"):
        run(strict, [pathlib.Path("a.png")])


def test_a_relative_path_string_says_how_to_pass_it(toy_pipe, tmp_path, monkeypatch):
    (tmp_path / "cat.png").write_bytes(png_bytes(8, 8))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mmf.MediaError, match="item 0: .*pass an absolute path or a pathlib.Path"):
        run(toy_pipe, ["cat.png"])
    with pytest.raises(mmf.MediaError, match="item 0: .*pass an absolute path or a pathlib.Path"):
        run(toy_pipe, [os.path.join("sub", "missing.jpg")])


def test_unsupported_source_types_name_the_accepted_ones():
    match = "item 1: unsupported source type int; expected bytes, str, a pathlib.Path"
    with pytest.raises(mmf.InvalidInputError, match=match):
        mmf.MmInput(images=[b"x", 5], input_ids=[1])
    with pytest.raises(mmf.InvalidInputError, match="not a single source"):
        mmf.MmInput(images=RGB, input_ids=[1])


def test_async_path_takes_pixels_too(toy_pipe):
    import asyncio

    inp = mmf.MmInput(images=[RGB, Image.fromarray(RGB)], input_ids=[1, 1])
    assert_same_output(asyncio.run(toy_pipe.process_async(inp)), toy_pipe.process(inp), "async vs sync")
