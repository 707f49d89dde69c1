"""The family hooks: normalization, tiles + thumbnail, Explicit layout, token counts, kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from . import intern_vl_cases as ic
import mm_framework as mmf
from mm_framework import plugin as mmp
from intern_vl_plugin.bicubic import resize_to_tiles
from intern_vl_plugin.family import InternVlFamily

# docs/families/intern_vl.md: slot 1, <IMG_CONTEXT> 2, <img> 3, </img> 4, 256 per tile.
SPEC = {
    "family": "intern_vl",
    "image_token_id": 1,
    "img_context_token_id": 2,
    "img_start_token_id": 3,
    "img_end_token_id": 4,
    "image_size": 16,
    "num_image_token": 256,
    "max_num": 12,
    "image_mean": list(ic.IMAGENET_MEAN),
    "image_std": list(ic.IMAGENET_STD),
}


@pytest.fixture
def family() -> InternVlFamily:
    return InternVlFamily({k: v for k, v in SPEC.items() if k != "family"})


def _expand(family: InternVlFamily, ids: list[int], geometries: list) -> mmp.ExpandedPrompt:
    src = np.asarray(ids, dtype=np.int64)
    return mmp.apply_layout(src, family.mm_layout(input_ids=src, geometries=geometries), len(geometries))


def test_layout_example_offsets_cover_the_context_run(family):
    out = _expand(family, [7, 1, 9], [mmf.Tiles(2)])
    assert out.input_ids.tolist() == [7, 3] + [2] * 512 + [4, 9]
    assert out.offsets == ((2, 513),)


def test_layout_two_images_and_adjacent_slots(family):
    out = _expand(family, [1, 1, 8], [mmf.Tiles(1), mmf.Tiles(3)])
    assert out.input_ids.tolist() == [3] + [2] * 256 + [4, 3] + [2] * 768 + [4, 8]
    assert out.offsets == ((1, 256), (259, 1026))


def test_layout_count_mismatch_is_a_layout_error(family):
    with pytest.raises(mmf.LayoutError, match=r"prompt has 1 media placeholder\(s\) but 2 media item\(s\)"):
        family.mm_layout(input_ids=np.array([7, 1, 9]), geometries=[mmf.Tiles(1), mmf.Tiles(1)])


def test_layout_rejects_foreign_geometry(family):
    with pytest.raises(mmf.InternalError, match="expected a Tiles geometry, got Grid"):
        family.mm_layout(input_ids=np.array([1]), geometries=[mmf.Grid(1, 2, 2)])


def test_normalize_divides_by_255_like_torch(family):
    rgb = np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 3, axis=2)
    got = family.normalize(rgb)
    f32 = np.float32
    v = np.arange(256, dtype=f32)
    for c in range(3):
        want = (v / f32(255) - f32(ic.IMAGENET_MEAN[c])) / f32(ic.IMAGENET_STD[c])
        assert got[c, 0].tobytes() == want.astype(f32).tobytes()
    # The crate's v * f32(1/255) is a different rounding on about half the byte values.
    assert int(((v / f32(255)) != (v * f32(1 / 255))).sum()) == 126


def test_process_item_tiles_then_thumbnail(family):
    rgb = np.random.default_rng(0).integers(0, 256, size=(30, 50, 3), dtype=np.uint8)
    item = family.mm_process_item(media=mmp.DecodedImage(rgb))
    grid = family.grid(50, 30)
    assert (grid.cols, grid.rows, grid.thumbnail) == (3, 2, True)
    assert item.geometry == mmf.Tiles(7)
    assert item.feature.dtype == "f32" and item.feature.shape == (7, 3, 16, 16)
    assert item.aux == {}
    image = family.normalize(rgb)
    tiles = np.empty((6, 3, 16, 16), dtype=np.float32)
    resize_to_tiles(image, 3, 2, 16, tiles)
    thumb = np.empty((1, 3, 16, 16), dtype=np.float32)
    resize_to_tiles(image, 1, 1, 16, thumb)
    assert item.feature.array[:6].tobytes() == tiles.tobytes()
    assert item.feature.array[6:].tobytes() == thumb.tobytes()


def test_single_tile_has_no_thumbnail():
    family = InternVlFamily({**{k: v for k, v in SPEC.items() if k != "family"}, "max_num": 1})
    rgb = np.random.default_rng(1).integers(0, 256, size=(16, 16, 3), dtype=np.uint8)
    item = family.mm_process_item(media=mmp.DecodedImage(rgb))
    assert item.geometry == mmf.Tiles(1)
    # 16x16 into one 16-pixel tile is an identity resize: the normalized image itself.
    assert item.feature.array[0].tobytes() == family.normalize(rgb).tobytes()


def test_thumbnail_can_be_disabled():
    assert mmf.pipeline_from_spec({**SPEC, "use_thumbnail": False}).num_media_tokens(640, 480) == 12 * 256


def test_num_media_tokens():
    pipe = mmf.pipeline_from_spec(SPEC)
    assert pipe.num_media_tokens(640, 480) == 13 * 256
    assert pipe.num_media_tokens(1, 1) == 10 * 256
    for w, h, bad in [(0, 5, "width"), (5, 0, "height"), (-1, 3, "width")]:
        with pytest.raises(mmf.MediaError, match=f"image {bad} must be greater than zero"):
            pipe.num_media_tokens(w, h)


def test_model_kwargs_concatenate_tiles():
    pipe = mmf.pipeline_from_spec(SPEC)
    images = [ic.png(np.full((h, w, 3), 100, dtype=np.uint8)) for h, w in [(16, 16), (30, 50)]]
    out = pipe.process(mmf.MmInput(images=images, input_ids=[7, 1, 8, 1, 9]))
    kwargs = out.model_kwargs()
    assert kwargs["pixel_values"].shape == (10 + 7, 3, 16, 16) and kwargs["pixel_values"].dtype == np.float32
    assert kwargs["num_patches"].tolist() == [10, 7] and kwargs["num_patches"].dtype == np.int64
    assert np.array_equal(kwargs["pixel_values"][10:], out.items[1].feature.array)
    empty = InternVlFamily({k: v for k, v in SPEC.items() if k != "family"}).mm_model_kwargs(items=[])
    assert empty["pixel_values"].shape == (0, 3, 16, 16) and empty["num_patches"].shape == (0,)


def test_end_to_end_with_the_preset():
    pipe = mmf.pipeline_from_spec(mmf.preset("internvl2_5_8b"))
    data = ic.png(np.random.default_rng(2).integers(0, 256, size=(48, 64, 3), dtype=np.uint8))
    out = pipe.process(mmf.MmInput(images=[data], input_ids=[1, 92546, 2]))
    n = 13 * 256
    assert out.items[0].feature.shape == (13, 3, 448, 448)
    assert out.input_ids.tolist() == [1, 92544] + [92546] * n + [92545, 2]
    assert out.offsets == ((2, 1 + n),)
    assert isinstance(out.positions, mmf.Rope1D)


def test_the_slot_has_a_text_only_when_it_is_img_context(family):
    # A slot of the caller's choice is a token whose text this family cannot know.
    assert family.mm_capabilities().placeholder_texts == {}
    caps = mmf.pipeline_from_spec({**SPEC, "image_token_id": 2}).capabilities
    assert caps.placeholders == {"image": 2} and caps.placeholder_texts == {"image": "<IMG_CONTEXT>"}
