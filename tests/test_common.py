"""``mm_framework.common``: the seed's model-agnostic Python API."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from mm_framework import common
from mm_framework.errors import InvalidInputError, MediaError, MmError, SpecError

# ----- scaled_dims --------------------------------------------------------------------

from .kernels.kernel_refs import SCALED_DIMS_PINS as PINS  # noqa: E402


@pytest.mark.parametrize("args,want", PINS, ids=[str(a) for a, _ in PINS])
def test_scaled_dims_pins(args, want):
    assert common.scaled_dims(*args) == want


def independent_scaled_dims(w: np.ndarray, h: np.ndarray, frac, cap) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized restatement of docs/architecture.md "Sizing" (scaled_dims) in float64 numpy."""
    if frac is None:
        return w, h
    long = np.maximum(w, h).astype(np.float64)
    target = long * frac
    if cap is not None:
        target = np.minimum(target, np.maximum(np.float64(cap), long))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = target / long
    keep = (long == 0) | (ratio == 1.0)
    nw = np.maximum(1, np.floor(w * ratio + 0.5)).astype(np.int64)
    nh = np.maximum(1, np.floor(h * ratio + 0.5)).astype(np.int64)
    return np.where(keep, w, nw), np.where(keep, h, nh)


SETTINGS = [(2.0, 2048), (1.5, 2048), (3.0, None), (None, None), (2.0, 1)]


@pytest.mark.parametrize("frac,cap", SETTINGS)
def test_scaled_dims_sweep_matches_independent_formula(frac, cap):
    rng = np.random.default_rng(2024)
    sizes = rng.integers(1, 4097, size=(500, 2))
    edges = np.array([[1, 1], [2048, 2048], [1, 4096], [4096, 1], [1365, 2048]])
    sizes = np.concatenate([sizes, edges])
    assert len(sizes) >= 505
    ew, eh = independent_scaled_dims(sizes[:, 0], sizes[:, 1], frac, cap)
    for (w, h), a, b in zip(sizes.tolist(), ew.tolist(), eh.tolist(), strict=True):
        assert common.scaled_dims(w, h, frac, cap) == (a, b), (w, h, frac, cap)


@pytest.mark.parametrize(
    "args,err,match",
    [
        ((-1, 5), MediaError, "non-negative ints"),
        ((5.0, 5), MediaError, "non-negative ints"),
        ((True, 5), MediaError, "non-negative ints"),
        ((5, 5, float("nan")), SpecError, "rescale_frac must be finite"),
        ((5, 5, float("inf")), SpecError, "rescale_frac must be finite"),
        ((5, 5, 0.0), SpecError, "greater than zero"),
        ((5, 5, -2.0), SpecError, "greater than zero"),
        ((5, 5, "2"), SpecError, "rescale_frac must be a number"),
        ((5, 5, 2.0, 0), SpecError, "rescale_cap must be greater than zero"),
        ((5, 5, 2.0, 10.0), SpecError, "rescale_cap must be an int"),
    ],
)
def test_scaled_dims_rejects_bad_arguments(args, err, match):
    with pytest.raises(err, match=match):
        common.scaled_dims(*args)


# ----- resize_rgb ---------------------------------------------------------------------


def rand_rgb(h: int, w: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize(
    "resample,pil_filter", [("pil_lanczos", Image.Resampling.LANCZOS), ("pil_bicubic", Image.Resampling.BICUBIC)]
)
@pytest.mark.parametrize(
    "src,dst", [((37, 53), (74, 106)), ((100, 100), (173, 173)), ((256, 256), (100, 100)), ((1, 1), (2, 2))]
)
def test_resize_rgb_equals_pillow(resample, pil_filter, src, dst):
    arr = rand_rgb(*src, seed=src[0])
    out = common.resize_rgb(arr, dst[1], dst[0], resample)
    want = np.asarray(Image.fromarray(arr).resize((dst[1], dst[0]), pil_filter))
    assert out.shape == (dst[0], dst[1], 3) and out.dtype == np.uint8
    assert np.array_equal(out, want)


def test_resize_rgb_defaults_to_lanczos():
    arr = rand_rgb(30, 40, 1)
    assert np.array_equal(common.resize_rgb(arr, 60, 45), common.resize_rgb(arr, 60, 45, "pil_lanczos"))


def test_resize_rgb_aten_u8_is_the_core_kernel():
    from mm_framework.kernels import resize

    arr = rand_rgb(48, 64, 2)
    out = common.resize_rgb(arr, 20, 30, "aten_u8")
    assert out.shape == (30, 20, 3) and np.array_equal(out, resize.resize_rgb(arr, 20, 30, "aten_u8"))


def test_resize_rgb_identity_is_a_copy():
    arr = rand_rgb(10, 12, 3)
    out = common.resize_rgb(arr, 12, 10)
    assert np.array_equal(out, arr) and not np.shares_memory(out, arr)


@pytest.mark.parametrize(
    "call,err,match",
    [
        (lambda a: common.resize_rgb(a, 8, 8, "nearest"), SpecError, "unknown resample"),
        (lambda a: common.resize_rgb(a, 0, 8), SpecError, "output size must be positive"),
        (lambda a: common.resize_rgb(a, 8, -1), SpecError, "output size must be positive"),
        (lambda a: common.resize_rgb(a, 8.0, 8), SpecError, "output size must be ints"),
        (lambda a: common.resize_rgb(a[:, ::2], 8, 8), MediaError, "array must be C-contiguous"),
        (lambda a: common.resize_rgb(np.dstack([a, a[..., :1]]), 8, 8), MediaError,
         "expected HWC RGB array with 3 channels, got 4"),
        (lambda a: common.resize_rgb(a.astype(np.float32), 8, 8), MediaError, "expected a uint8 array"),
        (lambda a: common.resize_rgb(a[..., 0], 8, 8), MediaError, "3 dimensions"),
        (lambda a: common.resize_rgb(a[:0], 8, 8), MediaError, "empty image"),
    ],
)
def test_resize_rgb_rejections(call, err, match):
    with pytest.raises(err, match=match) as e:
        call(rand_rgb(16, 16))
    assert isinstance(e.value, ValueError)


# ----- decode, hash, fetch, base64 ----------------------------------------------------


def encode(im: Image.Image, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


def test_image_decode_rgb_returns_h_w_and_hwc_array():
    arr = rand_rgb(21, 34, 4)
    h, w, rgb = common.image_decode_rgb(encode(Image.fromarray(arr)))
    assert (h, w) == (21, 34) and rgb.shape == (21, 34, 3) and rgb.dtype == np.uint8
    assert np.array_equal(rgb, arr)
    assert rgb.reshape(-1).tobytes() == arr.tobytes()  # the seed's flat buffer


def test_image_decode_rgb_drops_alpha_and_replicates_gray():
    arr = rand_rgb(8, 9, 5)
    rgba = Image.fromarray(np.dstack([arr, np.zeros((8, 9), np.uint8)]), "RGBA")
    assert np.array_equal(common.image_decode_rgb(encode(rgba))[2], arr)
    gray = Image.fromarray(arr[..., 0], "L")
    assert np.array_equal(common.image_decode_rgb(encode(gray))[2], np.repeat(arr[..., :1], 3, axis=2))


def test_image_decode_rgb_rejections():
    with pytest.raises(MediaError, match="image decode"):
        common.image_decode_rgb(b"not an image")
    with pytest.raises(InvalidInputError, match="expected bytes"):
        common.image_decode_rgb("not bytes")


def test_content_hash_vector_and_types():
    assert common.content_hash(b"abc") == 0x6437B3AC38465133
    assert common.content_hash(bytearray(b"abc")) == common.content_hash(memoryview(b"abc")) == 0x6437B3AC38465133
    with pytest.raises(InvalidInputError):
        common.content_hash("abc")


def test_fetch_bytes_source_forms(tmp_path):
    data = encode(Image.fromarray(rand_rgb(4, 4, 6)))
    path = tmp_path / "img.png"
    path.write_bytes(data)
    b64 = base64.b64encode(data).decode()
    assert common.fetch_bytes(str(path)) == data
    assert common.fetch_bytes(f"file://{path}") == data
    assert common.fetch_bytes(f"data:image/png;base64,{b64}") == data
    assert common.fetch_bytes(b64) == data
    with pytest.raises(InvalidInputError, match="expected a str source"):
        common.fetch_bytes(data)
    with pytest.raises(MmError):
        common.fetch_bytes(str(tmp_path / "missing.png"))


def test_base64_decode():
    assert common.base64_decode("YWJj") == b"abc"
    assert common.base64_decode("") == b""
    for bad in ("YWJj\n", " YWJj", "YW*j", "YWJjZA"):
        with pytest.raises(ValueError, match="base64") as e:
            common.base64_decode(bad)
        assert isinstance(e.value, MmError)
    with pytest.raises(InvalidInputError, match="expected str"):
        common.base64_decode(b"YWJj")
