"""Live parity with transformers' Gemma4Processor (PIL backend; no torch needed).

Runs wherever transformers is importable. Sizes: our target size against the reference's
``get_aspect_ratio_preserving_size`` and our token counts against the processor's
``_get_num_multimodal_tokens`` over a sweep of sizes and every budget. Pixels: the
pipeline's model kwargs and ``mm_hf_image_outputs`` must equal ``Gemma4ImageProcessorPil``'s
outputs (every key) exactly, over the golden images and specs the goldens do not pin.
Prompts: the processor's expansion of a multi-image prompt under another budget.
``mm_framework.hf.accelerate`` serves the processor's calls with the same bytes (both backends
where torchvision imports) and hands back the calls it does not mirror.
"""

from __future__ import annotations

import importlib.util
import io

import numpy as np
import pytest

from . import gemma4_images
from .gemma4_reference import IMAGE, image_processor, processor
import mm_framework as mmf
from gemma4_plugin import Gemma4Family
from gemma4_plugin.sizing import target_size
from gemma4_plugin.spec import SOFT_TOKEN_BUDGETS
from mm_framework import hf

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")
reference_sizing = pytest.importorskip("transformers.models.gemma4.image_processing_pil_gemma4")

PRESET = mmf.preset("gemma4")
KEYS = ["pixel_values", "image_position_ids", "num_soft_tokens_per_image"]


def reference_outputs(spec, images):
    """transformers' image processor outputs of ``images`` on the spec's backend."""
    return image_processor(spec)(images, return_tensors="np")


def family(spec) -> Gemma4Family:
    return Gemma4Family({k: v for k, v in spec.items() if k != "family"})


def ours(spec, datas):
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=datas, input_ids=[2] + [spec["image_token_id"]] * len(datas) + [3]))
    return pipe, out


def assert_outputs_equal(want, got):
    for key in KEYS:
        a, b = np.asarray(want[key]), np.asarray(got[key])
        assert a.dtype == b.dtype and a.shape == b.shape, (key, a.dtype, b.dtype, a.shape, b.shape)
        assert a.tobytes() == b.tobytes(), f"{key}: {np.count_nonzero(a != b)} values differ"


SPECS = {
    "preset": PRESET,
    "budget_70_lanczos": {**PRESET, "max_soft_tokens": 70, "resample": "pil_lanczos"},
    "budget_1120_bilinear_normalized": {**PRESET, "max_soft_tokens": 1120, "resample": "pil_bilinear",
                                        "do_normalize": True, "image_mean": [0.5, 0.4, 0.3],
                                        "image_std": [0.2, 0.3, 0.4]},
    "patch_8_pool_2_unrescaled": {**PRESET, "patch_size": 8, "pooling_kernel_size": 2, "max_soft_tokens": 140,
                                  "do_rescale": False, "do_normalize": True, "image_mean": [127.5] * 3,
                                  "image_std": [127.5] * 3},
}
IMAGES = [n for n in gemma4_images.IMAGES if n != "png16_gray_640x480.png" and "4000x3000" not in n]
CASES = [(s, n) for s in SPECS for n in IMAGES]


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_image_outputs_equal_the_reference(spec_name, name):
    spec = SPECS[spec_name]
    data = gemma4_images.make(name)
    want = reference_outputs(spec, Image.open(io.BytesIO(data)))
    pipe, out = ours(spec, [data])
    assert_outputs_equal(want, family(spec).mm_hf_image_outputs(out.items))
    assert sorted(pipe.model_kwargs(out)) == ["image_position_ids", "pixel_values"]


def test_a_batch_equals_the_reference():
    names = ["wide_1000x300.jpg", "rgb_640x480.jpg", "line_1x700.png", "tall_400x2000.jpg"]
    datas = [gemma4_images.make(n) for n in names]
    want = reference_outputs(PRESET, [Image.open(io.BytesIO(d)) for d in datas])
    pipe, out = ours(PRESET, datas)
    assert_outputs_equal(want, family(PRESET).mm_hf_image_outputs(out.items))
    kwargs = pipe.model_kwargs(out)
    for key in ("pixel_values", "image_position_ids"):
        assert kwargs[key].tobytes() == np.asarray(want[key]).tobytes()


def _sizes() -> list[tuple[int, int]]:
    rng = np.random.default_rng(4)
    sweep = [(int(w), int(h)) for w, h in rng.integers(1, 5000, (300, 2))]
    sweep += [(int(w), 1) for w in rng.integers(1, 20000, 40)] + [(1, int(h)) for h in rng.integers(1, 20000, 40)]
    return sweep + [(w, h) for w in (1, 2, 47, 48, 49, 768, 769) for h in (1, 2, 47, 48, 49, 768, 769)]


@pytest.mark.parametrize("budget", SOFT_TOKEN_BUDGETS)
def test_target_sizes_and_counts_equal_the_reference(budget):
    spec = {**PRESET, "max_soft_tokens": budget}
    proc, fam = processor(spec), family(spec)
    sizes = _sizes()
    want = proc._get_num_multimodal_tokens(image_sizes=[(h, w) for w, h in sizes], max_soft_tokens=budget)
    for (w, h), tokens in zip(sizes, want["num_image_tokens"]):
        ref = reference_sizing.get_aspect_ratio_preserving_size(h, w, 16, budget * 9, 3)
        assert target_size(h, w, 16, budget * 9, 3) == ref, (w, h)
        plan = fam.mm_plan_item(mmf.plugin.ImageHeader(width=w, height=h))
        assert plan.size == (ref[1], ref[0]) and fam.soft_tokens(plan.geometry) == tokens, (w, h)


def test_prompt_expansion_equals_the_processor():
    spec = {**PRESET, "max_soft_tokens": 70}
    names = ["rgb_1280x960.jpg", "thin_fallback_6000x20.png", "tiny_10x10.png"]
    datas = [gemma4_images.make(n) for n in names]
    proc = processor(spec)
    text = f"<bos> Compare {IMAGE} and {IMAGE} x {IMAGE} ."
    want = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in datas], return_tensors="np",
                add_special_tokens=False, max_soft_tokens=70)
    prompt = [int(i) for i in proc.tokenizer(text, add_special_tokens=False)["input_ids"]]
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=datas, input_ids=prompt))
    assert np.asarray(out.input_ids).tolist() == np.asarray(want["input_ids"])[0].tolist()
    counted = pipe.count_tokens(mmf.MmInput(images=datas, input_ids=prompt))
    assert np.array_equal(counted.input_ids, out.input_ids) and counted.offsets == out.offsets
    mask = (np.asarray(out.input_ids) == spec["image_token_id"]).astype(np.int64)
    assert mask.tolist() == np.asarray(want["mm_token_type_ids"])[0].tolist()


BACKENDS = {"pil": "Gemma4ImageProcessorPil"}
if importlib.util.find_spec("torchvision") is not None:
    BACKENDS["torchvision"] = "Gemma4ImageProcessor"
SERVED = [{}, {"max_soft_tokens": 70}, {"max_soft_tokens": 1120}, {"do_rescale": True, "do_normalize": False}]
DECLINED = [({"do_normalize": True}, "do_rescale and do_normalize on where the processor has them off"),
            ({"do_rescale": False}, "uint8 patches: family 'gemma4' has no pixels='u8'"),
            ({"patch_size": 8}, "option 'patch_size'")]


def _call(backend, call, strict):
    names = ["rgb_1280x960.jpg", "wide_1000x300.jpg", "rgba_640x480.png"]
    images = lambda: [Image.open(io.BytesIO(gemma4_images.make(n))) for n in names]  # noqa: E731
    spec = {**PRESET, "backend": backend}
    ref, acc = image_processor(spec), hf.accelerate(image_processor(spec), strict=strict)
    want, got = ref(images(), return_tensors="np", **call), acc(images(), return_tensors="np", **call)
    assert list(want.keys()) == list(got.keys()) == KEYS
    for key in KEYS:
        a, b = want[key], got[key]
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), key


@pytest.fixture
def _fresh_stats():
    hf.reset_stats()
    yield
    hf.reset_stats()


@pytest.mark.usefixtures("_fresh_stats")
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("call", SERVED, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_accelerate_serves_the_processor(backend, call):
    _call(backend, call, strict=True)
    assert hf.stats() == {"served": {BACKENDS[backend]: 1}, "fallbacks": {}}


@pytest.mark.usefixtures("_fresh_stats")
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize(("call", "why"), DECLINED, ids=[next(iter(c)) for c, _ in DECLINED])
def test_accelerate_hands_other_calls_back(backend, call, why):
    _call(backend, call, strict=False)
    assert hf.stats() == {"served": {}, "fallbacks": {f"{BACKENDS[backend]}: {why}": 1}}
