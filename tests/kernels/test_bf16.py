"""The bfloat16 kernels: rounding as torch rounds, and the Llama 4 rescale + normalize table
against torch's own bfloat16 arithmetic (live where torch imports)."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels


def test_rounding_is_to_nearest_even():
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0); 1 + 3 * 2^-8
    # ties up to 1 + 2^-6 (even); anything past the halfway point rounds up.
    values = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -2.5, np.inf, np.nan], dtype=np.float32)
    bits = kernels.bf16_bits(values)
    assert bits.tolist() == [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC020, 0x7F80, 0x7FC0]
    assert kernels.bf16_widen(bits[:6]).tolist() == [1.0, 1.0, 1 + 2**-6, 1 + 2**-7, -2.5, np.inf]


def test_half_table_is_exact_in_bf16():
    # mean = std = 0.5: bf16(bf16(v / 255) - 0.5) / 0.5 -> 0 is -1, 255 is 1.
    lut = kernels.normalize_lut_bf16([0.5] * 3, [0.5] * 3, 1 / 255)
    assert lut.dtype == np.uint16 and lut.shape == (3, 256)
    wide = kernels.bf16_widen(lut)
    assert wide[:, 0].tolist() == [-1.0] * 3 and wide[:, 255].tolist() == [1.0] * 3
    assert (np.diff(wide[0]) >= 0).all()


def test_std_that_rounds_to_zero_in_bf16_is_refused():
    with pytest.raises(mmf.SpecError, match="non-zero in bfloat16"):
        kernels.normalize_lut_bf16([0.5] * 3, [0.5, 1e-45, 0.5], 1 / 255)


def test_apply_writes_chw_bits():
    lut = np.arange(3 * 256, dtype=np.uint16).reshape(3, 256)
    rgb = np.random.default_rng(0).integers(0, 256, (37, 23, 3), dtype=np.uint8)
    out = np.empty((3, 37, 23), dtype=np.uint16)
    kernels.apply_bf16_lut(lut, rgb, out)
    for c in range(3):
        assert (out[c] == lut[c][rgb[:, :, c]]).all()
    with pytest.raises(mmf.InternalError, match="uint16"):
        kernels.apply_bf16_lut(lut.astype(np.float32), rgb, out)


@pytest.mark.parametrize("seed", range(40))
def test_table_equals_torch(seed):
    torch = pytest.importorskip("torch")
    tvf = pytest.importorskip("torchvision.transforms.v2.functional")
    rng = np.random.default_rng(seed)
    if seed == 0:
        mean, std, r = [0.5] * 3, [0.5] * 3, 1 / 255
    elif seed == 1:
        mean, std, r = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711], 1 / 255
    else:
        mean, std, r = rng.uniform(-1, 1, 3).tolist(), rng.uniform(0.01, 2, 3).tolist(), float(rng.uniform(1e-4, 1))
    u8 = torch.arange(256, dtype=torch.uint8).view(1, 1, 256).expand(3, 1, 256).contiguous()
    ref = tvf.normalize(u8.to(torch.bfloat16) * r, mean, std)
    want = ref.view(torch.int16).numpy().view(np.uint16)[:, 0, :]
    assert (kernels.normalize_lut_bf16(mean, std, r) == want).all()


@pytest.mark.parametrize("shape", [(1, 1), (37, 23), (336, 336), (5, 1000)])
def test_native_and_portable_give_the_same_bits(shape):
    from mm_framework.kernels import native

    if not native.built():
        pytest.skip(f"native kernels not built: {native.missing_cause()}")
    rng = np.random.default_rng(sum(shape))
    lut = rng.integers(0, 1 << 16, (3, 256), dtype=np.uint16)
    canvas = rng.integers(0, 256, (shape[0] + 3, shape[1] + 7, 3), dtype=np.uint8)
    tile = canvas[2:2 + shape[0], 5:5 + shape[1]]  # rows a canvas width apart
    got = {}
    for mode in ("native", "portable"):
        native.set_mode(mode)
        try:
            out = np.empty((3, *shape), dtype=np.uint16)
            kernels.apply_bf16_lut(lut, tile, out)
            got[mode] = out
        finally:
            native.set_mode(None)
    assert np.array_equal(got["native"], got["portable"])
    assert np.array_equal(got["native"], np.stack([lut[c][tile[:, :, c]] for c in range(3)]))


def test_native_kernel_checks_its_arguments():
    from mm_framework.kernels import native

    if not native.built():
        pytest.skip(f"native kernels not built: {native.missing_cause()}")
    lut = np.zeros((3, 256), np.uint16)
    rgb = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(Exception, match="out"):
        native.lut_chw_u16(rgb, lut, np.zeros((3, 4, 6), np.uint16), 0, 4)
    with pytest.raises(Exception, match="rows"):
        native.lut_chw_u16(rgb, lut, np.zeros((3, 4, 5), np.uint16), 0, 9)
