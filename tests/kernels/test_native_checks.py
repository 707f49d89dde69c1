"""Every native entry point rejects bad arguments with a typed error, never a crash.

Each entry point is first called with valid arguments (it must succeed), then with one
argument broken at a time: wrong dtype, dimensions, sizes, strides, non-contiguous,
read-only or too-small outputs, outputs sharing memory with inputs, corrupt tables, and
negative or oversized band bounds. Buffers get ``KernelError`` (a ``ValueError``);
integers of the wrong Python type get the argument parser's ``TypeError``. The Python
face turns ``KernelError`` into ``InternalError`` (docs/kernels.md, "Argument checks").
"""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework.errors import InternalError
from mm_framework.kernels import native

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")

K = native._native if native.built() else None
RNG = np.random.default_rng(0)


def _ro(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def _strided(a: np.ndarray, axis: int) -> np.ndarray:
    """The same values as ``a``, every other element of a twice-as-long ``axis``."""
    shape = list(a.shape)
    shape[axis] *= 2
    big = np.zeros(shape, a.dtype)
    index = [slice(None)] * a.ndim
    index[axis] = slice(None, None, 2)
    big[tuple(index)] = a
    return big[tuple(index)]


def _fortran(a: np.ndarray) -> np.ndarray:
    return np.asfortranarray(a)


NOT_BUFFERS = [None, 3, 2.5, "abc", [1, 2, 3], object()]


def _accepted(call, cases: list) -> list:
    """The (name, value) cases ``call(args)`` did not reject with ``KernelError``."""
    missed = []
    for name, value, args in cases:
        try:
            call(args)
        except K.KernelError:
            continue
        missed.append((name, getattr(value, "shape", value)))
    return missed


# --- resample_horizontal / resample_vertical -------------------------------------------

def _resample_args(axis: str) -> dict:
    src = RNG.integers(0, 256, (20, 30, 3), dtype=np.uint8)
    n_in, n_out = (30, 17) if axis == "h" else (20, 11)
    t = native.pil_table(n_in, n_out, "bicubic")
    dst = np.zeros((20, 17, 3) if axis == "h" else (11, 30, 3), np.uint8)
    return {"src": src, "dst": dst, "bounds": t.bounds.copy(), "weights": t.weights.copy(), "precision": 22,
            "lo": 0, "hi": dst.shape[0]}


def _bounds(args: dict, row: int, start: int, count: int) -> np.ndarray:
    b = args["bounds"].copy()
    b[row] = (start, count)
    return b


def _resample_breaks(axis: str) -> list:
    a = _resample_args(axis)
    n = a["dst"].shape[0]
    k = a["weights"].shape[1]
    breaks = [("src", v) for v in NOT_BUFFERS] + [("dst", v) for v in NOT_BUFFERS]
    breaks += [
        ("src", a["src"].astype(np.uint16)), ("src", a["src"].astype(np.float32)), ("src", a["src"].view(np.int8)),
        ("src", a["src"][..., 0].ravel()), ("src", a["src"][None]), ("src", a["src"][..., :2]),
        ("src", np.zeros((20, 30, 4), np.uint8)), ("src", _strided(a["src"], 1)), ("src", _strided(a["src"], 2)),
        ("src", a["src"][::-1]), ("src", a["src"].transpose(1, 0, 2)), ("src", np.zeros((0, 30, 3), np.uint8)),
        ("dst", _ro(a["dst"])), ("dst", bytes(a["dst"].nbytes)),
        ("dst", a["dst"][:-1] if axis == "h" else a["dst"][:, :-1]),
        ("dst", a["dst"][..., :1]), ("dst", a["dst"].astype(np.int16)), ("dst", _strided(a["dst"], 1)),
        ("dst", a["src"]),
        ("bounds", a["bounds"].astype(np.int64)), ("bounds", a["bounds"][:-1]), ("bounds", a["bounds"][:, :1]),
        ("bounds", _strided(a["bounds"], 0)), ("bounds", _fortran(a["bounds"])), ("bounds", a["bounds"].ravel()),
        ("bounds", _bounds(a, 0, -1, 2)), ("bounds", _bounds(a, 1, 0, -1)), ("bounds", _bounds(a, 2, 0, k + 1)),
        ("bounds", _bounds(a, 3, 28 if axis == "h" else 18, 3)), ("bounds", _bounds(a, 4, 2**31 - 2, 2)),
        ("weights", a["weights"].astype(np.float32)), ("weights", a["weights"][:-1]),
        ("weights", _fortran(np.tile(a["weights"], 2))), ("weights", np.full_like(a["weights"], 2**30)),
        ("weights", np.full_like(a["weights"], -(2**30))),
        ("precision", 0), ("precision", 31), ("precision", -5),
        ("lo", -1), ("hi", n + 1), ("lo", 3), ("hi", -1),
    ]
    if axis == "v":
        breaks += [("dst", np.zeros((11, 29, 3), np.uint8))]
    else:
        breaks += [("dst", np.zeros((19, 17, 3), np.uint8))]
    # ("lo", 3) is an inverted band with hi = 2; the last case writes over its own source.
    cases = [(name, value, {"hi": 2} if (name, value) == ("lo", 3) else {}) for name, value in breaks]
    shared = np.zeros(2 * a["src"].nbytes, np.uint8)
    overlap = shared[a["src"].nbytes // 2 :][: a["dst"].nbytes].reshape(a["dst"].shape)
    return cases + [("dst", overlap, {"src": shared[: a["src"].nbytes].reshape(a["src"].shape)})]


def _call_resample(axis: str, args: dict) -> None:
    fn = K.resample_horizontal if axis == "h" else K.resample_vertical
    fn(args["src"], args["dst"], args["bounds"], args["weights"], args["precision"], args["lo"], args["hi"])


@pytest.mark.parametrize("axis", ["h", "v"])
def test_resample_rejects_every_break(axis):
    _call_resample(axis, _resample_args(axis))  # the valid call works
    cases = [
        (name, value, {**_resample_args(axis), name: value, **extra}) for name, value, extra in _resample_breaks(axis)
    ]
    assert not _accepted(lambda args: _call_resample(axis, args), cases)


@pytest.mark.parametrize("axis", ["h", "v"])
def test_resample_rejects_bad_integer_types(axis):
    for name, value in (("precision", 2.0), ("lo", "0"), ("hi", None), ("lo", 1 << 80)):
        with pytest.raises((TypeError, OverflowError)):
            _call_resample(axis, {**_resample_args(axis), name: value})


def test_a_failed_check_writes_nothing():
    args = _resample_args("h")
    args["dst"][:] = 7
    args["bounds"] = _bounds(args, 16, 0, 99)  # only the last table entry is bad
    with pytest.raises(K.KernelError):
        _call_resample("h", args)
    assert (args["dst"] == 7).all()


# --- pil_coeffs ---------------------------------------------------------------------------

def test_pil_coeffs_rejects_bad_sizes_and_filters():
    K.pil_coeffs(10, 3, 1)
    for args in ((0, 3, 1), (10, 0, 1), (-1, 3, 1), (2**24 + 1, 3, 1), (10, 2**24 + 1, 1), (10, 3, -1), (10, 3, 3),
                 (2**24, 2**20, 2)):
        with pytest.raises(K.KernelError):
            K.pil_coeffs(*args)
    with pytest.raises(TypeError):
        K.pil_coeffs(10.0, 3, 1)


# --- patchify_qwen ------------------------------------------------------------------------

def _qwen_args() -> dict:
    return {"frames": RNG.integers(0, 256, (56, 84, 3), dtype=np.uint8),
            "lut": RNG.random((3, 256), dtype=np.float32), "out": np.zeros((4 * 6, 3 * 2 * 196), np.float32),
            "ps": 14, "merge": 2, "tps": 2, "lo": 0, "hi": 2}


def _call_qwen(a: dict) -> None:
    K.patchify_qwen(a["frames"], a["lut"], a["out"], a["ps"], a["merge"], a["tps"], a["lo"], a["hi"])


def test_patchify_qwen_rejects_every_break():
    a = _qwen_args()
    _call_qwen(a)
    two = np.stack([a["frames"], a["frames"]])
    breaks = [(name, v) for name in ("frames", "lut", "out") for v in NOT_BUFFERS]
    breaks += [
        ("frames", a["frames"].astype(np.float32)), ("frames", a["frames"][..., 0]), ("frames", two[None]),
        ("frames", np.zeros((56, 84, 4), np.uint8)), ("frames", a["frames"][:42]), ("frames", a["frames"][:, :70]),
        ("frames", np.stack([a["frames"]] * 3)), ("frames", two[::-1]), ("frames", _strided(a["frames"], 1)),
        ("frames", a["frames"].transpose(1, 0, 2)),
        ("lut", a["lut"].astype(np.float64)), ("lut", a["lut"][:, :255]), ("lut", a["lut"][:2]),
        ("lut", _strided(a["lut"], 1)), ("lut", a["lut"].ravel()), ("lut", a["out"][:3, :256]),
        ("out", _ro(a["out"])), ("out", a["out"][:-1]), ("out", a["out"][:, :-1]), ("out", a["out"].astype(np.float64)),
        ("out", _fortran(a["out"])), ("out", _strided(a["out"], 0)), ("out", a["out"][None]),
        ("out", np.zeros((4 * 6, 3 * 196), np.float32)),
        ("ps", 0), ("ps", -14), ("ps", 5000), ("merge", 0), ("merge", 3), ("tps", 0), ("tps", 1), ("tps", 100),
        ("lo", -1), ("hi", 3), ("lo", 2),
    ]
    cases = [(name, value, {**a, name: value, **({"hi": 1} if (name, value) == ("lo", 2) else {})})
             for name, value in breaks]
    assert not _accepted(_call_qwen, cases)


def test_patchify_qwen_u8_rejects_every_break():
    # lut None: the out buffer must be uint8 of the same shape, checked like the f32 one.
    a = {**_qwen_args(), "lut": None, "out": np.zeros((4 * 6, 3 * 2 * 196), np.uint8)}
    _call_qwen(a)
    breaks = [("out", v) for v in NOT_BUFFERS] + [
        ("out", _ro(a["out"])), ("out", a["out"][:-1]), ("out", a["out"][:, :-1]), ("out", a["out"].astype(np.float32)),
        ("out", _fortran(a["out"])), ("out", _strided(a["out"], 0)), ("out", a["out"][None]),
        ("out", a["out"].view(np.int8)),
        ("frames", a["frames"][:42]), ("tps", 0), ("ps", 5000), ("hi", 3),
    ]
    assert not _accepted(_call_qwen, [(name, value, {**a, name: value}) for name, value in breaks])
    # A uint8 out with a table is the f32 entry's wrong dtype, not silently u8 patches.
    with pytest.raises(K.KernelError, match="out"):
        _call_qwen({**a, "lut": _qwen_args()["lut"]})
    shared = np.zeros(a["out"].size, np.uint8)
    with pytest.raises(K.KernelError, match="shares memory"):
        _call_qwen({**a, "out": shared.reshape(a["out"].shape), "frames": shared[: 56 * 84 * 3].reshape(56, 84, 3)})


def test_patchify_qwen_bf16_rejects_every_break():
    # A uint16 table (bf16 bits): out must be uint16 of the same shape, the table [3, 256].
    a = {**_qwen_args(), "lut": RNG.integers(0, 1 << 16, (3, 256), dtype=np.uint16),
         "out": np.zeros((4 * 6, 3 * 2 * 196), np.uint16)}
    _call_qwen(a)
    breaks = [("out", v) for v in NOT_BUFFERS] + [
        ("out", _ro(a["out"])), ("out", a["out"][:-1]), ("out", a["out"][:, :-1]), ("out", a["out"].astype(np.float32)),
        ("out", _fortran(a["out"])), ("out", _strided(a["out"], 0)), ("out", a["out"].view(np.int16)),
        ("lut", a["lut"][:, :255]), ("lut", a["lut"].view(np.int16)), ("lut", _strided(a["lut"], 1)),
        ("lut", a["lut"].astype(np.uint32)),
    ]
    assert not _accepted(_call_qwen, [(name, value, {**a, name: value}) for name, value in breaks])
    # A float32 out with a uint16 table, or the reverse, is refused, never reinterpreted.
    with pytest.raises(K.KernelError, match="out"):
        _call_qwen({**a, "out": _qwen_args()["out"]})
    with pytest.raises(K.KernelError, match="out"):
        _call_qwen({**_qwen_args(), "out": a["out"]})


def test_patchify_qwen_output_over_its_input_is_rejected():
    a = _qwen_args()
    shared = np.zeros(a["out"].size, np.float32)
    a["out"] = shared.reshape(a["out"].shape)
    a["frames"] = shared.view(np.uint8)[: 56 * 84 * 3].reshape(56, 84, 3)
    with pytest.raises(K.KernelError, match="shares memory"):
        _call_qwen(a)


# --- patchify_bf16 ------------------------------------------------------------------------

def _bf16_args() -> dict:
    return {"rgb": RNG.integers(0, 256, (33, 50, 3), dtype=np.uint8),
            "lut": RNG.integers(0, 2**16, (3, 256), dtype=np.uint16), "pad": np.array([1, 2, 3], np.uint16),
            "out": np.zeros((3 * 4, 16, 16, 3), np.uint16), "ps": 16, "lo": 0, "hi": 3}


def _call_bf16(a: dict) -> None:
    K.patchify_bf16(a["rgb"], a["lut"], a["pad"], a["out"], a["ps"], a["lo"], a["hi"])


def test_patchify_bf16_rejects_every_break():
    a = _bf16_args()
    _call_bf16(a)
    breaks = [(n, v) for n in ("rgb", "lut", "pad", "out") for v in NOT_BUFFERS]
    breaks += [
        ("rgb", a["rgb"].astype(np.uint16)), ("rgb", a["rgb"][..., 0]), ("rgb", a["rgb"][None]),
        ("rgb", np.zeros((33, 50, 4), np.uint8)), ("rgb", _strided(a["rgb"], 1)), ("rgb", a["rgb"][::-1]),
        ("rgb", a["rgb"][:20]), ("rgb", a["rgb"][:, :47]),
        ("lut", a["lut"].astype(np.float32)), ("lut", a["lut"][:, :200]), ("lut", _strided(a["lut"], 1)),
        ("pad", a["pad"][:2]), ("pad", a["pad"].astype(np.int32)), ("pad", a["pad"][None]),
        ("pad", _strided(a["pad"], 0)),
        ("out", _ro(a["out"])), ("out", a["out"][:-1]), ("out", a["out"].reshape(12, 16 * 16 * 3)),
        ("out", a["out"].astype(np.float32)), ("out", _strided(a["out"], 3)), ("out", a["out"][:, :, :15]),
        ("out", a["out"].view(np.uint8)), ("ps", 0), ("ps", 8), ("ps", 5000), ("lo", -1), ("hi", 4),
    ]
    assert not _accepted(_call_bf16, [(name, value, {**a, name: value}) for name, value in breaks])


# --- norm_chw ---------------------------------------------------------------------------

def test_norm_chw_rejects_every_break():
    a = {"rgb": RNG.integers(0, 256, (33, 50, 3), dtype=np.uint8), "ops": np.array([1, 3], np.int32),
         "consts": np.full((2, 3), 0.5, np.float32), "out": np.zeros((3, 33, 50), np.float32), "bf16": False,
         "lo": 0, "hi": 33}
    call = lambda a: K.norm_chw(a["rgb"], a["ops"], a["consts"], a["out"], a["bf16"], a["lo"], a["hi"])  # noqa: E731
    call(a)
    call({**a, "out": np.zeros((3, 33, 50), np.uint16), "bf16": True})
    breaks = [(n, v) for n in ("rgb", "ops", "consts", "out") for v in NOT_BUFFERS]
    breaks += [
        ("rgb", a["rgb"].astype(np.uint16)), ("rgb", a["rgb"][..., 0]), ("rgb", np.zeros((33, 50, 4), np.uint8)),
        ("rgb", _strided(a["rgb"], 1)), ("rgb", a["rgb"][::-1]), ("rgb", a["rgb"][:20]),
        ("ops", a["ops"].astype(np.int64)), ("ops", np.array([1, 4], np.int32)), ("ops", np.array([-1, 3], np.int32)),
        ("ops", np.zeros(9, np.int32)), ("ops", a["ops"][None]), ("ops", np.zeros(0, np.int32)),
        ("consts", a["consts"].astype(np.float64)), ("consts", a["consts"][:1]), ("consts", a["consts"][:, :2]),
        ("out", _ro(a["out"])), ("out", a["out"][:, :-1]), ("out", a["out"].astype(np.uint16)),
        ("out", a["out"].astype(np.float64)), ("out", _strided(a["out"], 2)), ("out", a["out"][:2]),
        ("lo", -1), ("hi", 34),
    ]
    assert not _accepted(call, [(name, value, {**a, name: value}) for name, value in breaks])
    with pytest.raises(K.KernelError, match="out"):  # bf16 asks for uint16 bits
        call({**a, "bf16": True})
    shared = np.zeros((3, 33, 50), np.float32)
    with pytest.raises(K.KernelError, match="shares memory"):
        call({**a, "out": shared, "rgb": shared.view(np.uint8).reshape(-1)[:33 * 50 * 3].reshape(33, 50, 3)})


# --- planes_u8 --------------------------------------------------------------------------

def test_planes_u8_rejects_every_break():
    a = {"rgb": RNG.integers(0, 256, (33, 50, 3), dtype=np.uint8), "out": np.zeros((3, 33, 50), np.uint8),
         "lo": 0, "hi": 33}
    call = lambda a: K.planes_u8(a["rgb"], a["out"], a["lo"], a["hi"])  # noqa: E731
    call(a)
    breaks = [(n, v) for n in ("rgb", "out") for v in NOT_BUFFERS]
    breaks += [
        ("rgb", a["rgb"].astype(np.uint16)), ("rgb", a["rgb"][..., 0]), ("rgb", a["rgb"][None]),
        ("rgb", np.zeros((33, 50, 4), np.uint8)), ("rgb", _strided(a["rgb"], 1)), ("rgb", a["rgb"][::-1]),
        ("rgb", a["rgb"][:20]), ("rgb", a["rgb"][:, :47]),
        ("out", _ro(a["out"])), ("out", a["out"][:, :-1]), ("out", a["out"][:2]), ("out", a["out"].reshape(99, 50)),
        ("out", a["out"].astype(np.uint16)), ("out", _strided(a["out"], 2)), ("out", _fortran(a["out"])),
        ("out", a["rgb"].reshape(3, 33, 50)), ("lo", -1), ("hi", 34),
    ]
    assert not _accepted(call, [(name, value, {**a, name: value}) for name, value in breaks])


# --- the Python face --------------------------------------------------------------------

def test_face_maps_kernel_errors_to_internal_error():
    img = RNG.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    with pytest.raises(InternalError, match="patchify_qwen"):
        native.patchify_qwen(img, np.zeros((3, 256), np.float32), 14, 2, 2)  # 30 is no multiple of 28
    with pytest.raises(InternalError, match="patchify_bf16"):
        native.patchify_bf16(img, np.zeros((3, 255), np.uint16), np.zeros(3, np.uint16), 16)
    bad = native.Table(np.array([[0, 50]] * 7, np.int32), np.ones((7, 50), np.int32), 22)
    with pytest.raises(InternalError, match="resample_horizontal"):
        native.resize(img, bad, None, False)
    with pytest.raises(InternalError, match="pil_coeffs"):
        native.pil_table(0, 5, "bicubic")
