"""Per-family benchmark: each bundled family against its transformers PIL image processor
(the torchvision one for a family that has only that, llama4 and kimi_k25, and for gemma4's second row).

Usage (a venv with the repository and its plugins installed, plus ``transformers==5.24.0``,
which the families' ``[parity]`` extras bring; torch and torchvision for llama4, which is
skipped without them)::

    python bench/families.py            # about three minutes on 2 cores
    MM_FRAMEWORK_KERNELS=portable python bench/families.py   # the numpy/Pillow kernels

One 1280x960 JPEG (the photo of bench/inputs.py), one thread on both sides
(``MM_FRAMEWORK_THREADS=inline``; transformers' PIL processors are single-threaded), each
family's pixel values compared byte for byte with the reference's before anything is
timed, then ours and theirs interleaved over passes; medians are reported.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import sys
from pathlib import Path

os.environ.setdefault("MM_FRAMEWORK_THREADS", "inline")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import transformers  # noqa: E402
from PIL import Image  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework import kernels  # noqa: E402

from inputs import inputs  # noqa: E402
from serving import interleaved  # noqa: E402

PLUGINS = HERE.parent / "plugins"


def _pp(path: Path) -> dict:
    import json

    pp = json.loads(path.read_text())
    return {k: v for k, v in pp.items() if k not in ("image_processor_type", "processor_class")}


def gemma3():
    spec = mmf.preset("gemma3_4b_it")
    ip = transformers.Gemma3ImageProcessorPil(
        size={"height": spec["height"], "width": spec["width"]}, resample=2, image_mean=spec["image_mean"],
        image_std=spec["image_std"],
    )
    return spec, lambda im: ip(im, return_tensors="np")["pixel_values"]


def pixtral():
    spec = mmf.preset("pixtral_12b")
    ip = transformers.PixtralImageProcessorPil.from_dict(
        _pp(PLUGINS / "pixtral_plugin/tests/golden/models/pixtral_12b/preprocessor_config.json"))
    return spec, lambda im: ip([im], return_tensors="np")["pixel_values"][0]


def llava_onevision():
    model = PLUGINS / "llava_onevision_plugin/tests/golden/models/llava-onevision-qwen2-7b-ov-hf"
    spec = mmf.spec_from_model_dir(model)
    ip = transformers.LlavaOnevisionImageProcessorPil(**_pp(model / "preprocessor_config.json"))
    return spec, lambda im: ip([im], return_tensors="np")["pixel_values"][0]


def qwen2_vl():
    spec = mmf.preset("qwen2_vl")
    ip = transformers.Qwen2VLImageProcessorPil.from_dict(
        _pp(HERE.parent / "qwen_vl_plugin/tests/golden/models/qwen2_vl_instruct/preprocessor_config.json"))
    return spec, lambda im: ip(images=[im], return_tensors="np")["pixel_values"]


def paddleocr_vl():
    spec = mmf.preset("paddleocr_vl")
    ip = transformers.PaddleOCRVLImageProcessorPil(
        size={"shortest_edge": spec["min_pixels"], "longest_edge": spec["max_pixels"]})
    return spec, lambda im: ip(images=[im], return_tensors="np")["pixel_values"]


def smolvlm():
    spec = mmf.preset("smolvlm_256m_instruct")
    ip = transformers.Idefics3ImageProcessorPil(
        size={"longest_edge": spec["size_longest_edge"]}, max_image_size={"longest_edge": spec["max_image_size"]},
        resample=1, image_mean=spec["image_mean"], image_std=spec["image_std"],
    )
    return spec, lambda im: ip(im, return_tensors="np")["pixel_values"][0]


def glm4v():
    spec = mmf.preset("glm4_1v_9b_thinking")
    ip = transformers.Glm4vImageProcessorPil(
        size={"shortest_edge": spec["min_pixels"], "longest_edge": spec["max_pixels"]})
    return spec, lambda im: ip(images=[im], return_tensors="np")["pixel_values"]


def deepseek_ocr2():
    spec = mmf.preset("deepseek_ocr2")
    ip = transformers.DeepseekOcr2ImageProcessorPil()  # the preset is its class defaults
    # The item's feature is its local crops; the global view (aux) is compared by the family's tests.
    return spec, lambda im: ip(im, return_tensors="np")["pixel_values_local"]


def minicpmv4_6():
    spec = mmf.preset("minicpm_v_4_6")
    ip = transformers.MiniCPMV4_6ImageProcessorPil()  # the preset is its class defaults
    return spec, lambda im: ip(im, return_tensors="np")["pixel_values"][0]


def gemma4():
    spec = mmf.preset("gemma4")
    ip = transformers.Gemma4ImageProcessorPil()  # the preset is its class defaults
    return spec, lambda im: ip(im, return_tensors="np")["pixel_values"][0]


def gemma4_torchvision():
    import torch

    torch.set_num_threads(1)
    spec = mmf.preset("gemma4_torchvision")
    ip = transformers.Gemma4ImageProcessor()
    return spec, lambda im: ip(im, return_tensors="pt")["pixel_values"][0].numpy()


def llama4():
    import torch  # Llama4ImageProcessor is torchvision-only

    torch.set_num_threads(1)
    spec = mmf.preset("llama4_scout_17b_16e_instruct")
    ip = transformers.Llama4ImageProcessor(size={"height": 336, "width": 336}, max_patches=16, resample=2,
                                           image_mean=spec["image_mean"], image_std=spec["image_std"])
    return spec, lambda im: ip(im, return_tensors="pt")["pixel_values"].float().numpy()


def kimi_k25():
    import torch  # Kimi_K25ImageProcessor is torchvision-only

    torch.set_num_threads(1)
    spec = mmf.preset("kimi_k2_5")
    ip = transformers.Kimi_K25ImageProcessor()  # the preset is its class defaults
    return spec, lambda im: ip(im, return_tensors="pt")["pixel_values"].numpy()


FAMILIES = {"qwen_vl (qwen2_vl)": qwen2_vl, "gemma3": gemma3, "pixtral": pixtral, "llava_onevision": llava_onevision,
            "paddleocr_vl": paddleocr_vl, "smolvlm": smolvlm, "glm4v": glm4v, "deepseek_ocr2": deepseek_ocr2,
            "minicpmv4_6": minicpmv4_6, "gemma4": gemma4, "gemma4 (torchvision)": gemma4_torchvision,
            "llama4 (torchvision)": llama4, "kimi_k25 (torchvision)": kimi_k25}
TORCHVISION_ONLY = {"gemma4 (torchvision)", "llama4 (torchvision)", "kimi_k25 (torchvision)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    data = inputs()["jpeg_1280x960"].images[0]
    print(f"kernels: {kernels.kernel_mode()}; 1280x960 JPEG q90, 1 thread, medians of {args.passes} interleaved passes")
    print("| family | ours ms | transformers ms | ratio |\n|---|---|---|---|")
    for name, make in FAMILIES.items():
        if name in TORCHVISION_ONLY and importlib.util.find_spec("torchvision") is None:
            print(f"| {name} | skipped: needs torch and torchvision | | |")
            continue
        spec, theirs = make()
        pipe = mmf.pipeline_from_spec(spec)
        inp = mmf.MmInput(images=[data], input_ids=[pipe.capabilities.placeholders["image"]])
        ref = np.ascontiguousarray(theirs(Image.open(io.BytesIO(data))), dtype=np.float32)
        feature = pipe.process(inp).items[0].feature
        got = kernels.bf16_widen(feature.array) if feature.dtype == "bf16" else feature.array
        assert got.tobytes() == ref[tuple(slice(0, n) for n in got.shape)].tobytes(), f"{name}: not byte-identical"
        ms = interleaved({"ours": lambda: pipe.process(inp),
                          "theirs": lambda: theirs(Image.open(io.BytesIO(data)))}, args.passes, args.min_time)
        print(f"| {name} | {ms['ours']:.1f} | {ms['theirs']:.1f} | {ms['theirs'] / ms['ours']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
