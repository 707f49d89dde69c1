"""``rgb_array`` packs Pillow's Arrow-exported 4-byte pixels in C (docs/kernels.md, "RGB
export"): the same bytes as ``np.asarray``, in either kernel mode, and the C entry point
refuses what is not a single-block 4-byte pixel array of the output's size."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from mm_framework.kernels import native
from mm_framework.kernels.export import rgb_array

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")
SIZES = [(1, 1), (1, 7), (2, 8), (3, 5), (17, 33), (64, 48), (960, 1280)]


@pytest.mark.parametrize("mode", ["native", "portable"])
@pytest.mark.parametrize("h,w", SIZES)
def test_equals_asarray(mode, h, w):
    pixels = np.random.default_rng(h * 1000 + w).integers(0, 256, (h, w, 3), dtype=np.uint8)
    im = Image.fromarray(pixels)
    native.set_mode(mode)
    try:
        got = rgb_array(im)
    finally:
        native.set_mode(None)
    assert np.array_equal(got, np.asarray(im)) and np.array_equal(got, pixels)
    assert got.dtype == np.uint8 and not got.flags.writeable


def test_arrow_path_taken_for_one_block():
    im = Image.fromarray(np.random.default_rng(3).integers(0, 256, (40, 30, 3), dtype=np.uint8))
    assert np.array_equal(native.rgb_from_arrow(im), np.asarray(im))


def test_image_over_several_blocks_falls_back():
    # Pillow keeps images past its 16 MiB block in several blocks, which it does not export.
    im = Image.new("RGB", (5000, 1000), (1, 2, 3))
    im.paste((9, 8, 7), (4000, 900, 5000, 1000))
    assert native.rgb_from_arrow(im) is None
    got = rgb_array(im)
    assert got.shape == (1000, 5000, 3) and tuple(got[999, 4999]) == (9, 8, 7) and tuple(got[0, 0]) == (1, 2, 3)


def _capsules(im):
    return im.__arrow_c_array__()


@pytest.mark.parametrize("case,match", [
    ("not capsules", "expected the capsules"),
    ("L image", "fixed_size_list<uint8>"),
    ("fewer pixels", "does not hold the image's pixels"),
    ("more pixels", "does not hold the image's pixels"),
    ("channels", r"out: .*shape|out: .*3"),
    ("read-only", "read-only"),
    ("strided out", "contiguous"),
])
def test_kernel_refuses(case, match):
    lib = native._lib()
    im = Image.new("RGB", (6, 4))
    out = np.empty((4, 6, 3), np.uint8)
    args = _capsules(im)
    if case == "not capsules":
        args = ("schema", "array")
    elif case == "L image":
        args = _capsules(Image.new("L", (6, 4)))
    elif case == "fewer pixels":
        out = np.empty((4, 5, 3), np.uint8)
    elif case == "more pixels":
        out = np.empty((5, 6, 3), np.uint8)
    elif case == "channels":
        out = np.empty((4, 6, 4), np.uint8)
    elif case == "read-only":
        out.flags.writeable = False
    elif case == "strided out":
        out = np.empty((4, 12, 3), np.uint8)[:, ::2]
    with pytest.raises(lib.KernelError, match=match):
        lib.rgbx_to_rgb(*args, out)
