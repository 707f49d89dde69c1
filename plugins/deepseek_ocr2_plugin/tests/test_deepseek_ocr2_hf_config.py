"""``spec_from_hf_configs``: the published checkpoint's files resolve to the preset; every
preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from deepseek_ocr2_plugin.hf_config import CLASS_DEFAULTS, resolve

# The keys the resolver reads from deepseek-community/DeepSeek-OCR-2's config.json; the rest
# of the file is the towers' and the language model's.
CONFIG = {"architectures": ["DeepseekOcr2ForConditionalGeneration"], "model_type": "deepseek_ocr2",
          "image_token_id": 128815}
# DeepseekOcr2ImageProcessor.save_pretrained of the class defaults (what the converted
# checkpoint holds, docs/families/deepseek_ocr2.md §1).
PREPROCESSOR = {
    "image_processor_type": "DeepseekOcr2ImageProcessor", "processor_class": "DeepseekOcr2Processor",
    "do_convert_rgb": True, "do_resize": True, "crop_to_patches": True, "min_patches": 2, "max_patches": 6,
    **CLASS_DEFAULTS,
}


def test_published_configs_give_the_preset():
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == mmf.preset("deepseek_ocr2")


def test_missing_keys_take_transformers_defaults():
    assert resolve({"model_type": "deepseek_ocr2"}, {}) == mmf.preset("deepseek_ocr2")


def test_other_models_are_not_claimed():
    assert resolve({"model_type": "deepseek_vl_hybrid"}, PREPROCESSOR) is None
    assert resolve([], {}) is None


def test_values_feed_the_spec():
    spec = resolve({**CONFIG, "image_token_id": 7}, {**PREPROCESSOR, "size": {"height": 640, "width": 640},
                                                     "tile_size": 512, "resample": 1, "background_color": [0, 0, 0],
                                                     "image_mean": [0.1, 0.2, 0.3]})
    assert (spec["image_token_id"], spec["size"], spec["tile_size"], spec["resample"]) == (7, 640, 512, "pil_lanczos")
    assert spec["background_color"] == [0, 0, 0] and spec["image_mean"] == [0.1, 0.2, 0.3]


@pytest.mark.parametrize(("key", "value", "match"), [
    ("size", {"height": 1024, "width": 768}, r"'size' must be a square"),
    ("size", {"shortest_edge": 1024}, r"'size' must be a square"),
    ("resample", 0, r"'resample' must be one of \[1, 2, 3\]"),
    ("resample", True, r"'resample' must be one of"),
    ("crop_to_patches", False, r"'crop_to_patches'"),
    ("max_patches", 9, r"'max_patches'"),
    ("min_patches", 1, r"'min_patches'"),
    ("do_resize", False, r"'do_resize'"),
    ("do_convert_rgb", False, r"'do_convert_rgb'"),
    ("image_processor_type", "LlavaImageProcessor", r"'image_processor_type'"),
    ("processor_class", "LlavaProcessor", r"'processor_class'"),
    ("do_pad", True, r"'do_pad' is not supported by the deepseek_ocr2 family"),
    ("background_color", [300, 0, 0], r"background_color.*0\.\.255"),
    ("tile_size", 0, r"tile_size"),
])
def test_unsupported_values_are_refused_by_name(key, value, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(CONFIG, {**PREPROCESSOR, key: value})


def test_a_bad_token_id_is_refused():
    with pytest.raises(mmf.SpecError, match="image_token_id"):
        resolve({**CONFIG, "image_token_id": "x"}, PREPROCESSOR)
