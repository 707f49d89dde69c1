"""Generate the resize / transform fixtures in ``tests/golden/resize/`` from the real references.

Run in a venv holding the references (torch + torchvision for ``aten_u8``,
``aten_u8_bilinear`` and ``aten_u8_lanczos`` (torchvision >= 0.27), on an AVX2/AVX512 CPU so
that bilinear takes ATen's uint8 path; Pillow 13 for the PIL resamplers, transformers 5.24.0
for ``smart_resize`` and whole-processor ``pixel_values``)::

    /work/tvvenv/bin/python tests/golden/generate_resize.py

Nothing here imports ``mm_framework``: every expected value comes from the reference
libraries. The tests replay the fixtures without torch, regenerating the same source
images with :func:`source_image` (pure numpy integer arithmetic, so it is stable across
numpy versions) and comparing SHA-256 digests of the output bytes (small outputs are
also stored in full, as hex, to make a mismatch readable).
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
from pathlib import Path

import numpy as np

OUT_DIR = Path(__file__).resolve().parent / "resize"
INLINE_MAX_BYTES = 256  # outputs up to this size are stored in full


def source_image(h: int, w: int, seed: int, pattern: str = "noise") -> np.ndarray:
    """Deterministic ``h x w`` RGB u8 test image: the little-endian bytes of splitmix64(i + seed*phi).

    ``noise``: uniform bytes; ``binary``: only 0 and 255 (drives the clip paths);
    ``smooth``: a diagonal gradient plus +-8 of noise (photo-like, ordinary rounding).
    """
    n = h * w * 3
    with np.errstate(over="ignore"):
        x = np.arange(-(-n // 8), dtype=np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) % (1 << 64))
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    v = x.astype("<u8").view(np.uint8)[:n].reshape(h, w, 3)
    if pattern == "noise":
        return v
    if pattern == "binary":
        return (v >> 7) * np.uint8(255)
    if pattern == "smooth":
        ys = (np.arange(h) * 255 // max(1, h - 1)).astype(np.int16)
        xs = (np.arange(w) * 255 // max(1, w - 1)).astype(np.int16)
        out = (v & 15).astype(np.int16)
        out += ((ys[:, None] + xs[None, :]) >> 1)[:, :, None]
        out += np.array([-8, 32, 72], np.int16)
        return (out & 255).astype(np.uint8)
    raise ValueError(f"unknown pattern {pattern!r}")


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


# (name, h, w, out_h, out_w, seed, pattern)
def resize_cases() -> list[tuple[str, int, int, int, int, int, str]]:
    cases = [
        # the extreme downscale that reaches ATen's top precision (docs/architecture.md)
        ("1080x1920_up", 1080, 1920, 1152, 2048, 1, "smooth"),
        ("896sq_up2", 896, 896, 1792, 1792, 2, "noise"),
        ("360x640_up2", 360, 640, 720, 1280, 3, "smooth"),
        ("37x53_up2", 37, 53, 74, 106, 4, "noise"),
        ("100sq_173", 100, 100, 173, 173, 5, "noise"),
        ("1_to_2", 1, 1, 2, 2, 6, "noise"),
        ("256sq_100", 256, 256, 100, 100, 7, "binary"),
        ("identity_720x1280", 720, 1280, 720, 1280, 8, "noise"),
        ("3x500_up2", 3, 500, 6, 1000, 9, "noise"),
        # a 6x8 noise image to 4x5, and the single-pass variants
        ("noise_6x8_4x5", 6, 8, 4, 5, 10, "noise"),
        ("noise_8x6_5x4", 8, 6, 5, 4, 10, "noise"),
        ("noise_6x8_width_only", 6, 8, 6, 5, 10, "noise"),
        ("noise_6x8_height_only", 6, 8, 4, 8, 10, "noise"),
        # extreme downscale: ATen precision reaches 22 on the long axis
        ("extreme_1x1024_1x4", 1, 1024, 1, 4, 11, "noise"),
        ("extreme_binary_2x1024_1x4", 2, 1024, 1, 4, 12, "binary"),
        # typical Qwen-VL smart_resize targets (h x w)
        ("qwen_480x640_476x644", 480, 640, 476, 644, 13, "smooth"),
        ("qwen_960x1280_840x1148", 960, 1280, 840, 1148, 14, "smooth"),
        ("qwen_960x1280_952x1288", 960, 1280, 952, 1288, 15, "noise"),
        ("qwen_3000x4000_840x1148", 3000, 4000, 840, 1148, 16, "smooth"),
        ("qwen_3000x20_2996x28", 3000, 20, 2996, 28, 17, "noise"),
        ("qwen_1080x1920_728x1316", 1080, 1920, 728, 1316, 18, "smooth"),
    ]
    rng = np.random.default_rng(7)
    for i in range(40):
        h, w, th, tw = (int(v) for v in rng.integers(1, 201, 4))
        cases.append((f"random_{i:02d}", h, w, th, tw, 100 + i, ("noise", "binary", "smooth")[i % 3]))
    return cases


def _pil_resize(src: np.ndarray, th: int, tw: int, resample: str) -> np.ndarray:
    from PIL import Image

    filt = {
        "pil_bicubic": Image.Resampling.BICUBIC,
        "pil_lanczos": Image.Resampling.LANCZOS,
        "pil_bilinear": Image.Resampling.BILINEAR,
    }[resample]
    return np.asarray(Image.fromarray(src).resize((tw, th), filt, reducing_gap=None))


def _aten_resize(src: np.ndarray, th: int, tw: int, resample: str) -> np.ndarray:
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.v2 import functional as tvF

    mode = {"aten_u8": InterpolationMode.BICUBIC, "aten_u8_bilinear": InterpolationMode.BILINEAR,
            "aten_u8_lanczos": InterpolationMode.LANCZOS}[resample]
    t = torch.from_numpy(np.ascontiguousarray(src)).permute(2, 0, 1)
    r = tvF.resize(t, [th, tw], interpolation=mode, antialias=True)
    return r.permute(1, 2, 0).contiguous().numpy()


def gen_resize() -> dict:
    out = []
    for name, h, w, th, tw, seed, pattern in resize_cases():
        src = source_image(h, w, seed, pattern)
        for resample in ("pil_bicubic", "pil_lanczos", "pil_bilinear", "aten_u8", "aten_u8_bilinear",
                         "aten_u8_lanczos"):
            aten = resample.startswith("aten_")
            res = _aten_resize(src, th, tw, resample) if aten else _pil_resize(src, th, tw, resample)
            assert res.shape == (th, tw, 3) and res.dtype == np.uint8
            case = {
                "name": name, "h": h, "w": w, "out_h": th, "out_w": tw, "seed": seed, "pattern": pattern,
                "resample": resample, "sha256": digest(res),
            }
            if res.nbytes <= INLINE_MAX_BYTES:
                case["bytes"] = res.tobytes().hex()
            out.append(case)
    return {"cases": out}


# HF whole-processor configs: (name, patch, merge, temporal, min_pixels, max_pixels, mean, std)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HF_CONFIGS = [
    ("qwen2_vl_default", 14, 2, 2, 3136, 1003520, CLIP_MEAN, CLIP_STD),
    ("qwen3_vl_hub", 16, 2, 2, 65536, 16777216, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
]
# (h, w, seed, pattern)
HF_IMAGES = [
    (480, 640, 21, "smooth"),
    (960, 1280, 22, "noise"),
    (501, 333, 23, "noise"),
    (56, 56, 24, "noise"),
    (256, 256, 25, "binary"),
    (10, 10, 26, "noise"),
    (20, 600, 27, "smooth"),
]


def gen_hf_pixel_values() -> dict:
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    out = []
    for cname, ps, m, tps, lo, hi, mean, std in HF_CONFIGS:
        kw = dict(patch_size=ps, merge_size=m, temporal_patch_size=tps, min_pixels=lo, max_pixels=hi,
                  image_mean=list(mean), image_std=list(std))
        procs = {"pil": Qwen2VLImageProcessorPil(**kw), "torchvision": Qwen2VLImageProcessor(**kw)}
        for h, w, seed, pattern in HF_IMAGES:
            im = Image.fromarray(source_image(h, w, seed, pattern))
            for backend, proc in procs.items():
                got = proc(images=[im], return_tensors="np")
                pv = np.asarray(got["pixel_values"], dtype=np.float32)
                grid = [int(v) for v in np.asarray(got["image_grid_thw"]).reshape(-1)]
                out.append({
                    "config": cname, "backend": backend, "h": h, "w": w, "seed": seed, "pattern": pattern,
                    "patch_size": ps, "merge_size": m, "temporal_patch_size": tps,
                    "min_pixels": lo, "max_pixels": hi, "mean": list(mean), "std": list(std),
                    "grid_thw": grid, "shape": list(pv.shape), "sha256": digest(pv),
                })
    return {"cases": out}


def gen_normalize_luts() -> dict:
    """The reference rescale+normalize of every u8 value, through each backend's own ops."""
    import torch
    from transformers.image_transforms import normalize, rescale
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    v = np.arange(256, dtype=np.uint8)
    chw = np.stack([v, v, v])[:, None, :]  # (3, 1, 256): channel c sees every value
    out = {}
    for name, mean, std in (("clip", CLIP_MEAN, CLIP_STD), ("half", (0.5,) * 3, (0.5,) * 3)):
        pil = normalize(rescale(chw, 1 / 255, input_data_format="channels_first"), list(mean), list(std),
                        input_data_format="channels_first")
        # The processor hands mean/std over as tuples (the fuse step is lru_cached).
        tv = Qwen2VLImageProcessor().rescale_and_normalize(torch.from_numpy(chw), True, 1 / 255, True, mean, std)
        out[name] = {
            "mean": list(mean), "std": list(std),
            "pil": np.asarray(pil, dtype=np.float32).reshape(3, 256).tobytes().hex(),
            "fused": tv.numpy().astype(np.float32).reshape(3, 256).tobytes().hex(),
        }
    return out


def gen_smart_resize() -> dict:
    """HF ``smart_resize`` on a sweep of sizes, including thin, tiny and near-200 ratios."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    sizes = {(1365, 2048), (100, 100), (3000, 4000), (20, 20), (4000, 48), (10, 1000), (14, 2000),
             (10, 2000), (70, 98), (3000, 20), (1080, 1920), (10, 10), (1, 200), (1, 201), (13, 2600),
             (15, 3000), (14, 14), (1, 1), (2, 1), (28, 28), (42, 42), (48, 48), (80, 80)}
    rng = np.random.default_rng(99)
    for _ in range(150):
        sizes.add(tuple(int(v) for v in rng.integers(1, 5000, 2)))
    for _ in range(80):
        h = int(rng.integers(1, 60))
        sizes.add((h, min(h * 200, int(rng.integers(h, h * 200 + 1)))))
    for _ in range(40):
        sizes.add(tuple(int(v) for v in rng.integers(1, 100, 2)))
    params = [(28, 3136, 1003520), (28, 3136, 12845056), (32, 65536, 16777216), (32, 4, 1 << 30),
              (28, 3136, 3136), (28, 0, 1003520), (14, 784, 50176)]
    rows = []
    for hh, ww in sorted(sizes | {(w, h) for h, w in sizes}):
        for f, lo, hi in params:
            try:
                rows.append([hh, ww, f, lo, hi, *smart_resize(hh, ww, f, lo, hi)])
            except ValueError as e:
                rows.append([hh, ww, f, lo, hi, str(e)])
    return {"rows": rows}


def _dump(doc: dict) -> str:
    """Indented JSON with every innermost list or object of scalars on one line (compact, diffable)."""
    text = json.dumps(doc, indent=1)

    def join(m: re.Match[str]) -> str:
        return m.group(1) + re.sub(r",\n\s*", ", ", m.group(2)) + m.group(3)

    return re.sub(r"([\[{])\n\s*([^\[\]{}]*?)\n\s*([\]}])", join, text)


def versions() -> dict:
    import PIL

    vers = {"python": platform.python_version(), "numpy": np.__version__, "pillow": PIL.__version__}
    for mod in ("torch", "torchvision", "transformers"):
        try:
            vers[mod] = __import__(mod).__version__
        except ImportError:
            pass
    try:
        import torch

        vers["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    except ImportError:
        pass
    return vers


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    vers = versions()
    if not vers["pillow"].startswith("13."):
        sys.exit(f"Pillow 13 is the reference (bicubic pass order), found {vers['pillow']}")
    if vers.get("torch_cpu_capability") not in ("AVX2", "AVX512"):
        sys.exit(f"torchvision resizes uint8 bilinear through float32 on this CPU ({vers.get('torch_cpu_capability')})")
    parts = {
        "resize.json": gen_resize,
        "hf_pixel_values.json": gen_hf_pixel_values,
        "normalize_luts.json": gen_normalize_luts,
        "smart_resize.json": gen_smart_resize,
    }
    for fname, fn in parts.items():
        doc = {"generator": "tests/golden/generate_resize.py", "versions": vers, **fn()}
        (OUT_DIR / fname).write_text(_dump(doc) + "\n")
        print(f"wrote {OUT_DIR / fname}")


if __name__ == "__main__":
    main()
