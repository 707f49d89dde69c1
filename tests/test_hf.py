"""``mm_framework.hf`` beyond one family: an image processor is accelerated only when the
installed family clones it and says what it returns (hook ``mm_hf_image_outputs``);
otherwise it is left alone and the reason counted. (Served calls: the qwen_vl plugin's
tests/test_qwen_hf_accelerate.py.)"""

from __future__ import annotations

import pytest

import mm_framework as mmf
from mm_framework import hf

transformers = pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def _fresh_stats():
    hf.reset_stats()
    yield
    hf.reset_stats()


@pytest.mark.parametrize("name, family", [("SmolVLMImageProcessorPil", "smolvlm")])
def test_a_family_that_does_not_describe_its_image_processor_is_not_served(name, family):
    if family not in {f["name"] for f in mmf.list_families()}:
        pytest.skip(f"the {family} family is not installed")
    ip = getattr(transformers, name)()
    assert hf.accelerate(ip) is ip
    (key, count), = hf.stats()["fallbacks"].items()
    assert key.startswith(f"{name}: not accelerated") and "mm_hf_image_outputs" in key and count == 1
    with pytest.raises(mmf.UnsupportedError, match=f"family '{family}' does not say what its image processor"):
        hf.accelerate(ip, strict=True)


def test_an_image_processor_no_family_clones_is_not_served():
    ip = transformers.CLIPImageProcessorPil()
    assert hf.accelerate(ip) is ip
    (key, _), = hf.stats()["fallbacks"].items()
    assert key.startswith("CLIPImageProcessorPil: not accelerated") and "no installed family" in key
    with pytest.raises(mmf.UnsupportedError, match="no installed family clones it"):
        hf.accelerate(ip, strict=True)


def test_an_image_processor_whose_config_does_not_serialize_is_not_served():
    class Unsaved(transformers.CLIPImageProcessorPil):
        def to_dict(self):
            raise ValueError("the font file is missing")

    ip = Unsaved()
    assert hf.accelerate(ip) is ip
    (key, count), = hf.stats()["fallbacks"].items()
    assert key == ("Unsaved: not accelerated: Unsaved: its configuration does not serialize "
                   "(ValueError: the font file is missing)") and count == 1
    with pytest.raises(mmf.UnsupportedError, match="does not serialize"):
        hf.accelerate(ip, strict=True)


@pytest.mark.parametrize("names", [{""}, {3}])
def test_hf_config_kwargs_are_names(names):
    from mm_framework import plugin as mmp

    with pytest.raises(mmf.InternalError, match="^hf_config_kwargs must be non-empty names"):
        mmp.Capabilities(hf_config_kwargs=names)
    assert mmp.Capabilities(hf_config_kwargs=["patch_size"]).hf_config_kwargs == frozenset({"patch_size"})


def test_process_items_is_process_without_the_prompt():
    """``Pipeline.process_items`` (the video adapter's path): ``process``'s items, in input order,
    with no prompt laid out, so also for a request whose prompt the family cannot lay out
    (GLM-4V's video timestamps need the tokenizer's ids, which the preset lacks)."""
    import numpy as np

    installed = {f["name"] for f in mmf.list_families()}
    if not {"qwen_vl", "glm4v"} <= installed:
        pytest.skip("needs the qwen_vl and glm4v families")
    rng = np.random.default_rng(0)
    clip, image = rng.integers(0, 256, (4, 40, 60, 3), np.uint8), rng.integers(0, 256, (30, 50, 3), np.uint8)
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    inp = mmf.MmInput(images=[image], videos=[clip])
    got, want = pipe.process_items(inp), pipe.process(inp).items
    assert [it.modality for it in got] == ["image", "video"]
    for a, b in zip(got, want, strict=True):
        assert (a.modality, a.geometry, a.hash) == (b.modality, b.geometry, b.hash)
        assert a.feature.array.tobytes() == b.feature.array.tobytes()
    assert pipe.hf_video_outputs(got[1:])["pixel_values_videos"].tobytes() == want[1].feature.array.tobytes()
    glm = mmf.pipeline_from_spec(mmf.preset("glm4_1v_9b_thinking"))
    video = mmf.MmInput(videos=[mmf.VideoFrames(clip, fps=2.0)])
    with pytest.raises(mmf.UnsupportedError, match="video_timestamp_ids"):
        glm.process(video)
    stamps = {"video_timestamp_ids": {"0": [20], "1": [21]}}
    stamped = mmf.pipeline_from_spec({**mmf.preset("glm4_1v_9b_thinking"), **stamps})
    want = stamped.process(video).items
    (got,) = glm.process_items(video)
    assert got.feature.array.tobytes() == want[0].feature.array.tobytes() and got.geometry == want[0].geometry


def test_a_video_family_refusing_the_probe_clip_is_not_served():
    # GLM with a 5-frame temporal patch refuses the 4-frame clip the adapter asks the family
    # with: an UnsupportedError naming the family and the cause, not the MediaError itself.
    from mm_framework.hf.video_processor import AcceleratedVideoProcessor

    if "glm4v" not in {f["name"] for f in mmf.list_families()}:
        pytest.skip("the glm4v family is not installed")
    spec = {**mmf.preset("glm4_1v_9b_thinking"), "temporal_patch_size": 5, "video_sample_frames": False}
    with pytest.raises(mmf.UnsupportedError, match=r"family 'glm4v' refuses a 4-frame probe clip \(MediaError: "
                                                   r"item 0: video: t:4 must be larger than temporal_factor:5\)"):
        AcceleratedVideoProcessor(object(), spec)
