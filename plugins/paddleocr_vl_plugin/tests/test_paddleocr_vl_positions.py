"""M-RoPE positions against the model's own ``PaddleOCRVLModel.get_rope_index`` (torch), on
random chat-shaped prompts of one to four images of the test sizes, text before, between
and after them, and on the fixed cases a document request makes (one page, many pages,
an image at the very start or end of the prompt)."""

from __future__ import annotations

import numpy as np
import pytest

from . import paddleocr_vl_images as images
from . import paddleocr_vl_reference as ref
import mm_framework as mmf
from mm_framework.testing import assert_adjacent_images_parted

pytest.importorskip("transformers")
torch = pytest.importorskip("torch", reason="get_rope_index needs torch")

PRESET = mmf.preset("paddleocr_vl")
START, END = ref.SPECIALS[ref.IMAGE_START], ref.SPECIALS[ref.IMAGE_END]
SIZES = ["page_letter_100dpi_850x1100.jpg", "tiny_10x10.png", "thin_tall_20x3000.png", "thin_wide_3000x20.png",
         "odd_333x501.png", "slide_1920x1080.png"]


def check(spec, names, ids):
    pad = spec["image_token_id"]
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=[images.make(n) for n in names], input_ids=ids))
    expanded = torch.tensor(np.asarray(out.input_ids))[None]
    grids = torch.from_numpy(pipe.model_kwargs(out)["image_grid_thw"])
    pos, delta = ref.rope_fn(spec["merge_size"])(
        input_ids=expanded, mm_token_type_ids=(expanded == pad).int(), image_grid_thw=grids)
    assert out.positions.positions.dtype == np.int64
    np.testing.assert_array_equal(out.positions.positions, pos[:, 0].numpy())
    assert out.positions.delta == int(delta.reshape(-1)[0])


@pytest.mark.torch_parity
@pytest.mark.parametrize("spec_name", ["preset", "merge1"])
def test_random_prompts_equal_get_rope_index(spec_name):
    spec = PRESET if spec_name == "preset" else {**PRESET, "merge_size": 1, "min_pixels": 14 * 14}
    rng = np.random.default_rng(7 if spec_name == "preset" else 8)
    for trial in range(10):
        names = [SIZES[int(i)] for i in rng.integers(0, len(SIZES), int(rng.integers(1, 5)))]
        def text(most: int) -> list[int]:
            return [int(i) for i in rng.integers(3, 1000, int(rng.integers(0, most)))]

        ids = text(4)
        for _ in names:
            ids += [START, spec["image_token_id"], END] + text(3)
        check(spec, names, ids)


@pytest.mark.torch_parity
@pytest.mark.parametrize(("names", "ids"), [
    (["page_a4_150dpi_1240x1754.png"], [100295]),
    (["tiny_27x5.png"], [1, 100295]),
    (["strip_1x150.png"], [100295, 2]),
    (["page_a4_150dpi_1240x1754.png"] * 3, [1, START, 100295, END, START, 100295, END, START, 100295, END, 2]),
], ids=["alone", "at_end", "at_start", "three_pages"])
def test_document_prompts_equal_get_rope_index(names, ids):
    check(PRESET, names, ids)


@pytest.mark.torch_parity
def test_adjacent_images_are_parted_where_get_rope_index_fails():
    """The default prompt (one placeholder per image, nothing between them): ``get_rope_index``
    reads the images' pads as one run, has a grid too few and fails; ``mmp.mrope.image_only``
    places each image by its own span, which is ``get_rope_index`` of the prompt with a text
    id parting them, that id dropped (docs/families/qwen_vl_video.md §7)."""
    datas = [images.make(n) for n in ("odd_333x501.png", "tiny_10x10.png", "thin_wide_3000x20.png")]
    assert_adjacent_images_parted(mmf.pipeline_from_spec(PRESET), datas, 9, ref.rope_fn(PRESET["merge_size"]))
