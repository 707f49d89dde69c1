"""What ``mm_framework`` is measured against: the reference processors and the floors.

- transformers' ``Qwen2VLImageProcessorPil`` and ``Qwen2VLImageProcessor`` (torchvision),
  built from the same spec as the pipeline, fed Pillow images opened from the same
  bytes (their own ``convert_rgb`` runs inside, as in a serving stack);
- the floor: Pillow decode alone, and decode + Pillow's resize to the family's target
  size, the two steps no Pillow-exact implementation can skip;
- for Inkling, a straightforward numpy implementation of the same math (f32 canvas,
  normalize, bf16 round, patch reshape), so the plugin's gain is measured against the
  obvious code rather than against nothing.

Every contender is a callable over a list of encoded images. :func:`check` runs each
once against the pipeline's output, so a table can only show a ratio between
computations that produced the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from PIL import Image

from mm_framework.kernels import scaled_dims, smart_resize

Run = Callable[[Sequence[bytes]], Any]

QWEN_FIELDS = ("min_pixels", "max_pixels", "patch_size", "temporal_patch_size", "merge_size", "image_mean", "image_std")
HF_CLASSES = {"pil": "Qwen2VLImageProcessorPil", "torchvision": "Qwen2VLImageProcessor"}


def _open(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im if im.mode == "RGB" else im.convert("RGB")


def hf_available(backend: str) -> str | None:
    """Why transformers' processor for ``backend`` cannot run here, or None when it can."""
    try:
        import transformers
    except ImportError as e:
        return f"transformers not importable ({e})"
    if backend == "torchvision":
        try:
            import torchvision  # noqa: F401
        except ImportError as e:
            return f"torchvision not importable ({e})"
    if not hasattr(transformers, HF_CLASSES[backend]):
        return f"transformers {transformers.__version__} has no {HF_CLASSES[backend]}"
    return None


def hf_qwen(spec: dict[str, Any], backend: str) -> Run:
    """transformers' Qwen-VL image processor of ``spec``; returns ``pixel_values``."""
    import transformers

    cls = getattr(transformers, HF_CLASSES[backend])
    ip = cls.from_dict({k: spec[k] for k in QWEN_FIELDS})
    if type(ip).__name__ != HF_CLASSES[backend]:
        raise RuntimeError(f"built {type(ip).__name__}, wanted {HF_CLASSES[backend]}")

    def run(datas: Sequence[bytes]) -> np.ndarray:
        images = [Image.open(io.BytesIO(d)) for d in datas]
        return np.asarray(ip(images=images, return_tensors="np")["pixel_values"])

    return run


def qwen_target(spec: dict[str, Any]) -> Callable[[int, int], tuple[int, int]]:
    f = spec["patch_size"] * spec["merge_size"]

    def target(w: int, h: int) -> tuple[int, int]:
        th, tw = smart_resize(h, w, f, spec["min_pixels"], spec["max_pixels"])
        return tw, th

    return target


def inkling_target(spec: dict[str, Any]) -> Callable[[int, int], tuple[int, int]]:
    return lambda w, h: scaled_dims(w, h, spec.get("rescale_frac", 2.0), spec.get("rescale_cap", 2048))


def floor_decode(datas: Sequence[bytes]) -> list[Image.Image]:
    return [_open(d) for d in datas]


def floor_decode_resize(target: Callable[[int, int], tuple[int, int]], resample: Image.Resampling) -> Run:
    def run(datas: Sequence[bytes]) -> list[Image.Image]:
        out = []
        for d in datas:
            im = _open(d)
            size = target(*im.size)
            out.append(im if size == im.size else im.resize(size, resample, reducing_gap=None))
        return out

    return run


def inkling_numpy(spec: dict[str, Any]) -> Run:
    """Inkling's preprocessing the obvious numpy way: one f32 canvas, normalize, bf16, reshape."""
    from inkling_plugin.patchify import MEAN, STD

    ps = spec.get("patch_size", 40)
    target = inkling_target(spec)
    mean, std = np.asarray(MEAN, np.float32), np.asarray(STD, np.float32)

    def one(data: bytes) -> np.ndarray:
        im = _open(data)
        w, h = target(*im.size)
        if (w, h) != im.size:
            im = im.resize((w, h), Image.Resampling.LANCZOS, reducing_gap=None)
        nph, npw = -(-h // ps), w // ps + 1
        canvas = np.full((nph * ps, npw * ps, 3), np.float32(-1 / 255), dtype=np.float32)
        canvas[:h, :w] = np.asarray(im).astype(np.float32) * np.float32(1 / 255)
        u = ((canvas - mean) / std).view(np.uint32)
        bits = ((u + (np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1)))) >> 16).astype(np.uint16)
        return bits.reshape(nph, ps, npw, ps, 3).transpose(0, 2, 1, 3, 4).reshape(-1, ps, ps, 3)

    return lambda datas: np.concatenate([one(d) for d in datas])


def check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    """Refuse to time a contender whose output differs from the pipeline's."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype or got.tobytes() != want.tobytes():
        raise SystemExit(
            f"{name}: output differs from mm_framework's ({got.dtype} {got.shape} vs {want.dtype} {want.shape})"
        )
