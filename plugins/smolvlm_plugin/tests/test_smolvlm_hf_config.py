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


SMOL2 = "smolvlm2_500m_video_instruct"


def test_video_sampling_settings_are_read():
    """SmolVLMVideoProcessor reads preprocessor_config.json when the model has no video file:
    video_sampling's fps and max_frames; its video_size yields to size (§7)."""
    pp = preprocessor(SMOL2)
    spec = resolve(CONFIGS[SMOL2], {**pp, "do_sample_frames": True,
                                    "video_sampling": {"fps": 2, "max_frames": 8, "video_size": {"longest_edge": 9}}})
    assert (spec["video_do_sample_frames"], spec["video_fps"], spec["video_num_frames"]) == (True, 2.0, 8)
    assert spec["video_size_longest_edge"] is None and spec["video_token_id"] is None
    no_size = {k: v for k, v in pp.items() if k != "size"}
    assert resolve(CONFIGS[SMOL2], no_size)["video_size_longest_edge"] == 512
    video = {"video_processor_type": "SmolVLMVideoProcessor", **{k: v for k, v in pp.items()
                                                                 if k not in ("image_processor_type",
                                                                              "do_image_splitting")},
             "video_sampling": {"fps": 3, "max_frames": 5}}
    spec = resolve(CONFIGS[SMOL2], pp, video)
    assert (spec["video_fps"], spec["video_num_frames"]) == (3.0, 5)


@pytest.mark.parametrize(("change", "message"), [
    ({"image_mean": [0.4, 0.5, 0.5]}, "'image_mean' .* differs from preprocessor_config.json's"),
    ({"video_processor_type": "Qwen2VLVideoProcessor"}, "video_processor_type"),
    ({"do_sample_frames": True, "video_sampling": None}, "'do_sample_frames' samples frames but the file sets no fps"),
    ({"video_sampling": {"fps": 1, "frames": 3}}, "'video_sampling' must be an object of fps, max_frames"),
    ({"skip_secs": 2}, "skip_secs"),
])
def test_video_config_problems_name_the_key(change, message):
    pp = preprocessor(SMOL2)
    video = {k: v for k, v in {**pp, **change}.items() if k not in ("image_processor_type", "do_image_splitting")}
    if video.get("video_sampling", 0) is None:
        del video["video_sampling"]
    with pytest.raises(mmf.SpecError, match=message):
        resolve(CONFIGS[SMOL2], pp, video)


def test_idefics3_takes_no_video_config():
    with pytest.raises(mmf.SpecError, match="an Idefics3 model has no video processor"):
        resolve(CONFIGS["idefics3_8b_llama3"], preprocessor("idefics3_8b_llama3"), {})
