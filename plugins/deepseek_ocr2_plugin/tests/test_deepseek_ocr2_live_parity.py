"""Live parity with transformers' DeepseekOcr2Processor (PIL backend; no torch needed).

Pixels: the pipeline's ``pixel_values``, ``num_local_patches`` and ``pixel_values_local``
must equal ``DeepseekOcr2ImageProcessorPil``'s exactly, over the image table, a sweep of
noise sizes from 1x1 to strips (refusals included: an image the reference cannot process
must be refused too), and specs the preset does not pin (crops off, other crop counts,
tiles and global sides, other filters and fills, rescale/normalize switches). Prompts: the
processor's text replacement and tokenization (a tokenizer built from the preset's ids,
tests/deepseek_ocr2_reference.py): ids, offsets (the first and last ``<image>`` of each
item) and token counts.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import deepseek_ocr2_images, deepseek_ocr2_reference
import mm_framework as mmf

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

PRESET = mmf.preset("deepseek_ocr2")
SPECS = {
    "preset": PRESET,
    "no_crop": {**PRESET, "crop_to_patches": False},
    "crops_1_9": {**PRESET, "min_patches": 1, "max_patches": 9},
    "small_lanczos_fill": {**PRESET, "size": 320, "tile_size": 256, "resample": "pil_lanczos",
                           "background_color": [0, 255, 10], "min_patches": 3, "max_patches": 4},
    "bilinear_unrescaled_clip": {**PRESET, "size": 640, "tile_size": 512, "resample": "pil_bilinear",
                                 "do_rescale": False, "image_mean": [0.48145466, 0.4578275, 0.40821073],
                                 "image_std": [0.26862954, 0.26130258, 0.27577711]},
    "unnormalized_one_tile": {**PRESET, "do_normalize": False, "min_patches": 1, "max_patches": 1},
}
IMAGES = [n for n in deepseek_ocr2_images.IMAGES if n not in ("png16_gray_640x480.png", "strip_3000x1.png")]
# The preset sees the whole table; the other specs a few of each kind (the big ones are slow).
SOME = ["tiny_10x10.png", "above_tile_769x769.png", "odd_777x333.png", "tall_400x2000.jpg", "thin_wide_3000x20.png",
        "strip_1x900.png", "gray_L_800x600.png", "rgba_640x480.png", "palette_P_trns_320x240.png",
        "exif_rot6_1000x400.jpg"]
CASES = [(s, n) for s in SPECS for n in (IMAGES if s == "preset" else SOME)]
KEYS = ("pixel_values", "num_local_patches", "pixel_values_local")


def reference(spec, images, **kwargs):
    ip = deepseek_ocr2_reference.image_processor(spec)
    return ip([Image.open(io.BytesIO(d)) if isinstance(d, bytes) else d for d in images], return_tensors="np",
              **kwargs)


def ours(spec, images):
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, input_ids=[spec["image_token_id"]] * len(images)))
    return pipe.model_kwargs(out)


def assert_same(got, want, what):
    assert [k for k in KEYS if k in got] == [k for k in KEYS if k in want], what
    for key in (k for k in KEYS if k in want):
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, (what, key)
        assert np.array_equal(got[key], want[key]), f"{what}: {key}: {np.count_nonzero(got[key] != want[key])} differ"


def check(spec, data, image, what):
    """Our pixels of encoded ``data`` equal the reference's on the same image (a ``PIL.Image``
    or the bytes), or both refuse it: transformers with a ValueError on an empty resize."""
    try:
        want = reference(spec, [image])
    except ValueError:
        with pytest.raises(mmf.MediaError, match="global view rounds to an empty"):
            ours(spec, [data])
        return
    assert_same(ours(spec, [data]), want, what)


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    data = deepseek_ocr2_images.make(name)
    check(SPECS[spec_name], data, data, name)


def test_images_of_one_prompt_concatenate_like_the_reference():
    names = ("rgb_1280x960.jpg", "tiny_10x10.png", "wide_1000x300.jpg", "above_tile_769x769.png")
    datas = [deepseek_ocr2_images.make(n) for n in names]
    assert_same(ours(PRESET, datas), reference(PRESET, datas), "four images")


SWEEP = {**PRESET, "size": 96, "tile_size": 32, "patch_size": 8, "downsample_ratio": 2}
SIDES = [1, 2, 3, 5, 31, 32, 33, 47, 64, 95, 96, 97, 191, 400]


@pytest.mark.parametrize("crop", [True, False])
def test_size_sweep_equals_the_reference(crop):
    """Noise images of every pair of sides: pixels, or the same refusal."""
    spec = {**SWEEP, "crop_to_patches": crop}
    rng = np.random.default_rng(7)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            check(spec, buf.getvalue(), img, f"{w}x{h}")


# --------------------------------------------------------------------------- prompts

IMG = "<image>"
PROMPTS = [
    f"{IMG}\n<|grounding|>Convert the document to markdown .",
    f"{IMG}{IMG}compare them .",
    f"{IMG}",
    f"\n{IMG}\n\n{IMG} and {IMG}\n",
]
PROMPT_IMAGES = ["rgb_1280x960.jpg", "tiny_10x10.png", "thin_tall_20x3000.png"]
OPTIONS = [{}, {"crop_to_patches": False}, {"min_patches": 1, "max_patches": 9}, {"max_patches": 2}]


@pytest.fixture(scope="module")
def processor():
    return deepseek_ocr2_reference.processor(PRESET)


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
@pytest.mark.parametrize("text", PROMPTS, ids=[f"prompt{i}" for i in range(len(PROMPTS))])
def test_prompt_expansion_equals_the_processor(processor, text, options):
    n = text.count(IMG)
    images = [deepseek_ocr2_images.make(name) for name in PROMPT_IMAGES[:n]]
    ref = processor(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np",
                    add_special_tokens=False, **options)
    tokenize = lambda t: processor.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    pipe = mmf.pipeline_from_spec(PRESET)
    out = pipe.process(mmf.MmInput(images=images, text=text, options=options), tokenize=tokenize)
    want = ref["input_ids"][0]
    assert np.asarray(out.input_ids).tolist() == want.tolist()
    # Each item's <image> run: the prompt's placeholder, shifted by the runs before it.
    src = np.flatnonzero(np.asarray(tokenize(text)) == PRESET["image_token_id"])
    spans, shift = [], 0
    for i, k in enumerate(src):
        n_tokens = 256 + 144 * int(ref["num_local_patches"][i]) + 1
        spans.append((int(k) + shift, int(k) + shift + n_tokens - 1))
        shift += n_tokens - 1
    assert [tuple(o) for o in out.offsets] == spans
    assert_same(pipe.model_kwargs(out), ref, text)
    assert processor.image_token == pipe.capabilities.placeholder_texts["image"]


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_plans_equal_the_processors_crop_grids(options):
    """The plan (from the size alone) has the grid of the image processor's own
    ``get_optimal_tiled_canvas``, and the token count is the processor's replacement; a
    size whose global view is empty is refused."""
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import get_optimal_tiled_canvas

    spec = {**PRESET, **options}
    pipe = mmf.pipeline_from_spec(spec)
    tile = spec["tile_size"]
    side = spec["size"] if spec["crop_to_patches"] else tile
    for w in (1, 10, 767, 768, 769, 1024, 1600, 2047, 3000, 5000):
        for h in (2, 10, 300, 768, 769, 1000, 3000):
            if min(round(n * (side / max(w, h))) for n in (w, h)) < 1:  # the reference's empty resize
                with pytest.raises(mmf.MediaError, match="global view rounds to an empty"):
                    pipe.plan_item(w, h)
                continue
            grid = (get_optimal_tiled_canvas((h, w), (tile, tile), spec["min_patches"], spec["max_patches"])
                    if spec["crop_to_patches"] and max(w, h) > tile else (0, 0))
            plan = pipe.plan_item(w, h)
            assert (plan.geometry.cols, plan.geometry.rows) == grid, (w, h)
            assert pipe.num_media_tokens(w, h) == 256 + 144 * grid[0] * grid[1] + 1, (w, h)
