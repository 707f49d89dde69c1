"""``processor: "transformers"``: transformers 5.24's ``GotOcr2ImageProcessorPil`` as
``InternVLProcessor`` runs it (``crop_to_patches=True``), byte for byte, and the resolver of the
``-hf`` checkpoints' configs. The live tests need transformers (no torch)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing.images import sample_image
from intern_vl_plugin.hf_config import resolve
from intern_vl_plugin.tiling import candidate_grids, select_grid_transformers

# What transformers' convert_internvl_weights_to_hf.py saves for InternVL3 (GotOcr2ImageProcessorFast).
PP = {
    "crop_size": None, "crop_to_patches": False, "data_format": "channels_first", "default_to_square": True,
    "device": None, "do_center_crop": None, "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
    "do_resize": True, "image_mean": [0.485, 0.456, 0.406], "image_processor_type": "GotOcr2ImageProcessorFast",
    "image_std": [0.229, 0.224, 0.225], "input_data_format": None, "max_patches": 12, "min_patches": 1,
    "processor_class": "InternVLProcessor", "resample": 3, "rescale_factor": 0.00392156862745098,
    "return_tensors": None, "size": {"height": 448, "width": 448},
}
CONFIG = {"model_type": "internvl", "image_token_id": 151667, "downsample_ratio": 0.5, "image_seq_length": 256,
          "vision_config": {"image_size": [448, 448], "patch_size": [14, 14]}}


def test_resolves_the_hf_checkpoint():
    spec = mmf.spec_from_hf_configs(CONFIG, PP)
    assert spec == {
        "family": "intern_vl", "image_token_id": 151667, "img_context_token_id": 151667,
        "img_start_token_id": 151665, "img_end_token_id": 151666, "image_size": 448, "num_image_token": 256,
        "max_num": 12, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
        "use_thumbnail": True, "processor": "transformers", "backend": "pil",
    }
    # The InternLM2.5 vocabulary's markers; GotOcr2's class defaults where keys are missing.
    vision = {"image_size": [384, 384], "patch_size": [16, 16]}
    llama = resolve({"model_type": "internvl", "image_token_id": 92546, "vision_config": vision}, {})
    assert (llama["img_start_token_id"], llama["img_end_token_id"]) == (92544, 92545)
    assert (llama["image_size"], llama["num_image_token"]) == (384, 144)
    assert llama["image_mean"] == [0.48145466, 0.4578275, 0.40821073]
    assert resolve({"model_type": "internvl_chat"}, PP) is None


REJECTED = [
    ({}, {"pad_to_square": True}, "preprocessor_config.json: 'pad_to_square' is not supported"),
    ({}, {"resample": 2}, "preprocessor_config.json: 'resample' must be 3"),
    ({}, {"min_patches": 2}, "preprocessor_config.json: 'min_patches' must be 1"),
    ({}, {"do_rescale": 1}, "preprocessor_config.json: 'do_rescale' must be True"),
    ({}, {"crop_to_patches": "yes"}, "preprocessor_config.json: 'crop_to_patches' must be a boolean"),
    ({}, {"image_processor_type": "CLIPImageProcessor"}, "'image_processor_type' must be one of"),
    ({}, {"size": {"height": 448, "width": 224}}, "preprocessor_config.json: 'size' must be a square size"),
    ({}, {"max_patches": 0}, "field 'max_num'"),
    ({"image_token_id": 5}, {}, "config.json: 'image_token_id' =5 is not <IMG_CONTEXT> of a known"),
    ({"vision_config": {"image_size": [224, 224]}}, {}, "'vision_config.image_size' =224 disagrees"),
    ({"image_seq_length": 64}, {}, "config.json: 'image_seq_length' =64 disagrees"),
    ({"downsample_ratio": 0.3}, {}, "config.json: 'downsample_ratio' gives"),
    ({"downsample_ratio": True}, {}, "config.json: 'downsample_ratio' must be a number"),
    ({"vision_config": []}, {}, "config.json: 'vision_config' must be an object"),
]


@pytest.mark.parametrize(("config", "pp", "message"), REJECTED, ids=[m for _, _, m in REJECTED])
def test_unsupported_configs_are_refused_naming_the_key(config, pp, message):
    with pytest.raises(mmf.SpecError, match=re.escape(message)):
        resolve({**CONFIG, **config}, {**PP, **pp})


def test_not_an_object_preprocessor():
    with pytest.raises(mmf.SpecError, match="preprocessor_config.json: expected an object"):
        resolve(CONFIG, [])


transformers = pytest.importorskip("transformers")
got_ocr2 = pytest.importorskip("transformers.models.got_ocr2.image_processing_pil_got_ocr2")


@pytest.mark.parametrize("max_num", [1, 2, 6, 12, 40])
def test_tile_rule_equals_transformers_exhaustively(max_num):
    candidates = candidate_grids(max_num)
    for w in range(1, 97, 5):
        for h in range(1, 97, 3):
            ours = select_grid_transformers(w * 8, h * 8, candidates, 448)
            assert (ours.cols, ours.rows) == got_ocr2.get_optimal_tiled_canvas((h * 8, w * 8), (448, 448), 1, max_num)


def _alpha_png() -> bytes:
    rgba = np.random.default_rng(5).integers(0, 256, (240, 320, 4), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, "PNG")
    return buf.getvalue()


IMAGES = {
    "photo_640x480": sample_image(640, 480, "JPEG", seed=1),
    "tie_224": sample_image(224, 224, "PNG", seed=2),  # (1,1) vs (2,2): the area rule keeps one tile
    "exact_448": sample_image(448, 448, "PNG", seed=3),
    "tall_300x1200": sample_image(300, 1200, "PNG", seed=4),
    "tiny_10x7": sample_image(10, 7, "PNG", seed=6),
    "wide_2000x300": sample_image(2000, 300, "JPEG", seed=7),
    "alpha_320x240": _alpha_png(),
}


@pytest.mark.parametrize("max_num", [12, 4])
@pytest.mark.parametrize("name", list(IMAGES))
def test_items_equal_got_ocr2_pil(name, max_num):
    data = IMAGES[name]
    pipe = mmf.pipeline_from_spec(mmf.spec_from_hf_configs(CONFIG, PP))
    out = pipe.process(mmf.MmInput(items=[mmf.Item("image", data, max_patches=max_num)]))
    ref = got_ocr2.GotOcr2ImageProcessorPil.from_dict(PP)(
        images=[Image.open(io.BytesIO(data))], crop_to_patches=True, max_patches=max_num, return_tensors="np"
    )
    ours = out.model_kwargs()
    theirs = np.asarray(ref["pixel_values"])
    assert ours["pixel_values"].shape == theirs.shape
    assert ours["pixel_values"].tobytes() == theirs.astype(np.float32).tobytes()
    assert ours["num_patches"].tolist() == list(ref["num_patches"])
    (start, end), = out.offsets
    assert end - start + 1 == 256 * int(ref["num_patches"][0])
    counted = pipe.count_tokens(mmf.MmInput(items=[mmf.Item("image", data, max_patches=max_num)]))
    assert counted.input_ids.tolist() == out.input_ids.tolist()


def test_the_tile_budget_is_a_per_item_option_only_here():
    hf = mmf.pipeline_from_spec(mmf.spec_from_hf_configs(CONFIG, PP))
    assert hf.capabilities.item_options == {"image": {"max_patches": "max_num"}}
    assert mmf.pipeline_from_spec(mmf.preset("internvl2_5_8b")).capabilities.item_options == {}
