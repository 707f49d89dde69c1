"""qwen_vl per-item processor options (``IMAGE_OPTIONS``, ``VIDEO_OPTIONS``).

An option equals the pipeline built from the preset with its spec field replaced (features,
grid, ids, positions); image ``min_pixels``/``max_pixels`` equal transformers 5.24's
``Qwen2VLImageProcessorPil`` called with those kwargs, byte for byte, also for two items
of one request with different values; video ``fps``/``max_frames`` need a sampling spec.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import attrs
import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.kernels import smart_resize
from mm_framework.testing import assert_same_output, load_module, sample_image
from qwen_vl_plugin.vision_info import fetch_smart_resize

QWEN2, QWEN3 = mmf.preset("qwen2_5_vl"), mmf.preset("qwen3_vl")
# Sizes across the resize regimes: up- and downscaled, odd sides, already a multiple of 28.
SIZES = [(64, 48), (333, 211), (640, 480), (28 * 20, 28 * 10)]


def image(w: int, h: int, seed: int = 1) -> bytes:
    return sample_image(w, h, "PNG", seed)


def same(got: mmf.Output, want: mmf.Output, what: str) -> None:
    """Equal items, ids, offsets and positions; the spec named is the request's pipeline's."""
    assert_same_output(want, attrs.evolve(got, spec=want.spec), what)


# --- (a) an option is the spec field replaced ----------------------------------------------
@pytest.mark.parametrize("option, value", [("max_pixels", 28 * 28 * 16), ("max_pixels", 28 * 28 * 300),
                                           ("min_pixels", 28 * 28 * 400), ("min_pixels", 28 * 28)])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_image_option_equals_the_preset_with_that_field(size, option, value):
    data = image(*size)
    got = mmf.pipeline_from_spec(QWEN2).process(mmf.MmInput(images=[mmf.Image(data, **{option: value})]))
    want = mmf.pipeline_from_spec({**QWEN2, option: value}).process(mmf.MmInput(images=[data]))
    same(got, want, f"{option}={value} at {size}")


def test_two_items_with_different_options_are_each_their_own_pipeline():
    a, b = image(640, 480, 1), image(333, 211, 2)
    pipe = mmf.pipeline_from_spec(QWEN2)
    pad = QWEN2["image_token_id"]
    got = pipe.process(mmf.MmInput([mmf.Image(a, max_pixels=28 * 28 * 16), mmf.Image(b, min_pixels=28 * 28 * 300)],
                                   input_ids=[5, pad, 6, pad, 7]))
    items = [mmf.pipeline_from_spec({**QWEN2, k: v}).process(mmf.MmInput([src])).items[0]
             for src, k, v in ((a, "max_pixels", 28 * 28 * 16), (b, "min_pixels", 28 * 28 * 300))]
    assert list(got.items) == items
    counted = pipe.count_tokens(mmf.MmInput([mmf.Image(a, max_pixels=28 * 28 * 16),
                                             mmf.Image(b, min_pixels=28 * 28 * 300)], input_ids=[5, pad, 6, pad, 7]))
    assert counted.input_ids.tolist() == got.input_ids.tolist() and counted.positions == got.positions


def test_an_out_of_range_pixel_option_is_the_specs_refusal():
    pipe = mmf.pipeline_from_spec(QWEN2)
    with pytest.raises(mmf.SpecError) as e:
        pipe.process(mmf.MmInput([image(64, 48), mmf.Image(image(64, 48), max_pixels=100)]))
    assert e.value.item == 1
    assert str(e.value) == (
        "item 1: processor option max_pixels=100 for this image: qwen_vl spec: field 'max_pixels' must be at least "
        "(patch_size * merge_size)**2 = 784: smart_resize never makes a side shorter than 28, got 100"
    )
    # A max_pixels under the preset's min_pixels is refused like the same spec would be.
    with pytest.raises(mmf.SpecError) as e:
        mmf.pipeline_from_spec(QWEN3).process(mmf.MmInput([mmf.Image(image(64, 48), max_pixels=16384)]))
    assert str(e.value) == (
        "item 0: processor option max_pixels=16384 for this image: qwen_vl spec: field 'min_pixels' must not exceed "
        "max_pixels, got 65536 > 16384 (smart_resize would grow small images past max_pixels and shrink large ones "
        "below min_pixels)"
    )


# --- (a') the qwen-vl-utils mode (docs/chat.md, "qwen-vl-utils") ---------------------------------
QVU = {**QWEN2, "vision_info": "qwen_vl_utils", "alpha": "composite_rgba"}


@pytest.mark.parametrize("option, value, field", [
    ("max_pixels", 28 * 28 * 16, "fetch_max_pixels"), ("min_pixels", 28 * 28 * 400, "fetch_min_pixels"),
])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_an_image_bound_is_fetch_images_and_the_requests_the_processors(size, option, value, field):
    data = image(*size)
    pipe = mmf.pipeline_from_spec(QVU)
    got = pipe.process(mmf.MmInput(images=[mmf.Image(data, **{option: value})]))
    same(got, mmf.pipeline_from_spec({**QVU, field: value}).process(mmf.MmInput(images=[data])), f"item {option}")
    got = pipe.process(mmf.MmInput(images=[data], options={option: value}))
    same(got, mmf.pipeline_from_spec({**QVU, option: value}).process(mmf.MmInput(images=[data])), f"request {option}")


def test_an_exact_size_is_fetch_images_smart_resize_of_it():
    got = mmf.pipeline_from_spec(QVU).process(mmf.MmInput([mmf.Image(image(640, 480), resized_height=250,
                                                                      resized_width=420)]))
    assert got.items[0].aux["image_grid_thw"].array.tolist() == [1, 18, 30]  # 252x420
    tiny = mmf.pipeline_from_spec(QVU).count_tokens(mmf.MmInput([mmf.Image(image(640, 480), resized_height=5,
                                                                            resized_width=5)]))
    # fetch_image clamps the sides first (one 28x28 block); the processor's min_pixels (3136)
    # then grows that to 56x56: the second resize.
    assert tiny.items[0].geometry == mmf.Grid(1, 4, 4)


def test_the_qwen_vl_utils_fields_round_trip_and_need_the_mode():
    spec = mmf.pipeline_from_spec({**QVU, "resized_height": 100, "resized_width": 50}).spec
    assert {k: spec[k] for k in ("vision_info", "resized_height", "resized_width", "fetch_min_pixels")} == {
        "vision_info": "qwen_vl_utils", "resized_height": 100, "resized_width": 50, "fetch_min_pixels": None}
    assert mmf.pipeline_from_spec(spec).spec == spec
    assert "vision_info" not in mmf.pipeline_from_spec(QWEN2).spec
    with pytest.raises(mmf.SpecError, match="'fetch_max_pixels' is a qwen-vl-utils option"):
        mmf.pipeline_from_spec({**QWEN2, "fetch_max_pixels": 10**6})


def test_qwen_vl_utils_smart_resize_clamps_before_the_bounds():
    """Its thin-image rule (the short side rounded to 0 becomes one factor) against transformers'."""
    assert fetch_smart_resize(10, 600, 28, 3136, 12845056) == (28, 588)
    assert smart_resize(10, 600, 28, 3136, 12845056) == (28, 448)
    with pytest.raises(mmf.MediaError, match="shrinks to 0x"):
        fetch_smart_resize(10, 1500, 28, 3136, 28 * 28 * 4)


# --- (b) live parity with transformers' call-time kwargs ----------------------------------------
@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("transformers")
    gen = load_module(Path(__file__).parent / "golden" / "generate_qwen_vl.py", "qwen_vl_golden_generator")
    processors = {preset: gen.image_processor(preset, "pil") for preset in ("qwen2_5_vl", "qwen3_vl")}

    def call(preset: str, data: bytes, **kwargs) -> dict[str, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # min_pixels=/max_pixels= per call are deprecated
            out = processors[preset](images=[Image.open(io.BytesIO(data))], return_tensors="np", **kwargs)
        return {k: np.asarray(out[k]) for k in ("pixel_values", "image_grid_thw")}

    return call


def ours(preset: str, items: list[mmf.Item]) -> dict[str, np.ndarray]:
    out = mmf.pipeline_from_spec(mmf.preset(preset)).process(mmf.MmInput(items=items))
    return out.model_kwargs()


def assert_bytes_equal(got: dict, want: dict, what: str) -> None:
    assert np.asarray(got["image_grid_thw"]).tolist() == want["image_grid_thw"].tolist(), what
    pv = np.asarray(got["pixel_values"])
    assert pv.shape == want["pixel_values"].shape, what
    assert pv.tobytes() == want["pixel_values"].astype(np.float32).tobytes(), what


@pytest.mark.parametrize("preset", ["qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize("option, factor", [("max_pixels", 80), ("max_pixels", 300), ("min_pixels", 400)])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_option_equals_transformers_called_with_that_kwarg(reference, preset, option, factor, size):
    side = mmf.preset(preset)["patch_size"] * mmf.preset(preset)["merge_size"]
    value = side * side * factor
    data = image(*size)
    want = reference(preset, data, **{option: value})
    assert_bytes_equal(ours(preset, [mmf.Image(data, **{option: value})]), want, f"{preset} {option}={value} {size}")
    # The non-deprecated spelling of the same call.
    edge = {"min_pixels": "shortest_edge", "max_pixels": "longest_edge"}[option]
    other = {"shortest_edge": mmf.preset(preset)["min_pixels"], "longest_edge": mmf.preset(preset)["max_pixels"]}
    assert_bytes_equal(reference(preset, data, size={**other, edge: value}), want, "size= vs the pixel kwargs")


@pytest.mark.parametrize("preset", ["qwen2_5_vl", "qwen3_vl"])
def test_two_items_with_different_max_pixels_equal_two_reference_calls(reference, preset):
    side = mmf.preset(preset)["patch_size"] * mmf.preset(preset)["merge_size"]
    a, b, c = image(640, 480, 1), image(333, 211, 2), image(64, 48, 3)
    calls = [(a, side * side * 80), (b, side * side * 300), (c, None)]
    refs = [reference(preset, data) if v is None else reference(preset, data, max_pixels=v) for data, v in calls]
    want = {k: np.concatenate([r[k] for r in refs]) for k in ("pixel_values", "image_grid_thw")}
    items = [mmf.Image(data) if v is None else mmf.Image(data, max_pixels=v) for data, v in calls]
    assert_bytes_equal(ours(preset, items), want, f"{preset}: three items, their own max_pixels")


# --- (c) video options ----------------------------------------------------------------------
FRAMES = np.random.default_rng(7).integers(0, 256, (60, 48, 64, 3), dtype=np.uint8)  # 6 s at 10 fps


def clip(frames: np.ndarray = FRAMES, fps: int = 10) -> bytes:
    av = pytest.importorskip("av")
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for f in frames:
            out.mux(stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        out.mux(stream.encode())
    return buf.getvalue()


@pytest.mark.parametrize("options, fields", [
    ({"fps": 1.0}, {"video_fps": 1.0}),
    ({"max_frames": 6}, {"video_max_frames": 6}),
    ({"fps": 4.0, "max_frames": 8}, {"video_fps": 4.0, "video_max_frames": 8}),
    ({"min_frames": 8, "fps": 0.5}, {"video_min_frames": 8, "video_fps": 0.5}),
    ({"max_pixels": 32 * 32 * 4}, {"video_max_pixels": 32 * 32 * 4}),
])
def test_video_option_equals_the_preset_with_that_field(options, fields):
    data = clip()
    image_data = image(64, 48)
    got = mmf.pipeline_from_spec(QWEN3).process(mmf.MmInput([image_data], videos=[mmf.Video(data, **options)]))
    want = mmf.pipeline_from_spec({**QWEN3, **fields}).process(mmf.MmInput([image_data], videos=[data]))
    same(got, want, f"video options {options}")
    plain = mmf.pipeline_from_spec(QWEN3).process(mmf.MmInput([image_data], videos=[data]))
    assert got.items[1].geometry != plain.items[1].geometry  # the option did something
    assert got.items[0] == plain.items[0]  # the image took none of the video's options


def test_request_options_replace_each_modalitys_own_field():
    # max_pixels is the image's max_pixels and the video's video_max_pixels; fps only the video's.
    data, image_data = clip(), image(64, 48)
    pipe = mmf.pipeline_from_spec(QWEN3)
    got = pipe.process(mmf.MmInput([image_data], videos=[data], options={"fps": 1.0, "max_pixels": 32 * 32 * 64}))
    fields = {"video_fps": 1.0, "video_max_pixels": 32 * 32 * 64, "max_pixels": 32 * 32 * 64}
    want = mmf.pipeline_from_spec({**QWEN3, **fields})
    same(got, want.process(mmf.MmInput([image_data], videos=[data])), "request options for both modalities")


def test_a_sampling_option_without_sampling_is_refused():
    data = clip()
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    with pytest.raises(mmf.SpecError) as e:
        pipe.process(mmf.MmInput([image(64, 48)], videos=[mmf.Video(data, fps=2.0)]))
    assert e.value.item == 1
    assert str(e.value) == ("item 1: processor option fps=2.0 for this video: qwen_vl spec: field 'video_fps' has no "
                            "effect when video_sample_frames is false; leave it out")
    with pytest.raises(mmf.SpecError) as e:
        mmf.pipeline_from_spec(QWEN3).process(mmf.MmInput(videos=[mmf.Video(data, fps=0)]))
    assert str(e.value) == ("item 0: processor option fps=0 for this video: qwen_vl spec: field 'video_fps' must be "
                            "finite and greater than zero, got 0")


def test_an_image_only_option_name_on_a_video_is_refused():
    with pytest.raises(mmf.SpecError) as e:
        mmf.pipeline_from_spec(QWEN3).process(mmf.MmInput(videos=[mmf.Video(clip(), colour=1)]))
    assert str(e.value) == ("item 0: processor option 'colour' is not one family 'qwen_vl' takes for video items; it "
                            "takes: do_sample_frames, fps, max_frames, max_pixels, min_frames, min_pixels")
