"""The seed's inkling API: argument checks, return shapes, batches, hashing, threads."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import inkling_plugin as inkling
from .inkling_reference import make_photo_like, ref_decode_rescale, ref_patchify
from mm_framework import par
from mm_framework import InvalidInputError, LimitExceededError, MediaError, MmError, SpecError
from mm_framework import content_hash


@pytest.fixture
def threads():
    yield par.set_threads
    par.set_threads(None)


def png(h: int, w: int, seed: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(make_photo_like(h, w, seed), "RGB").save(buf, "PNG")
    return buf.getvalue()


def jpeg(h: int, w: int, seed: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(make_photo_like(h, w, seed), "RGB").save(buf, "JPEG", quality=90)
    return buf.getvalue()


DATAS = [png(60, 90, 1), jpeg(45, 31, 2), png(80, 40, 3), jpeg(100, 130, 4), png(1, 1, 5)]
ARR = make_photo_like(30, 50, 9)

# ----- argument checks --------------------------------------------------------------


@pytest.mark.parametrize(
    "ps,match",
    [(0, "patch_size must be greater than zero"), (-3, "patch_size must be greater than zero"),
     (40.0, "patch_size must be an int"), (True, "patch_size must be an int"), ("40", "patch_size must be an int"),
     (10**5, "patch_size must be <= 13377")],
)
def test_bad_patch_size(ps, match):
    calls = [
        lambda: inkling.patchify_rgb(ARR, ps),
        lambda: inkling.decode_patchify(DATAS[0], ps),
        lambda: inkling.decode_patchify_batch(DATAS, ps),
        lambda: inkling.preprocess_images(DATAS, ps),
        lambda: inkling.rescale_patchify_hash(ARR, b"x", ps),
    ]
    for call in calls:
        with pytest.raises(SpecError, match=match):
            call()


@pytest.mark.parametrize(
    "frac,cap,match",
    [
        (float("nan"), None, "rescale_frac must be finite and greater than zero"),
        (float("inf"), None, "rescale_frac must be finite"),
        (0.0, None, "rescale_frac must be finite and greater than zero"),
        (-2.0, None, "rescale_frac must be finite and greater than zero"),
        ("2", None, "rescale_frac must be a number"),
        (None, 2048, "rescale_cap requires rescale_frac > 1"),
        (1.0, 2048, "rescale_cap requires rescale_frac > 1"),
        (0.5, 100, "rescale_cap requires rescale_frac > 1"),
        (2.0, 0, "rescale_cap must be greater than zero"),
        (2.0, -5, "rescale_cap must be greater than zero"),
        (2.0, 2048.0, "rescale_cap must be an int"),
    ],
)
def test_bad_rescale(frac, cap, match):
    calls = [
        lambda: inkling.decode_patchify(DATAS[0], 40, frac, cap),
        lambda: inkling.decode_patchify_batch(DATAS, 40, frac, cap),
        lambda: inkling.preprocess_images(DATAS, 40, frac, cap),
        lambda: inkling.rescale_patchify_hash(ARR, b"x", 40, frac, cap),
    ]
    for call in calls:
        with pytest.raises(SpecError, match=match):
            call()


@pytest.mark.parametrize(
    "arr,match",
    [
        (ARR.astype(np.float32), "expected a uint8 array, got float32"),
        (ARR[:, :, 0], r"expected an HWC array \(3 dimensions\)"),
        (np.zeros((4, 4, 4), np.uint8), "expected HWC RGB array with 3 channels, got 4"),
        (np.zeros((4, 4, 1), np.uint8), "expected HWC RGB array with 3 channels, got 1"),
        (ARR[:, ::2], "array must be C-contiguous"),
        (np.asfortranarray(ARR), "array must be C-contiguous"),
        (np.zeros((0, 5, 3), np.uint8), "empty image"),
        (ARR.tolist(), "expected a numpy uint8 HWC array, got list"),
    ],
)
def test_bad_arrays(arr, match):
    with pytest.raises(MediaError, match=match):
        inkling.patchify_rgb(arr, 40)
    with pytest.raises(MediaError, match=match):
        inkling.rescale_patchify_hash(arr, b"raw", 40)


def test_bad_data_types():
    with pytest.raises(InvalidInputError, match="expected bytes, got str"):
        inkling.decode_patchify("not bytes", 40)
    with pytest.raises(InvalidInputError, match="sequence of bytes objects"):
        inkling.decode_patchify_batch(DATAS[0], 40)
    with pytest.raises(InvalidInputError, match="item 1: data: expected bytes, got int"):
        inkling.preprocess_images([DATAS[0], 7], 40)
    with pytest.raises(InvalidInputError, match="content_hash: expected bytes"):
        inkling.rescale_patchify_hash(ARR, None, 40)


def test_every_rejection_is_a_value_error():
    for call in [lambda: inkling.patchify_rgb(ARR, 0), lambda: inkling.patchify_rgb(ARR[:, ::2], 40),
                 lambda: inkling.decode_patchify(b"junk", 40), lambda: inkling.decode_patchify(DATAS[0], 40, None, 5)]:
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, MmError)


def test_undecodable_item_is_named_and_lowest_index_wins(threads):
    for mode in ("inline", 4):
        threads(mode)
        with pytest.raises(MediaError, match="^item 2: image decode") as e:
            inkling.decode_patchify_batch([DATAS[0], DATAS[1], b"junk", b"also junk"], 40)
        assert e.value.item == 2
        with pytest.raises(MediaError, match="^item 0: image decode"):
            inkling.preprocess_images([b"", DATAS[0]], 40)


def test_unbounded_rescale_is_refused():
    with pytest.raises(LimitExceededError, match="above the limit"):
        inkling.decode_patchify(DATAS[0], 40, 1e6)


# ----- results ----------------------------------------------------------------------


@pytest.mark.parametrize("frac,cap", [(None, None), (2.0, 2048), (0.5, None), (3.0, 100)])
def test_decode_patchify_matches_reference(frac, cap):
    for data in DATAS:
        h, w, bits = inkling.decode_patchify(data, 40, frac, cap)
        arr = ref_decode_rescale(data, frac, cap)
        assert type(h) is int and type(w) is int and (h, w) == arr.shape[:2]
        assert bits.dtype == np.uint16 and np.array_equal(bits, ref_patchify(arr, 40))


def test_rescale_patchify_hash_is_decode_patchify_on_a_pil_array():
    for data in DATAS:
        arr = ref_decode_rescale(data, None, None)
        h, w, bits, digest = inkling.rescale_patchify_hash(arr, data, 40, 2.0, 2048)
        assert (h, w, bits.tobytes()) == (lambda r: (r[0], r[1], r[2].tobytes()))(
            inkling.decode_patchify(data, 40, 2.0, 2048)
        )
        assert digest == content_hash(data)


def test_flat_bits_are_the_seeds_layout():
    bits = inkling.patchify_rgb(ARR, 40)
    flat = bits.reshape(-1)
    assert np.shares_memory(flat, bits)
    # element (k, y, x, c) sits at ((k*ps + y)*ps + x)*3 + c
    k, y, x, c = 1, 3, 5, 2
    assert flat[((k * 40 + y) * 40 + x) * 3 + c] == bits[k, y, x, c]


@pytest.mark.parametrize("frac,cap", [(None, None), (2.0, 2048)])
def test_batches_equal_per_image_in_every_thread_mode(threads, frac, cap):
    single = [inkling.decode_patchify(d, 40, frac, cap) for d in DATAS]
    for mode in ("inline", 1, 4):
        threads(mode)
        batch = inkling.decode_patchify_batch(DATAS, 40, frac, cap)
        pre = inkling.preprocess_images(tuple(DATAS), 40, frac, cap)
        assert len(batch) == len(pre) == len(DATAS)
        for d, one, b, p in zip(DATAS, single, batch, pre, strict=True):
            assert (b[0], b[1]) == (p[0], p[1]) == (one[0], one[1])
            assert b[2].tobytes() == p[2].tobytes() == one[2].tobytes()
            assert p[3] == content_hash(d)


def test_batch_accepts_bytearray_and_memoryview():
    got = inkling.decode_patchify_batch([bytearray(DATAS[0]), memoryview(DATAS[1])], 16)
    want = [inkling.decode_patchify(d, 16) for d in DATAS[:2]]
    assert [g[2].tobytes() for g in got] == [x[2].tobytes() for x in want]


def test_empty_batch():
    assert inkling.decode_patchify_batch([], 40) == []
    assert inkling.preprocess_images([], 40) == []
