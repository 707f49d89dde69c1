"""Live parity with transformers' Glm4vProcessor and Glm46VProcessor (PIL backend; no torch needed).

Pixels and grids: the pipeline's feature and ``image_grid_thw`` equal
``Glm4vImageProcessorPil``'s (and ``Glm46VImageProcessorPil``'s) exactly, over the test
images (photos, document pages, tiny, thin and huge images, every Pillow mode) and specs the
goldens do not pin (other pixel bounds, the class defaults, a temporal patch of 1 or 3,
other patch and merge sizes and statistics). Token counts equal the processor's
``get_number_of_image_patches`` over a sweep of sizes without any pixels. Prompts: the
processor's expansion (ids, the ``<|image|>`` runs as offsets, ``mm_token_type_ids``) and
its batched ``pixel_values`` on chat-shaped prompts.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import glm4v_images as images
from . import glm4v_reference as ref
import mm_framework as mmf
from glm4v_plugin.family import target_hw

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

PRESET = mmf.preset("glm4_1v_9b_thinking")
SPECS = {
    "preset": PRESET,
    "glm46v": mmf.preset("glm4_6v"),
    "class_defaults": {**PRESET, "max_pixels": 28 * 28 * 15000},
    "small_bounds": {**PRESET, "min_pixels": 28 * 28, "max_pixels": 200 * 200},
    "large_min": {**PRESET, "min_pixels": 1024 * 1024, "max_pixels": 2048 * 2048},
    "tps1": {**PRESET, "temporal_patch_size": 1},
    "patch16_merge1_tps3": {**PRESET, "patch_size": 16, "merge_size": 1, "temporal_patch_size": 3,
                            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]},
}
# The classes each spec is compared with: GLM-4.6V's preset with GLM-4.6V's classes.
MODEL = {"glm46v": "glm46v"}
ALL = images.ACCEPTED
# The preset takes every image; the other specs a few of each kind.
FEW = ["page_letter_100dpi_850x1100.jpg", "photo_640x480.jpg", "tiny_27x5.png", "thin_tall_20x3000.png",
       "strip_1x150.png", "min_bound_56x56.png", "gray_L_800x1100.png", "rgba_640x480.png", "exif_rot6_1000x400.jpg"]
CASES = [(s, n) for s in SPECS for n in (ALL if s == "preset" else FEW)]


def reference(spec_name, spec, pil_images):
    return ref.image_processor(spec, MODEL.get(spec_name, "glm4v"))(pil_images, return_tensors="np")


def ours(spec, data):
    ids = [1] + [spec["image_token_id"]] * len(data) + [2]
    pipe = mmf.pipeline_from_spec(spec)
    return pipe, pipe.process(mmf.MmInput(images=list(data), input_ids=ids))


def assert_item_equals_reference(spec_name, spec, name):
    data = images.make(name)
    want = reference(spec_name, spec, Image.open(io.BytesIO(data)))
    _, out = ours(spec, [data])
    item = out.items[0]
    got = item.feature.array
    assert got.dtype == np.float32 and got.shape == want["pixel_values"].shape
    assert got.tobytes() == want["pixel_values"].astype(np.float32).tobytes(), \
        f"{name}: {np.count_nonzero(got != want['pixel_values'])} values differ"
    assert item.aux["image_grid_thw"].array.tolist() == want["image_grid_thw"][0].tolist()
    n = int(np.prod(want["image_grid_thw"][0])) // spec["merge_size"] ** 2
    assert [list(o) for o in out.offsets] == [[1, n]]


def assert_batch_equals_reference(spec, names):
    """The torchvision class groups images by shape and reorders them; the model kwargs keep request order."""
    data = [images.make(n) for n in names]
    want = reference("preset", spec, [Image.open(io.BytesIO(d)) for d in data])
    pipe, out = ours(spec, data)
    kwargs = pipe.model_kwargs(out)
    assert kwargs["pixel_values"].tobytes() == want["pixel_values"].tobytes()
    assert kwargs["image_grid_thw"].tolist() == want["image_grid_thw"].tolist()


BATCH = ["page_a4_150dpi_1240x1754.png", "tiny_10x10.png", "page_a4_150dpi_1240x1754.png", "cmyk_640x480.jpg"]


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixel_values_and_grid_equal_the_reference(spec_name, name):
    assert_item_equals_reference(spec_name, SPECS[spec_name], name)


def test_a_batch_equals_the_reference():
    assert_batch_equals_reference(PRESET, BATCH)


SIDES = [1, 2, 5, 13, 14, 27, 28, 29, 41, 42, 43, 55, 56, 57, 79, 80, 111, 112, 113, 999, 1536, 2194, 2195, 2480,
         3508, 5000]


@pytest.mark.parametrize("spec_name", [s for s in SPECS if s != "glm46v"])
def test_token_counts_equal_get_number_of_image_patches(spec_name):
    spec = SPECS[spec_name]
    ip = ref.image_processor(spec)
    pipe = mmf.pipeline_from_spec(spec)
    factor = spec["patch_size"] * spec["merge_size"]
    for w in SIDES:
        for h in SIDES:
            try:
                want = ip.get_number_of_image_patches(h, w) // spec["merge_size"] ** 2
            except ValueError as e:
                assert "aspect ratio" in str(e)
                with pytest.raises(mmf.MediaError, match="aspect ratio"):
                    target_hw(h, w, factor, spec["min_pixels"], spec["max_pixels"], spec["temporal_patch_size"])
                continue
            assert pipe.num_media_tokens(w, h) == want, (w, h)


def test_sizes_equal_smart_resize_over_a_random_sweep():
    """GLM's smart_resize itself, on random sizes and bounds (its float steps: the raise of a
    short side, the temporal factor, the floor and ceil branches)."""
    from transformers.models.glm4v.image_processing_pil_glm4v import smart_resize

    rng = np.random.default_rng(4)
    for _ in range(3000):
        h, w = (int(v) for v in np.exp(rng.uniform(0, np.log(9000), 2)).astype(int) + 1)
        factor = int(rng.choice([14, 28, 32, 56]))
        tps = int(rng.integers(1, 4))
        lo = int(rng.integers(1, 200_000))
        hi = int(rng.integers(max(lo, factor * factor), 20_000_000))
        try:
            want = smart_resize(tps, h, w, temporal_factor=tps, factor=factor, min_pixels=lo, max_pixels=hi)
        except ValueError as e:
            assert "aspect ratio" in str(e)
            with pytest.raises(mmf.MediaError, match="aspect ratio"):
                target_hw(h, w, factor, lo, hi, tps)
            continue
        assert target_hw(h, w, factor, lo, hi, tps) == want, (h, w, factor, lo, hi, tps)


# --------------------------------------------------------------------------- prompts

S, P, E = ref.IMAGE_START, ref.IMAGE_TOKEN, ref.IMAGE_END
IMG = f"{S}{P}{E}"
PROMPTS = [
    f"[gMASK]<sop><|user|>\n{IMG}Describe this image.<|assistant|>\n",
    f"[gMASK]<sop><|user|>\n{IMG}{IMG}Describe this image.<|assistant|>\n",
    f"{P}",
    f"{P}{P}",
    f"<|user|>\n{IMG}\n{IMG}\n{IMG}Describe<|assistant|>",
]


@pytest.mark.parametrize("model", ["glm4v", "glm46v"])
@pytest.mark.parametrize("text", PROMPTS, ids=[f"prompt{i}" for i in range(len(PROMPTS))])
def test_prompt_expansion_equals_the_processor(text, model):
    assert_prompt_equals_processor(PRESET if model == "glm4v" else SPECS["glm46v"], model, text)


def assert_prompt_equals_processor(spec, model, text):
    tok = ref.tokenizer(spec["image_token_id"])
    n = text.count(P)
    names = ["page_letter_100dpi_850x1100.jpg", "tiny_27x5.png", "rgba_640x480.png"][:n]
    data = [images.make(name) for name in names]
    proc = ref.processor(spec, tok, model=model)
    want = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in data], return_tensors="np")
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=data, input_ids=ref.token_ids(tok, text)))
    ids = want["input_ids"][0]
    assert np.asarray(out.input_ids).tolist() == ids.tolist()
    # Adjacent placeholders make one run of ids; each image's share is its grid's count.
    counts = [int(np.prod(g)) // spec["merge_size"] ** 2 for g in want["image_grid_thw"]]
    runs = np.split(np.flatnonzero(ids == spec["image_token_id"]), np.cumsum(counts)[:-1])
    assert [list(o) for o in out.offsets] == [[int(r[0]), int(r[-1])] for r in runs]
    assert np.array_equal(want["mm_token_type_ids"][0], np.asarray(out.input_ids) == spec["image_token_id"])
    kwargs = pipe.model_kwargs(out)
    assert kwargs["pixel_values"].tobytes() == want["pixel_values"].tobytes()
    assert kwargs["image_grid_thw"].tolist() == want["image_grid_thw"].tolist()


def test_placeholder_text_is_the_processors_image_token():
    tok = ref.tokenizer(PRESET["image_token_id"])
    proc = ref.processor(PRESET, tok)
    pipe = mmf.pipeline_from_spec(PRESET)
    assert pipe.capabilities.placeholder_texts == {"image": proc.image_token, "video": proc.video_token}
    assert pipe.capabilities.placeholders == {"image": proc.image_token_id, "video": proc.video_token_id}
    text = PROMPTS[1]
    data = [images.make("photo_640x480.jpg"), images.make("tiny_10x10.png")]
    want = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in data], return_tensors="np")
    out = pipe.process(mmf.MmInput(images=data, text=text), tokenize=lambda t: ref.token_ids(tok, t))
    assert np.asarray(out.input_ids).tolist() == want["input_ids"][0].tolist()
