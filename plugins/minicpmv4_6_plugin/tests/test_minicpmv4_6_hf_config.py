"""``mm_spec_from_hf_configs``: a MiniCPM-V 4.6 ``config.json`` + ``preprocessor_config.json``
resolve to the preset's spec; every preprocessor key is consumed or refused by name."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from minicpmv4_6_plugin.hf_config import resolve

CONFIG = {"model_type": "minicpmv4_6", "image_token_id": 248056, "downsample_mode": "16x",
          "vision_config": {"patch_size": 14}}
# MiniCPMV4_6ImageProcessorPil's options as a saved preprocessor_config.json writes them.
PREPROCESSOR = {
    "image_processor_type": "MiniCPMV4_6ImageProcessor", "processor_class": "MiniCPMV4_6Processor",
    "do_convert_rgb": True, "do_resize": True, "resample": 3, "do_rescale": True, "rescale_factor": 1 / 255,
    "do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "max_slice_nums": 9,
    "scale_resolution": 448, "patch_size": 14, "slice_mode": True, "downsample_mode": "16x", "use_image_id": True,
}


def test_the_published_files_resolve_to_the_preset():
    assert resolve(CONFIG, PREPROCESSOR) == mmf.preset("minicpm_v_4_6")
    assert resolve(CONFIG, {}) == mmf.preset("minicpm_v_4_6")


def test_options_feed_the_spec():
    spec = resolve({**CONFIG, "downsample_mode": "4x"}, {**PREPROCESSOR, "downsample_mode": "4x", "max_slice_nums": 36,
                                                         "resample": 2, "use_image_id": False})
    assert spec == {**mmf.preset("minicpm_v_4_6_4x"), "max_slice_nums": 36, "resample": "pil_bilinear",
                    "use_image_id": False}


def test_other_models_are_not_ours():
    assert resolve({"model_type": "qwen2_vl"}, PREPROCESSOR) is None


@pytest.mark.parametrize(("config", "pp", "match"), [
    (CONFIG, {**PREPROCESSOR, "size": {"height": 448}}, r"'size' is not supported by the minicpmv4_6 family"),
    (CONFIG, {**PREPROCESSOR, "do_resize": False}, r"'do_resize'"),
    (CONFIG, {**PREPROCESSOR, "resample": 0}, r"'resample' must be one of"),
    (CONFIG, {**PREPROCESSOR, "image_processor_type": "Other"}, r"'image_processor_type'"),
    (CONFIG, {**PREPROCESSOR, "downsample_mode": "4x"}, r"'downsample_mode'.*disagrees with config.json"),
    ({**CONFIG, "image_token_id": 151655}, PREPROCESSOR, r"'image_token_id'=151655 is not one of the published"),
    (CONFIG, {**PREPROCESSOR, "max_slice_nums": 0}, r"max_slice_nums"),
])
def test_bad_files_are_refused_by_name(config, pp, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(config, pp)


def test_the_engine_finds_the_resolver_through_the_entry_point():
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == mmf.preset("minicpm_v_4_6")
