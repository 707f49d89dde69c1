"""Live parity with transformers' MiniCPMV4_6Processor and MiniCPMV4_6ImageProcessorPil (PIL
backend; no torch needed).

Pixels: the pipeline's ``pixel_values`` and ``target_sizes`` must equal the image
processor's exactly, over the image table, a sweep of noise sizes from 1x1 to long strips,
and specs the presets do not pin (no slicing, other slice caps and budgets, other patch
sizes, other filters, rescale/normalize switches). Prompts: the processor's text
replacement and tokenization (a tokenizer built from the preset's ids,
tests/minicpmv4_6_reference.py): ids, offsets (first to last ``<|image_pad|>`` of each item)
and token counts from the size alone.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import minicpmv4_6_images, minicpmv4_6_reference
import mm_framework as mmf

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

PRESET = mmf.preset("minicpm_v_4_6")
SPECS = {
    "preset": PRESET,
    "preset_4x": mmf.preset("minicpm_v_4_6_4x"),
    "no_slice": {**PRESET, "slice_mode": False},
    "four_slices_small_budget": {**PRESET, "max_slice_nums": 4, "scale_resolution": 224},
    "thirty_six_slices": {**PRESET, "max_slice_nums": 36},
    "patch16_bilinear_unnormalized": {**PRESET, "patch_size": 16, "resample": "pil_bilinear", "do_normalize": False},
    "lanczos_unrescaled_clip": {**PRESET, "resample": "pil_lanczos", "do_rescale": False,
                                "image_mean": [0.48145466, 0.4578275, 0.40821073],
                                "image_std": [0.26862954, 0.26130258, 0.27577711]},
}
IMAGES = [n for n in minicpmv4_6_images.IMAGES if n != "png16_gray_640x480.png"]
SOME = ["tiny_10x10.png", "over_449x448.png", "odd_777x333.png", "tall_400x2000.jpg", "thin_wide_3000x20.png",
        "rgb_1280x960.jpg", "rgba_640x480.png", "palette_P_trns_320x240.png", "exif_rot6_1000x400.jpg"]
CASES = [(s, n) for s in SPECS for n in (IMAGES if s == "preset" else SOME)]
KEYS = ("pixel_values", "target_sizes")


def reference(spec, images, **kwargs):
    ip = minicpmv4_6_reference.image_processor(spec)
    return ip([Image.open(io.BytesIO(d)) if isinstance(d, bytes) else d for d in images], return_tensors="np",
              **kwargs)


def ours(spec, images):
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, input_ids=[spec["image_token_id"]] * len(images)))
    return pipe.model_kwargs(out)


def assert_same(got, want, what):
    assert sorted(got) == sorted(KEYS), what
    for key in KEYS:
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, (what, key)
        assert np.array_equal(got[key], want[key]), f"{what}: {key}: {np.count_nonzero(got[key] != want[key])} differ"


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = SPECS[spec_name]
    data = minicpmv4_6_images.make(name)
    assert_same(ours(spec, [data]), reference(spec, [data]), name)


def test_images_of_one_prompt_concatenate_like_the_reference():
    datas = [minicpmv4_6_images.make(n) for n in ("budget_448x448.png", "wide_1000x300.jpg", "tiny_10x10.png")]
    assert_same(ours(PRESET, datas), reference(PRESET, datas), "three images")


SWEEP = {**PRESET, "scale_resolution": 64, "max_slice_nums": 6}
SIDES = [1, 2, 3, 13, 14, 15, 55, 56, 57, 63, 64, 65, 90, 127, 128, 129, 200, 301, 1000]


@pytest.mark.parametrize("mode", ["16x", "4x"])
def test_size_sweep_equals_the_reference(mode):
    spec = {**SWEEP, "downsample_mode": mode}
    rng = np.random.default_rng(7)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            assert_same(ours(spec, [buf.getvalue()]), reference(spec, [img]), f"{w}x{h}")


# --------------------------------------------------------------------------- prompts

IMG = minicpmv4_6_reference.IMAGE_TOKEN
PROMPTS = [
    f"User: What is in this image? {IMG} \nAssistant:",
    f"User:{IMG}{IMG}compare them.\nAssistant:",
    f"{IMG}",
    f"\n{IMG}\n\n{IMG} and {IMG}\n",
]
PROMPT_IMAGES = ["rgb_1280x960.jpg", "budget_448x448.png", "thin_tall_20x3000.png"]
PROMPT_SPECS = ["preset", "preset_4x", "no_slice", "thirty_six_slices"]


@pytest.fixture(scope="module", params=PROMPT_SPECS)
def processor(request):
    spec = SPECS[request.param]
    return spec, minicpmv4_6_reference.processor(spec)


def _spans(ids: np.ndarray, spec, n: int) -> list[tuple[int, int]]:
    """Each item's first and last pad (the offsets are inclusive); items are delimited by their
    <image> markers."""
    pad = ids == spec["image_token_id"]
    starts = np.flatnonzero(ids == spec["image_start_token_id"]).tolist() + [len(ids)]
    spans = []
    for a, b in zip(starts[:n], starts[1:n + 1]):
        where = np.flatnonzero(pad[a:b]) + a
        spans.append((int(where[0]), int(where[-1])))
    return spans


@pytest.mark.parametrize("use_image_id", [True, False])
@pytest.mark.parametrize("text", PROMPTS, ids=[f"prompt{i}" for i in range(len(PROMPTS))])
def test_prompt_expansion_equals_the_processor(processor, text, use_image_id):
    spec, proc = processor
    n = text.count(IMG)
    images = [minicpmv4_6_images.make(name) for name in PROMPT_IMAGES[:n]]
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np",
               use_image_id=use_image_id)
    tokenize = lambda t: proc.tokenizer(t)["input_ids"]  # noqa: E731
    pipe = mmf.pipeline_from_spec({**spec, "use_image_id": use_image_id})
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=tokenize)
    want = ref["input_ids"][0]
    assert np.asarray(out.input_ids).tolist() == want.tolist()
    assert [tuple(o) for o in out.offsets] == _spans(want, spec, n)
    assert_same(pipe.model_kwargs(out), ref, text)
    assert proc.image_token == pipe.capabilities.placeholder_texts["image"]


def test_image_ids_past_nine_take_one_token_per_digit(processor):
    spec, proc = processor
    text = IMG * 12
    images = [minicpmv4_6_images.make("tiny_10x10.png")] * 12
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np")
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=lambda t: proc.tokenizer(t)["input_ids"])
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()


def test_token_counts_from_the_size_equal_the_processor(processor):
    """``num_media_tokens`` (from the plan, no pixels) is the item's span in the processor's
    expansion, over sizes across grid shapes."""
    spec, proc = processor
    pipe = mmf.pipeline_from_spec(spec)
    rng = np.random.default_rng(3)
    for w, h in [(1, 1), (10, 500), (448, 448), (449, 448), (640, 480), (1280, 960), (3000, 20), (800, 3000),
                 (4000, 3000), (2000, 2100)]:
        img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        ids = proc(text=[IMG], images=[img], return_tensors="np")["input_ids"][0]
        (a, b), = _spans(ids, spec, 1)
        assert pipe.num_media_tokens(w, h) == b - a + 1, (w, h)
