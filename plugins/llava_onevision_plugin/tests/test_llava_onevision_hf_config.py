"""``mm_spec_from_hf_configs`` for LLaVA-OneVision: the model directories the goldens were
made from resolve to their specs; every unsupported key or value is refused by name."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import mm_framework as mmf

MODELS = Path(__file__).parent / "golden" / "models"
CHECKPOINT = MODELS / "llava-onevision-qwen2-7b-ov-hf"


def load(model: Path) -> tuple[dict, dict]:
    return tuple(json.loads((model / n).read_text()) for n in ("config.json", "preprocessor_config.json"))


def golden_spec(model: str) -> dict:
    """The spec the generator recorded for this model directory (PIL-object entry)."""
    for case in (MODELS.parent / "cases").glob(f"{model}-*/case.json"):
        doc = json.loads(case.read_text())
        if doc["provenance"]["entry"] == "pil_object":
            return doc["spec"]
    raise AssertionError(f"no golden case for {model}")


@pytest.mark.parametrize("model", sorted(p.name for p in MODELS.iterdir()))
def test_model_dir_resolves_to_the_golden_spec(model):
    # The goldens are of transformers' PIL backend and were recorded before the spec had a
    # backend field; a resolved spec always names that backend.
    assert mmf.spec_from_model_dir(MODELS / model) == {**golden_spec(model), "backend": "pil"}


def test_checkpoint_resolves_to_the_preset():
    assert mmf.spec_from_hf_configs(*load(CHECKPOINT)) == mmf.preset("llava_onevision_qwen2_7b_ov")


def test_class_defaults_fill_missing_keys():
    config, _ = load(CHECKPOINT)
    spec = mmf.spec_from_hf_configs({"model_type": "llava_onevision"}, {})
    assert spec["image_mean"] == [0.48145466, 0.4578275, 0.40821073] and spec["image_size"] == 384
    assert spec["image_grid_pinpoints"] == config["image_grid_pinpoints"] and spec["num_image_tokens"] == 729
    assert spec["image_token_id"] == 151646 and spec["vision_aspect_ratio"] == "anyres_max_9"


def test_other_models_are_not_claimed():
    from llava_onevision_plugin import hf_config

    assert hf_config.resolve({"model_type": "llava_next"}, {}) is None
    assert hf_config.resolve([], {}) is None


PP_REFUSALS = [
    ({"do_resize": False}, "'do_resize' must be True"),
    ({"do_rescale": 1}, "'do_rescale' must be True"),
    ({"do_normalize": False}, "'do_normalize'"),
    ({"do_convert_rgb": False}, "'do_convert_rgb'"),
    ({"do_pad": False}, "'do_pad'"),
    ({"crop_size": {"height": 384, "width": 384}}, "'crop_size' must be null"),
    ({"do_center_crop": True}, "'do_center_crop' must be null"),
    ({"resample": 2}, "'resample' must be one of"),
    ({"resample": True}, "'resample'"),
    ({"size": {"shortest_edge": 384}}, "'size' must be"),
    ({"size": {"height": 384, "width": 768}}, "'size' must be square"),
    ({"size": 384}, "'size'"),
    ({"image_processor_type": "LlavaNextImageProcessor"}, "'image_processor_type'"),
    ({"processor_class": "LlavaProcessor"}, "'processor_class'"),
    ({"image_seq_length": 729}, "'image_seq_length' is not supported"),
    ({"image_std": [0.5, 0, 0.5]}, "image_std"),
    ({"rescale_factor": 0}, "rescale_factor"),
]


@pytest.mark.parametrize(("change", "match"), PP_REFUSALS, ids=[next(iter(c)) for c, _ in PP_REFUSALS])
def test_preprocessor_refusals(change, match):
    config, pp = load(CHECKPOINT)
    with pytest.raises(mmf.SpecError, match=match):
        mmf.spec_from_hf_configs(config, {**pp, **change})


def test_pinpoints_must_agree_between_the_two_files():
    config, pp = load(CHECKPOINT)
    with pytest.raises(mmf.SpecError, match="image_grid_pinpoints' disagrees"):
        mmf.spec_from_hf_configs({**config, "image_grid_pinpoints": [[384, 384]]}, pp)
    # Without the key the model takes the default list: a custom preprocessor list disagrees.
    no_pins = {k: v for k, v in config.items() if k != "image_grid_pinpoints"}
    mmf.spec_from_hf_configs(no_pins, pp)
    with pytest.raises(mmf.SpecError, match="image_grid_pinpoints' disagrees"):
        mmf.spec_from_hf_configs(no_pins, {**pp, "image_grid_pinpoints": [[384, 384], [768, 768]]})


CONFIG_REFUSALS = [
    ({"vision_config": {"image_size": 336, "patch_size": 14}}, "vision_config.image_size=336 disagrees"),
    ({"vision_config": {"image_size": 384, "patch_size": 0}}, "vision_config.patch_size"),
    ({"vision_config": [384]}, "'vision_config' must be an object"),
    ({"image_token_id": 5}, "'image_token_id' disagrees"),
    ({"image_token_index": -3}, "image_token_id"),
    ({"vision_feature_select_strategy": "cls"}, "vision_feature_select_strategy"),
    ({"vision_aspect_ratio": "anyres"}, "vision_aspect_ratio"),
]


@pytest.mark.parametrize(("change", "match"), CONFIG_REFUSALS, ids=[str(c) for c, _ in CONFIG_REFUSALS])
def test_config_refusals(change, match):
    config, pp = load(CHECKPOINT)
    config = copy.deepcopy(config)
    config.update(change)
    with pytest.raises(mmf.SpecError, match=match):
        mmf.spec_from_hf_configs(config, pp)


def test_non_object_preprocessor_config():
    config, _ = load(CHECKPOINT)
    with pytest.raises(mmf.SpecError, match="expected an object"):
        mmf.spec_from_hf_configs(config, [1, 2])
