"""``mm_framework.hf.accelerate`` on Pixtral's image processors, live against transformers 5.24:
each served call gives the reference's ``BatchFeature`` (``pixel_values``, zero-padded to the
batch's largest image, and ``image_sizes``: keys, types, dtypes, shapes, bytes).

``PixtralProcessor`` calls its image processor with ``patch_size = patch_size *
spatial_merge_size`` (Mistral Small 3.1: 28 over the saved 14), so on a 10x10 image the bare
image processor gives 16x16 (Pixtral-12B) or 14x14 and the processor's call 28x28: the call's
``patch_size`` is served through the spec resolved with it (``Capabilities.hf_config_kwargs``),
and the whole processor's ``input_ids`` are unchanged. With ``do_rescale`` and ``do_normalize``
off (vLLM's ``mm_device_do_normalize``), the family's ``pixels="u8"``: uint8 from the
torchvision backend, float32 of the same values from the PIL one.

PIL backend always; the torchvision one when torchvision imports; ``return_tensors="pt"`` when
torch does.
"""

from __future__ import annotations

import importlib.util
import io

import numpy as np
import pytest

from mm_framework import hf
from mm_framework.testing import assert_same_batch

from . import pixtral_images
from . import pixtral_reference as ref

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

CLASSES = {"pil": "PixtralImageProcessorPil"}
if importlib.util.find_spec("torchvision") is not None:
    CLASSES["torchvision"] = "PixtralImageProcessor"
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TEKKEN = importlib.util.find_spec("mistral_common") is not None
NAMES = ["tiny_10x10.png", "odd_70x50.png", "portrait_333x501.png", "photo_1280x960.jpg", "rgba_640x480.png",
         "palette_P_500x375.png"]
U8 = {"do_rescale": False, "do_normalize": False}
CALLS = [{}, {"patch_size": 28}, {"patch_size": {"height": 32, "width": 32}}, {"patch_size": 28, **U8}]
if HAS_TORCH:
    CALLS += [{"patch_size": 28, "return_tensors": "pt"}, {"patch_size": 28, "return_tensors": "pt", **U8}]


def _images():
    return [Image.open(io.BytesIO(pixtral_images.make(n))) for n in NAMES]


def _ids(call):
    return ",".join(f"{k}={v}" for k, v in call.items()) or "defaults"


pytestmark = pytest.mark.usefixtures("mm_hf_stats")


@pytest.mark.parametrize("backend", list(CLASSES))
@pytest.mark.parametrize("preset", list(ref.PRESETS))
@pytest.mark.parametrize("call", CALLS, ids=_ids)
def test_served_calls_equal_the_processor(backend, preset, call):
    call = {"return_tensors": "np", **call}
    want = ref.image_processor(preset, backend)(images=_images(), **call)
    got = hf.accelerate(ref.image_processor(preset, backend), strict=True)(images=_images(), **call)
    assert_same_batch(want, got, ["pixel_values", "image_sizes"])
    assert hf.stats() == {"served": {CLASSES[backend]: 1}, "fallbacks": {}}


@pytest.mark.parametrize("backend", list(CLASSES))
def test_the_calls_patch_size_not_the_saved_one(backend):
    """The obstacle: one 10x10 image is 14x14 for the saved patch_size and 28x28 for the processor's."""
    acc = hf.accelerate(ref.image_processor("mistral_small_3_1", backend), strict=True)
    tiny = [Image.open(io.BytesIO(pixtral_images.make("tiny_10x10.png")))]
    assert np.asarray(acc(images=tiny, return_tensors="np")["image_sizes"]).tolist() == [[14, 14]]
    assert np.asarray(acc(images=tiny, return_tensors="np", patch_size=28)["image_sizes"]).tolist() == [[28, 28]]
    assert hf.stats() == {"served": {CLASSES[backend]: 2}, "fallbacks": {}}


@pytest.mark.parametrize("backend", list(CLASSES))
@pytest.mark.parametrize("call, reason", [
    ({"image_mean": [0.4, 0.4, 0.4]}, "option 'image_mean'"),
    # transformers takes a rectangular patch; the family's resolver refuses it.
    ({"patch_size": {"height": 16, "width": 32}}, "options {\"patch_size\": {\"height\": 16, \"width\": 32}}: "),
], ids=["image_mean", "rectangular_patch"])
def test_a_call_it_does_not_mirror_goes_to_the_processor(backend, call, reason):
    acc = hf.accelerate(ref.image_processor("pixtral_12b", backend), strict=True)
    call = {"return_tensors": "np", **call}
    want, got = ref.image_processor("pixtral_12b", backend)(images=_images(), **call), acc(images=_images(), **call)
    assert_same_batch(want, got)
    (key, count), = hf.stats()["fallbacks"].items()
    assert key.startswith(f"{CLASSES[backend]}: {reason}") and count == 1
    assert hf.stats()["served"] == {}


def test_a_value_json_does_not_hold_goes_to_the_processor():
    """A numpy integer ``patch_size``: handed back, and transformers' own refusal is what the caller sees."""
    acc = hf.accelerate(ref.image_processor("pixtral_12b"), strict=True)
    with pytest.raises(Exception, match="patch_size") as e:
        acc(images=_images()[:1], return_tensors="np", patch_size=np.int64(28))
    with pytest.raises(type(e.value)):
        ref.image_processor("pixtral_12b")(images=_images()[:1], return_tensors="np", patch_size=np.int64(28))
    assert hf.stats() == {"served": {}, "fallbacks": {
        "PixtralImageProcessorPil: options ['patch_size'] of types JSON does not hold": 1}}


@pytest.mark.skipif(not HAS_TEKKEN, reason="needs mistral-common (the Pixtral-12B Tekken vocabulary)")
@pytest.mark.parametrize("backend", list(CLASSES))
@pytest.mark.parametrize("preset", list(ref.PRESETS))
def test_the_whole_processor_is_unchanged(backend, preset):
    text = ref.render(preset, [("user", [("image", "a"), ("text", "Compare"), ("image", "b"), ("image", "c")])])
    images = _images()[:3]
    want = ref.processor(preset, backend)(text=[text], images=images, return_tensors="np")
    got = hf.accelerate(ref.processor(preset, backend), strict=True)(text=[text], images=_images()[:3],
                                                                      return_tensors="np")
    assert_same_batch(want, got, ["input_ids", "attention_mask", "pixel_values", "image_sizes"])
    # The [IMG] runs of each image row went through the tokenizer stand-in.
    assert hf.stats() == {"served": {CLASSES[backend]: 1, "TokenizersBackend": 1}, "fallbacks": {}}
