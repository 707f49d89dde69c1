"""The llava_onevision family beyond the conformance suite: tensor layout, model kwargs,
the two normalization paths, and the golden cases' family-specific records (per-item plans
and the request's model kwargs; transformers' intermediate uint8 images are the stages the
conformance replay compares)."""

from __future__ import annotations

from pathlib import Path

from . import llava_onevision_images
import numpy as np
import pytest
from blake3 import blake3

import mm_framework as mmf
from mm_framework import plugin as mmp
from llava_onevision_plugin import LlavaOnevisionFamily, pixels
from llava_onevision_plugin.anyres import AnyresPlan
from mm_framework.kernels import ChannelNorm, channel_norm_pil
from mm_framework.testing import load_cases, sample_image

PRESET = "llava_onevision_qwen2_7b_ov"
IMAGE = 151646
GOLDEN = Path(__file__).parent / "golden"
CASES = {c.name: c for c in load_cases(GOLDEN / "cases")}


def digest(a: np.ndarray) -> str:
    return blake3(np.ascontiguousarray(a).tobytes()).hexdigest()


def family_of(spec):
    """The family object ``spec`` builds, called directly (its hooks without the engine)."""
    return LlavaOnevisionFamily({k: v for k, v in spec.items() if k != "family"})


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(mmf.preset(PRESET))


def test_item_tensors(pipe):
    out = pipe.process(mmf.MmInput(images=[sample_image(640, 480, "JPEG", 4)], input_ids=[1, IMAGE, 2]))
    (item,) = out.items
    assert item.feature.dtype == "f32" and item.feature.shape == (5, 3, 384, 384)
    assert item.aux["image_sizes"].dtype == "i64" and item.aux["image_sizes"].array.tolist() == [480, 640]
    s, e = out.offsets[0]
    assert (s, e) == (1, 2929) and out.input_ids[1 : e + 1].tolist() == [IMAGE] * 2929
    assert out.input_ids.tolist()[-1] == 2 and isinstance(out.positions, mmf.Rope1D)
    assert pipe.num_media_tokens(640, 480) == 2929


def test_processed_size_is_the_pinpoint_canvas(pipe):
    # 640x480 picks the 768x768 pinpoint (H x W): the 4 crops are cut from that canvas.
    inp = mmf.MmInput(images=[sample_image(640, 480, "JPEG", 4)], input_ids=[1, IMAGE, 2])
    for out in (pipe.process(inp), pipe.count_tokens(inp)):
        (item,) = out.items
        assert (item.size, item.processed_size, item.geometry.best) == ((640, 480), (768, 768), (768, 768))
    plan = pipe.plan_item(1000, 300)
    assert plan.size == (1152, 384) == plan.geometry.canvas and plan.geometry.grid == (1, 3)


def test_model_kwargs_pad_like_transformers(pipe):
    images = [sample_image(640, 480, "PNG", 5), sample_image(20, 30, "PNG", 6)]
    out = pipe.process(mmf.MmInput(images=images, input_ids=[IMAGE, 9, IMAGE]))
    kw = out.model_kwargs()
    assert sorted(kw) == ["batch_num_images", "image_sizes", "pixel_values"]
    pv = kw["pixel_values"]
    assert pv.dtype == np.float32 and pv.shape == (2, 5, 3, 384, 384)
    assert np.array_equal(pv[0], out.items[0].feature.array)
    assert np.array_equal(pv[1, :2], out.items[1].feature.array) and not pv[1, 2:].any()
    assert kw["image_sizes"].dtype == np.int64 and kw["image_sizes"].tolist() == [[480, 640], [30, 20]]
    assert kw["batch_num_images"].dtype == np.int64 and kw["batch_num_images"].tolist() == [1, 1]


def test_model_kwargs_of_no_items(pipe):
    kw = family_of(pipe.spec).mm_model_kwargs(items=[])
    assert kw["pixel_values"].shape == (0, 0, 3, 384, 384) and kw["image_sizes"].shape == (0, 2)
    assert kw["batch_num_images"].shape == (0,)


def test_padding_is_table_zero(pipe):
    # 640x480 sits on a 768x768 canvas with 96 rows of zero padding above and below.
    out = pipe.process(mmf.MmInput(images=[sample_image(640, 480, "PNG", 7)], input_ids=[IMAGE]))
    crops = out.items[0].feature.array[1:]
    assert (crops[0, :, :96] == -1.0).all() and (crops[3, :, -96:] == -1.0).all()
    assert (crops[0, :, 96:] != -1.0).any()


def test_gather_path_equals_the_program_path(pipe):
    fam = family_of(pipe.spec)
    assert len(fam._norm.steps) == 2, "the checkpoint's table has an exact two-pass f32 program"
    assert fam._norm.lut.tobytes() == channel_norm_pil((0.5,) * 3, (0.5,) * 3).lut.tobytes()
    rgb = np.random.default_rng(3).integers(0, 256, (300, 500, 3), dtype=np.uint8)
    plan = fam.plan(500, 300)
    padded = pixels.canvas(pixels.fitted_image(rgb, plan, "pil_bicubic", None), plan)
    base = pixels.base_image(rgb, 384, "pil_bicubic", None)
    fast = pixels.patch_stack(base, padded, plan, 384, fam._norm)
    gather = pixels.patch_stack(base, padded, plan, 384, ChannelNorm(fam._norm.lut))
    assert fast.tobytes() == gather.tobytes()
    assert np.array_equal(fast[0, 1], fam._norm.lut[1][base[..., 1]])


def test_clip_statistics_keep_the_three_pass_program():
    clip = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
    fam = family_of({**mmf.preset(PRESET), **clip})
    want = channel_norm_pil(clip["image_mean"], clip["image_std"])
    assert fam._norm.lut.tobytes() == want.lut.tobytes() and len(fam._norm.steps) == len(want.steps) == 3


def test_geometry_is_the_plan(pipe):
    fam = family_of(pipe.spec)
    item = fam.mm_process_item(media=pipe.decode(mmf.MmInput(images=[sample_image(33, 61, "PNG", 8)]))[1][0])
    assert isinstance(item.geometry, AnyresPlan) and item.geometry.tokens == pipe.num_media_tokens(33, 61)
    with pytest.raises(mmf.InternalError, match="AnyresPlan"):
        fam.mm_layout(input_ids=np.array([IMAGE]), geometries=[mmf.Tiles(2)])


STAGED = [n for n in CASES if "multi" in n or "path_" in n or "photo_1024" in n or "variant" in n]


@pytest.mark.parametrize("name", STAGED)
def test_golden_plans_and_model_kwargs(name):
    """transformers' plans and model kwargs (its intermediate images are stages the
    conformance replay compares)."""
    case = CASES[name]
    p, fam = mmf.pipeline_from_spec(case.doc["spec"]), family_of(case.doc["spec"])
    datas = case.images(llava_onevision_images.make)
    records = case.doc["llava_onevision"]["items"]
    for k, (data, rec) in enumerate(zip(datas, records)):
        rgb = mmp.decode_rgb(data, p.decode_options).rgb
        plan = fam.plan(rgb.shape[1], rgb.shape[0])
        got = {"size_hw": [plan.height, plan.width], "best_resolution": list(plan.best),
               "resized_hw": list(plan.fitted), "patches": plan.patches, "tokens": plan.tokens}
        assert got == {key: rec[key] for key in got}, f"{name}: plan of image {k}"
    out = p.process(mmf.MmInput(images=datas, input_ids=case.doc["prompt_ids"]))
    for it, rec in zip(out.items, records):
        flat = it.feature.array.reshape(-1)
        assert flat[rec["probe"]["index"]].tolist() == rec["probe"]["values"]
    want = case.doc["llava_onevision"]["model_kwargs"]
    kw = out.model_kwargs()
    assert list(kw["pixel_values"].shape) == want["pixel_values"]["shape"]
    assert digest(kw["pixel_values"]) == want["pixel_values"]["blake3"]
    assert kw["image_sizes"].tolist() == want["image_sizes"]
    assert kw["batch_num_images"].tolist() == want["batch_num_images"]


@pytest.mark.parametrize("path", sorted((GOLDEN / "rejections").glob("*/case.json")), ids=lambda p: p.parent.name)
def test_golden_rejections(path):
    (case,) = [c for c in load_cases(path.parent.parent) if c.path == path.parent]
    err = case.doc["expected_error"]
    p = mmf.pipeline_from_spec(case.doc["spec"])
    with pytest.raises(getattr(mmf, err["type"]), match=err["match"]) as e:
        p.process(mmf.MmInput(images=case.images(llava_onevision_images.make), input_ids=case.doc["prompt_ids"]))
    assert e.value.item == err["item"]


def test_backends_share_the_plan_and_differ_in_pixels_only(pipe):
    """The backend changes the resize and normalize arithmetic alone (the torchvision one's
    parity is test_llava_onevision_live_parity.py): ids, offsets and sizes agree."""
    tv = mmf.pipeline_from_spec({**mmf.preset(PRESET), "backend": "torchvision"})
    data = [sample_image(500, 300, seed=7)]
    a, b = (p.process(mmf.MmInput(images=data, input_ids=[1, IMAGE, 2])) for p in (pipe, tv))
    assert a.input_ids.tolist() == b.input_ids.tolist() and a.offsets == b.offsets
    assert a.items[0].aux["image_sizes"].array.tolist() == b.items[0].aux["image_sizes"].array.tolist()
    assert a.items[0].feature.array.shape == b.items[0].feature.array.shape
    # Resized into its pinpoint and to the base size: the two bicubics round differently.
    assert not np.array_equal(a.items[0].feature.array, b.items[0].feature.array)
    assert not tv.decode_options.keep_source  # the ATen clone resizes from the array
