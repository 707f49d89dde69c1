"""Live parity with transformers' SmolVLMProcessor and Idefics3Processor (PIL backend; no
torch needed).

Pixels: the pipeline's ``pixel_values`` and ``pixel_attention_mask`` must equal the
``*ImageProcessorPil``'s exactly, over the image table, a sweep of noise sizes from 1x1 to
strips and 4k sides (refusals included: an image the reference cannot process must be
refused too), and specs the presets do not pin (splitting off, no resize, other filters,
rescale/normalize switches, other tiles). Prompts: the processors' text replacement and
tokenization (a tokenizer built from the preset's ids, tests/smolvlm_reference.py):
ids and offsets (first to last ``<image>`` of each item), and token counts.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import smolvlm_images, smolvlm_reference
import mm_framework as mmf

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

SMOL, IDEFICS = mmf.preset("smolvlm2_500m_video_instruct"), mmf.preset("idefics3_8b_llama3")
SPECS = {
    "smolvlm": SMOL,
    "idefics3": IDEFICS,
    # SmolVLM (v1): Idefics3's classes at SmolVLM's sizes and ids.
    "smolvlm_256m": mmf.preset("smolvlm_256m_instruct"),
    "smolvlm_no_split": {**SMOL, "do_image_splitting": False},
    "idefics3_no_split": {**IDEFICS, "do_image_splitting": False},
    "small_tiles_bicubic_unnormalized": {**SMOL, "size_longest_edge": 300, "max_image_size": 100, "image_seq_len": 4,
                                         "resample": "pil_bicubic", "do_normalize": False},
    "bilinear_unrescaled_clip": {**IDEFICS, "size_longest_edge": 500, "max_image_size": 128, "image_seq_len": 16,
                                 "resample": "pil_bilinear", "do_rescale": False,
                                 "image_mean": [0.48145466, 0.4578275, 0.40821073],
                                 "image_std": [0.26862954, 0.26130258, 0.27577711]},
    "no_resize": {**SMOL, "do_resize": False, "image_seq_len": 16},
}
IMAGES = [n for n in smolvlm_images.IMAGES if n != "png16_gray_640x480.png"]
# The presets see the whole table; the other specs a few of each kind (the big ones are slow).
SOME = ["tiny_10x10.png", "tile_512x512.png", "odd_777x333.png", "tall_400x2000.jpg", "thin_wide_3000x20.png",
        "gray_L_800x600.png", "rgba_640x480.png", "palette_P_trns_320x240.png", "exif_rot6_1000x400.jpg"]
CASES = [(s, n) for s in SPECS for n in (IMAGES if s in ("smolvlm", "idefics3") else SOME)]


def reference(spec, images, **kwargs):
    ip = smolvlm_reference.image_processor(spec)
    return ip([Image.open(io.BytesIO(d)) if isinstance(d, bytes) else d for d in images], return_tensors="np",
              **kwargs)


def ours(spec, images):
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, input_ids=[spec["image_token_id"]] * len(images)))
    return pipe.model_kwargs(out)


def assert_same(got, want, what):
    for key in ("pixel_values", "pixel_attention_mask"):
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, (what, key)
        assert np.array_equal(got[key], want[key]), f"{what}: {key}: {np.count_nonzero(got[key] != want[key])} differ"


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = SPECS[spec_name]
    data = smolvlm_images.make(name)
    assert_same(ours(spec, [data]), reference(spec, [data]), name)


def test_images_of_one_prompt_concatenate_like_the_reference():
    datas = [smolvlm_images.make(n) for n in ("tile_512x512.png", "wide_1000x300.jpg", "tiny_10x10.png")]
    assert_same(ours(SMOL, datas), reference(SMOL, datas), "three images")


SWEEP = {**SMOL, "size_longest_edge": 96, "max_image_size": 32, "image_seq_len": 4}
SIDES = [1, 2, 3, 5, 31, 32, 33, 47, 64, 95, 96, 97, 191, 1000, 4097]


@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("resize", [True, False])
def test_size_sweep_equals_the_reference(split, resize):
    """Noise images of every pair of sides: pixels, or the same refusal."""
    spec = {**SWEEP, "do_image_splitting": split, "do_resize": resize}
    rng = np.random.default_rng(7)
    for w in SIDES:
        for h in SIDES:
            if not resize and max(w, h) > 191:
                continue  # grids beyond the 6x6 markers (refused, test_smolvlm_bad_input.py)
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            try:
                want = reference(spec, [img])
            except ValueError:
                with pytest.raises(mmf.InvalidInputError):
                    ours(spec, [buf.getvalue()])
                continue
            assert_same(ours(spec, [buf.getvalue()]), want, f"{w}x{h}")


# --------------------------------------------------------------------------- prompts

IMG = "<image>"
PROMPTS = [
    f"User: What is in this image? {IMG} <end_of_utterance>\nAssistant:",
    f"User:{IMG}{IMG}compare them.<end_of_utterance>\nAssistant:",
    f"{IMG}",
    f"\n{IMG}\n\n{IMG} and {IMG}\n",
]
PROMPT_IMAGES = ["rgb_640x480.jpg", "tile_512x512.png", "thin_tall_20x3000.png"]


@pytest.fixture(scope="module", params=["smolvlm", "idefics3", "smolvlm_256m"])
def processor(request):
    spec = SPECS[request.param]
    return spec, smolvlm_reference.processor(spec)


@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("text", PROMPTS, ids=[f"prompt{i}" for i in range(len(PROMPTS))])
def test_prompt_expansion_equals_the_processor(processor, text, split):
    spec, proc = processor
    n = text.count(IMG)
    images = [smolvlm_images.make(name) for name in PROMPT_IMAGES[:n]]
    ref = proc(text=[text], images=[[Image.open(io.BytesIO(d)) for d in images]], return_tensors="np",
               add_special_tokens=False, do_image_splitting=split)
    tokenize = lambda t: proc.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    pipe = mmf.pipeline_from_spec({**spec, "do_image_splitting": split})
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=tokenize)
    want = ref["input_ids"][0]
    assert np.asarray(out.input_ids).tolist() == want.tolist()
    # Each item ends with its global image's last <image> and starts at the first <image>
    # after the previous item.
    image = np.flatnonzero(want == spec["image_token_id"])
    ends = np.flatnonzero(want == spec["global_image_token_id"]) + spec["image_seq_len"]
    starts = [int(image[0])] + [int(image[np.searchsorted(image, e, side="right")]) for e in ends[:-1]]
    assert [tuple(o) for o in out.offsets] == list(zip(starts, ends.tolist()))
    assert_same(pipe.model_kwargs(out), ref, text)
    assert proc.image_token == pipe.capabilities.placeholder_texts["image"]


@pytest.mark.parametrize("split", [True, False])
def test_plans_equal_the_processors_patch_counts(processor, split):
    """The plan (from the size alone) has the grid of the image processor's own
    ``get_number_of_image_patches``, and the token count is that grid's expansion."""
    spec, proc = processor
    pipe = mmf.pipeline_from_spec({**spec, "do_image_splitting": split})
    tile, seq = spec["max_image_size"], spec["image_seq_len"]
    for w in (1, 10, 511, 512, 513, 640, 1000, 2047, 3000, 5000):
        for h in (1, 10, 300, 512, 700, 1000, 3000):
            patches, rows, cols = proc.image_processor.get_number_of_image_patches(h, w, {"do_image_splitting": split})
            grid = pipe.plan_item(w, h).geometry
            assert (grid.rows, grid.cols, grid.frames if rows else 0) == (rows, cols, patches), (w, h)
            assert pipe.plan_item(w, h).size == (tile, tile)
            # From the first <image> to the last: S tokens per frame, two markers before each
            # frame but the first, one newline token per row ("\n\n" is one token).
            tiles = rows * cols
            want = (tiles + 1) * seq + 2 * tiles + rows if rows else seq
            assert pipe.num_media_tokens(w, h) == want, (w, h)
