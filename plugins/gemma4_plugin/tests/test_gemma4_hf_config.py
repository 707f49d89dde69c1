"""``mm_spec_from_hf_configs`` for Gemma 4: every preprocessor key consumed, each refusal named."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from gemma4_plugin.hf_config import resolve

CONFIG = {"model_type": "gemma4", "image_token_id": 258880, "boi_token_id": 255999, "eoi_token_id": 258882,
          "vision_config": {"model_type": "gemma4_vision", "patch_size": 16, "pooling_kernel_size": 3}}
# Gemma4ImageProcessorPil().to_dict() as saved, plus the processor keys a merged file may hold.
PREPROCESSOR = {
    "do_convert_rgb": True, "do_normalize": False, "do_rescale": True, "do_resize": True,
    "image_mean": [0.0, 0.0, 0.0], "image_processor_type": "Gemma4ImageProcessor", "image_std": [1.0, 1.0, 1.0],
    "max_soft_tokens": 280, "patch_size": 16, "pooling_kernel_size": 3, "resample": 3,
    "rescale_factor": 0.00392156862745098, "processor_class": "Gemma4Processor", "image_seq_length": 280,
}


def test_the_published_config_resolves_to_the_preset():
    assert resolve(CONFIG, PREPROCESSOR) == mmf.preset("gemma4")
    assert resolve({"model_type": "gemma4"}, {}) == mmf.preset("gemma4")


def test_other_models_are_not_ours():
    assert resolve({"model_type": "gemma3"}, PREPROCESSOR) is None


def test_values_feed_the_spec():
    pp = {**PREPROCESSOR, "max_soft_tokens": 560, "resample": 2, "do_normalize": True, "image_mean": [0.5] * 3,
          "image_std": [0.5] * 3}
    spec = resolve({**CONFIG, "image_token_id": 7, "boi_token_id": 8, "eoi_token_id": 9}, pp)
    assert (spec["max_soft_tokens"], spec["resample"], spec["do_normalize"]) == (560, "pil_bilinear", True)
    assert (spec["image_token_id"], spec["boi_token_id"], spec["eoi_token_id"]) == (7, 8, 9)


@pytest.mark.parametrize(("config", "pp", "match"), [
    (CONFIG, {**PREPROCESSOR, "crop_size": 224}, r"'crop_size' is not supported by the gemma4 family"),
    (CONFIG, {**PREPROCESSOR, "do_resize": False}, r"'do_resize' must be True"),
    (CONFIG, {**PREPROCESSOR, "size": {"height": 224, "width": 224}}, r"'size' must be None"),
    (CONFIG, {**PREPROCESSOR, "image_processor_type": "SiglipImageProcessor"}, r"'image_processor_type' must be"),
    (CONFIG, {**PREPROCESSOR, "resample": 0}, r"'resample' must be one of"),
    (CONFIG, {**PREPROCESSOR, "max_soft_tokens": 256}, r"max_soft_tokens.*must be one of"),
    ({**CONFIG, "vision_config": {"patch_size": 14}}, PREPROCESSOR, r"vision_config.patch_size=14 disagrees"),
    ({**CONFIG, "vision_config": {"pooling_kernel_size": 2}}, PREPROCESSOR,
     r"vision_config.pooling_kernel_size=2 disagrees"),
    ({**CONFIG, "vision_config": [1]}, PREPROCESSOR, r"'vision_config' must be an object"),
])
def test_refusals_name_the_key(config, pp, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(config, pp)
