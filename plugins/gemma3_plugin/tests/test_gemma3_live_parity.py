"""Live parity with transformers' Gemma3Processor (PIL backend; no torch needed).

Runs wherever transformers is importable. Pixels: the pipeline's feature must equal
``Gemma3ImageProcessorPil``'s ``pixel_values`` exactly, over the golden images and specs
the goldens do not pin (other sizes, filters, rescale/normalize switches, crop limits
down to empty crops). Crop boxes: the reference's own ``pan_and_scan`` over a sweep of
sizes. Prompts: the processor's text replacement and retokenization, with a tokenizer
built here from the Gemma 3 ids of the special tokens and newline runs (the real vocabulary
is not available offline; newline runs are added tokens in it too, which is what makes
them merge, docs/families/gemma3.md §3). Pan-and-scan's prose needs the real vocabulary
and is covered by the goldens.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import gemma3_images
import mm_framework as mmf
from gemma3_plugin.pan_and_scan import crop_boxes

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

PRESET = mmf.preset("gemma3_4b_it")
RESAMPLE = {"pil_bilinear": 2, "pil_bicubic": 3, "pil_lanczos": 1}
PAS_KEYS = ("do_pan_and_scan", "pan_and_scan_min_crop_size", "pan_and_scan_max_num_crops",
            "pan_and_scan_min_ratio_to_activate")


def reference_pixels(spec, image):
    """transformers' pixel_values of ``image`` (or a list of images) on the spec's backend."""
    cls = {"pil": "Gemma3ImageProcessorPil", "torchvision": "Gemma3ImageProcessor"}[spec.get("backend", "pil")]
    ip = getattr(transformers, cls)(
        size={"height": spec["height"], "width": spec["width"]}, resample=RESAMPLE[spec["resample"]],
        do_rescale=spec["do_rescale"], rescale_factor=spec["rescale_factor"], do_normalize=spec["do_normalize"],
        image_mean=spec["image_mean"], image_std=spec["image_std"],
    )
    return ip(image, return_tensors="np", **{k: spec[k] for k in PAS_KEYS})["pixel_values"]


def ours(spec, data, n_images=1):
    ids = [2] + [spec["boi_token_id"]] * n_images + [3]
    return mmf.pipeline_from_spec(spec).process(mmf.MmInput(images=[data] * n_images, input_ids=ids))


SPECS = {
    "preset": PRESET,
    "pan_and_scan": mmf.preset("gemma3_4b_it_pan_and_scan"),
    "small_bicubic_unnormalized": {**PRESET, "height": 61, "width": 100, "resample": "pil_bicubic",
                                   "do_normalize": False, "do_pan_and_scan": True, "pan_and_scan_min_crop_size": 40},
    "lanczos_unrescaled": {**PRESET, "height": 224, "width": 160, "resample": "pil_lanczos", "do_rescale": False,
                           "image_mean": [0.48145466, 0.4578275, 0.40821073],
                           "image_std": [0.26862954, 0.26130258, 0.27577711]},
    "many_crops": {**PRESET, "height": 64, "width": 64, "do_pan_and_scan": True, "pan_and_scan_min_crop_size": 8,
                   "pan_and_scan_max_num_crops": 9, "pan_and_scan_min_ratio_to_activate": 1.01},
}
IMAGES = [n for n in gemma3_images.IMAGES if n != "png16_gray_640x480.png" and "4000" not in n]
# The presets' full image matrix is pinned by the goldens; here a few of each kind.
PRESET_IMAGES = ["rgb_1280x960.jpg", "wide_1000x300.jpg", "tall_400x2000.jpg", "rgba_640x480.png",
                 "palette_P_trns_320x240.png", "exif_rot6_1000x400.jpg", "exact_896x896.png"]
CASES = [(s, n) for s in SPECS for n in (PRESET_IMAGES if s in ("preset", "pan_and_scan") else IMAGES)]


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixel_values_equal_the_reference(spec_name, name):
    spec = SPECS[spec_name]
    data = gemma3_images.make(name)
    want = reference_pixels(spec, Image.open(io.BytesIO(data)))
    got = ours(spec, data).items[0].feature.array
    assert got.shape == want.shape
    assert np.array_equal(got, want), f"{name}: {np.count_nonzero(got != want)} values differ"


@pytest.mark.parametrize(("w", "h"), [(5, 1), (1, 1), (2, 1), (1, 7)])
def test_empty_crops_are_black_like_the_reference(w, h):
    spec = {**PRESET, "height": 16, "width": 16, "do_pan_and_scan": True, "pan_and_scan_min_crop_size": 1,
            "pan_and_scan_min_ratio_to_activate": 1.0}
    rgb = np.random.default_rng(w * 10 + h).integers(0, 256, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "PNG")
    want = reference_pixels(spec, Image.fromarray(rgb))
    assert np.array_equal(ours(spec, buf.getvalue()).items[0].feature.array, want)


def test_crop_boxes_equal_the_reference_sweep():
    ip = transformers.Gemma3ImageProcessorPil()
    sides = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 255, 256, 257, 377, 512, 513, 610, 987, 1597, 4000]
    for w in sides:
        for h in sides:
            for args in [(256, 4, 1.2), (1, 4, 1.2), (3, 7, 0.5), (10, 2, 2.0), (1, 1, 1.0), (100, 64, 1.01)]:
                img = np.zeros((1, h, w), np.uint8)
                base = img.__array_interface__["data"][0]
                want = [(c.shape[1:], c.__array_interface__["data"][0] - base if c.size else None)
                        for c in ip.pan_and_scan(img, *args)]
                got = [((max(0, y1 - y0), max(0, x1 - x0)), y0 * w + x0 if x1 > x0 and y1 > y0 else None)
                       for x0, y0, x1, y1 in crop_boxes(w, h, *args)]
                assert got == want, (w, h, args)


# --------------------------------------------------------------------------- prompts

SPECIALS = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<mask>": 4, "<start_of_turn>": 105, "<end_of_turn>": 106,
            "<start_of_image>": 255999, "<end_of_image>": 256000, "<image_soft_token>": 262144}
WORDS = {"user": 2364, "model": 4368, **{"\n" * k: 106 + k for k in range(1, 32)}}


@pytest.fixture(scope="module")
def processor():
    from tokenizers import AddedToken

    tok = transformers.GemmaTokenizer(vocab={**SPECIALS, **WORDS}, merges=[], extra_special_tokens={
        "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"})
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS], special_tokens=True)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in WORDS])
    ip = transformers.Gemma3ImageProcessorPil(size={"height": 896, "width": 896}, resample=2,
                                              image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return transformers.Gemma3Processor(image_processor=ip, tokenizer=tok, image_seq_length=256)


BOI = "<start_of_image>"
PROMPTS = [
    f"<bos><start_of_turn>user\n{BOI}<end_of_turn>\n<start_of_turn>model\n",
    f"<bos><start_of_turn>user\n{BOI}{BOI}<end_of_turn>\n<start_of_turn>model\n",
    f"{BOI}",
    f"\n{BOI}\n\n{BOI}\n\n\n\n{BOI}\n",
    "\n" * 29 + BOI + "\n" * 30 + BOI + "\n" * 31,
    f"<start_of_turn>user\n\n{BOI}<end_of_turn>{BOI}<start_of_turn>",
]


@pytest.mark.parametrize("text", PROMPTS, ids=[f"prompt{i}" for i in range(len(PROMPTS))])
def test_prompt_expansion_equals_the_processor(processor, text):
    n = text.count(BOI)
    images = [gemma3_images.make(name) for name in IMAGES[:n]]
    prompt_ids = processor.tokenizer(text, add_special_tokens=False)["input_ids"]
    ref = processor(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np",
                    add_special_tokens=False)
    pipe = mmf.pipeline_from_spec(PRESET)
    out = pipe.process(mmf.MmInput(images=images, input_ids=prompt_ids))
    want = ref["input_ids"][0]
    assert np.asarray(out.input_ids).tolist() == want.tolist()
    soft = np.flatnonzero(want == PRESET["image_token_id"])
    assert [list(o) for o in out.offsets] == [[int(r[0]), int(r[-1])] for r in np.split(soft, n)]
    assert np.array_equal(ref["token_type_ids"][0], (np.asarray(out.input_ids) == PRESET["image_token_id"]))
    assert np.array_equal(pipe.model_kwargs(out)["pixel_values"], ref["pixel_values"])


def test_placeholder_text_is_the_processors_image_token(processor):
    """The family's placeholder text is Gemma3Processor's image token (the tokenizer's
    boi_token), mapped to the placeholder id, so a text prompt gives the processor's ids."""
    pipe = mmf.pipeline_from_spec(PRESET)
    caps = pipe.capabilities
    assert caps.placeholder_texts == {"image": processor.image_token}
    assert processor.tokenizer.convert_tokens_to_ids(processor.image_token) == caps.placeholders["image"]
    text = PROMPTS[1]
    images = [gemma3_images.make(name) for name in IMAGES[:2]]
    ref = processor(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np",
                    add_special_tokens=False)
    tokenize = lambda t: processor.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=tokenize)
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()
