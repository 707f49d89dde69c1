"""``spec_from_hf_configs``: the published checkpoints' files resolve to the presets; every
preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from smolvlm_plugin.hf_config import resolve

from .smolvlm_reference import IMAGE_CONFIGS

# The model keys the resolver reads, as the three checkpoints' config.json hold them
# (docs/families/smolvlm.md §1); the rest of each file is the language model's.
CONFIGS = {
    "smolvlm_256m_instruct": {"architectures": ["Idefics3ForConditionalGeneration"], "model_type": "idefics3",
                              "image_token_id": 49190, "scale_factor": 4,
                              "vision_config": {"image_size": 512, "patch_size": 16, "model_type": "idefics3_vision"}},
    "smolvlm2_500m_video_instruct": {
        "architectures": ["SmolVLMForConditionalGeneration"], "model_type": "smolvlm", "image_token_id": 49190,
        "scale_factor": 4, "vision_config": {"image_size": 512, "patch_size": 16, "model_type": "smolvlm_vision",
                                             "max_image_size": {"longest_edge": 512}, "size": {"longest_edge": 2048}}},
    "idefics3_8b_llama3": {"architectures": ["Idefics3ForConditionalGeneration"], "model_type": "idefics3",
                           "image_token_id": 128257, "scale_factor": 2,
                           "vision_config": {"image_size": 364, "patch_size": 14, "model_type": "idefics3_vision"}},
}
CLASSES = {"smolvlm_256m_instruct": ("Idefics3ImageProcessor", "Idefics3Processor"),
           "smolvlm2_500m_video_instruct": ("SmolVLMImageProcessor", "SmolVLMProcessor"),
           "idefics3_8b_llama3": ("Idefics3ImageProcessor", "Idefics3Processor")}


def preprocessor(preset: str) -> dict:
    ip, proc = CLASSES[preset]
    pp = {**IMAGE_CONFIGS[preset], "image_processor_type": ip, "processor_class": proc}
    if preset.startswith("smolvlm2"):
        pp["video_sampling"] = {"fps": 1, "max_frames": 64, "video_size": {"longest_edge": 512}}
    return pp


@pytest.mark.parametrize("preset", CONFIGS)
def test_published_configs_give_the_preset(preset):
    assert mmf.spec_from_hf_configs(CONFIGS[preset], preprocessor(preset)) == mmf.preset(preset)


def test_other_models_are_not_claimed():
    assert resolve({"model_type": "idefics2"}, preprocessor("idefics3_8b_llama3")) is None
    assert resolve([], {}) is None


def test_missing_keys_take_transformers_defaults():
    """Idefics3ImageProcessorPil's class attributes are Idefics3-8B's values; the model's
    defaults give scale 2, and image_seq_len follows the vision config."""
    spec = resolve({"model_type": "idefics3", "vision_config": {"image_size": 364, "patch_size": 14}}, {})
    assert spec == mmf.preset("idefics3_8b_llama3")
    assert resolve({"model_type": "smolvlm", "vision_config": {"image_size": 364, "patch_size": 14}},
                   {})["variant"] == "smolvlm"
    # No vision config: SigLIP-224 with 32-pixel patches, 7 * 7 / 4 tokens, truncated.
    assert resolve({"model_type": "idefics3"}, {})["image_seq_len"] == 12


def test_values_follow_the_files():
    pp = {**preprocessor("smolvlm_256m_instruct"), "resample": 3, "do_image_splitting": False,
          "size": {"longest_edge": 1024}, "do_normalize": False}
    spec = resolve(CONFIGS["smolvlm_256m_instruct"], pp)
    assert (spec["resample"], spec["do_image_splitting"], spec["size_longest_edge"], spec["do_normalize"]) == (
        "pil_bicubic", False, 1024, False)
    no_class = {k: v for k, v in preprocessor("smolvlm2_500m_video_instruct").items() if k != "processor_class"}
    assert resolve(CONFIGS["smolvlm2_500m_video_instruct"], no_class)["variant"] == "smolvlm"


REFUSED = [
    ("not_a_key", 1, "'not_a_key' is not supported by the smolvlm family"),
    ("do_convert_rgb", False, "'do_convert_rgb' must be True"),
    ("do_pad", False, "'do_pad' must be True"),
    ("image_processor_type", "Idefics2ImageProcessor", "'image_processor_type' must be one of"),
    ("processor_class", "Idefics2Processor", "'processor_class' must be one of"),
    ("resample", 0, "'resample' must be one of \\[1, 2, 3\\]"),
    ("resample", True, "'resample' must be one of"),
    ("size", {"shortest_edge": 512}, "'size' must be an object with exactly longest_edge"),
    ("max_image_size", 512, "'max_image_size' must be an object with exactly longest_edge"),
    ("max_image_size", {"longest_edge": 384}, "'max_image_size' =\\{'longest_edge': 384\\} disagrees with config.json "
                                               "vision_config.image_size=512"),
]


@pytest.mark.parametrize(("key", "value", "message"), REFUSED, ids=[f"{k}={v!r}" for k, v, _ in REFUSED])
def test_refused_preprocessor_values_name_the_key(key, value, message):
    with pytest.raises(mmf.SpecError, match=f"preprocessor_config.json: {message}"):
        resolve(CONFIGS["smolvlm_256m_instruct"], {**preprocessor("smolvlm_256m_instruct"), key: value})


def test_values_reach_the_spec_checks():
    config, pp = CONFIGS["idefics3_8b_llama3"], preprocessor("idefics3_8b_llama3")
    with pytest.raises(mmf.SpecError, match="smolvlm spec: field 'image_std'"):
        resolve(config, {**pp, "image_std": [0.5, 0, 0.5]})
    with pytest.raises(mmf.SpecError, match="smolvlm spec: field 'do_rescale'"):
        resolve(config, {**pp, "do_rescale": "yes"})
    with pytest.raises(mmf.SpecError, match="smolvlm spec: field 'size_longest_edge' =4096 splits an image into up "
                                            "to 12 rows"):
        resolve(config, {**pp, "size": {"longest_edge": 4096}})


def test_model_config_problems_are_refused():
    config, pp = CONFIGS["idefics3_8b_llama3"], preprocessor("idefics3_8b_llama3")
    with pytest.raises(mmf.SpecError, match="config.json: 'image_token_id'=5 is not one of the published vocabularies "
                                            "\\(49190, 128257\\)"):
        resolve({**config, "image_token_id": 5}, pp)
    with pytest.raises(mmf.SpecError, match="'vision_config' must be an object"):
        resolve({**config, "vision_config": 3}, pp)
    with pytest.raises(mmf.SpecError, match="config.json: scale_factor must be a positive integer, got 0"):
        resolve({**config, "scale_factor": 0}, pp)
    with pytest.raises(mmf.SpecError, match="config.json: vision_config.patch_size must be a positive integer"):
        resolve({**config, "vision_config": {"image_size": 364, "patch_size": 1.5}}, pp)
    with pytest.raises(mmf.SpecError, match="expected an object"):
        resolve(config, [])


@pytest.mark.parametrize("cls", ["Idefics3ImageProcessorPil", "SmolVLMImageProcessorPil"])
def test_every_key_the_image_processor_saves_is_read(cls):
    """What ``save_pretrained`` writes (``to_dict``) resolves: no key of it is refused."""
    transformers = pytest.importorskip("transformers")
    saved = getattr(transformers, cls)().to_dict()
    assert resolve(CONFIGS["idefics3_8b_llama3"], saved) == mmf.preset("idefics3_8b_llama3")
