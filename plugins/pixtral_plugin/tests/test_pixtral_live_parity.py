"""Live parity against transformers 5.24 (skipped unless transformers imports).

On each image backend: ``"pil"`` against ``PixtralImageProcessorPil`` (no torch needed),
``"torchvision"`` (``{"backend": "torchvision"}``) against the torchvision
``PixtralImageProcessor`` (skipped, saying so, without torch and torchvision):

- ``pixel_values`` and ``image_sizes`` of every golden image and preset byte for byte
  (rejections included), and of noise images of tiny, thin, odd and large sizes;
- with ``mistral-common`` installed (the Pixtral-12B Tekken vocabulary), whole chat
  prompts against the real ``PixtralProcessor``: expanded ``input_ids``, the padded
  ``pixel_values``, ``image_sizes``, and the processor's pixel-free token count.

And the resized size of thousands of image sizes against transformers'
``get_resize_output_image_size`` (one function, the same source text in both modules).
"""

from __future__ import annotations

import importlib.util
import io

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from . import pixtral_images
from . import pixtral_reference as ref

pytest.importorskip("transformers")
pil_pixtral = pytest.importorskip(ref.PIL_MODULE)
from transformers.image_utils import ChannelDimension  # noqa: E402

HAS_TEKKEN = importlib.util.find_spec("mistral_common") is not None
HAS_TORCHVISION = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision"))
PRESETS = list(ref.PRESETS)
BACKENDS = [
    pytest.param("pil", id="pil"),
    pytest.param("torchvision", id="torchvision", marks=pytest.mark.skipif(
        not HAS_TORCHVISION, reason="the torchvision PixtralImageProcessor needs torch and torchvision")),
]
DIVERGENCES = {"grey16_640x480.png": "unsupported color mode"}
# The 12-megapixel decode is covered for one preset; the other is in the goldens.
HEAVY = {("huge_4000x3000.jpg", "mistral_small_3_1")}

_ips: dict[tuple[str, str], object] = {}


def hf_image_processor(preset: str, backend: str):
    if (preset, backend) not in _ips:
        _ips[preset, backend] = ref.image_processor(preset, backend)
    return _ips[preset, backend]


def factor(preset: str) -> int:
    spec = mmf.preset(preset)
    return spec["patch_size"] * spec["spatial_merge_size"]


def pipeline(preset: str, backend: str) -> mmf.Pipeline:
    return mmf.pipeline_from_spec({**mmf.preset(preset), "backend": backend})


def assert_image_matches(pipe: mmf.Pipeline, image, want) -> None:
    out = pipe.process(mmf.MmInput(images=[image], input_ids=[pipe.spec["image_token_id"]]))
    h, w = (int(v) for v in want["image_sizes"][0])
    assert out.items[0].aux["image_sizes"].array.tolist() == [h, w]
    got = out.items[0].feature.array
    assert got.shape == (3, h, w)
    assert got.tobytes() == np.ascontiguousarray(want["pixel_values"][0]).tobytes()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", list(pixtral_images.IMAGES))
def test_pixel_values_match_transformers(name, preset, backend):
    if (name, preset) in HEAVY:
        pytest.skip("12-megapixel input: checked by the committed goldens")
    data = pixtral_images.make(name)
    pipe = pipeline(preset, backend)
    request = mmf.MmInput(images=[data], input_ids=[pipe.spec["image_token_id"]])
    if name in DIVERGENCES:
        with pytest.raises(mmf.MediaError, match=DIVERGENCES[name]):
            pipe.process(request)
        return
    try:
        image = Image.open(io.BytesIO(data))
        want = hf_image_processor(preset, backend)([image], patch_size=factor(preset), return_tensors="np")
    except ValueError as e:
        assert "Size must contain" in str(e)
        with pytest.raises(mmf.MediaError, match="degenerates"):
            pipe.process(request)
        return
    assert_image_matches(pipe, data, want)


# (height, width) of noise images: tiny (stretched up), thin on either side, odd sizes around
# the patch and token multiples, exact fits and large images scaled down.
NOISE_SIZES = [(1, 1), (2, 3), (13, 15), (16, 16), (28, 28), (29, 17), (1, 1000), (999, 2), (5, 3001),
               (1024, 768), (1540, 1540), (1541, 1025), (2047, 1499), (3001, 511)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
def test_noise_images_match_transformers(preset, backend):
    """Noise puts every byte value through every filter tap, so a single rounding step of the
    resize or of the normalization that differs shows."""
    pipe = pipeline(preset, backend)
    rng = np.random.default_rng(24)
    for h, w in NOISE_SIZES:
        rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        want = hf_image_processor(preset, backend)([Image.fromarray(rgb)], patch_size=factor(preset),
                                                   return_tensors="np")
        assert_image_matches(pipe, rgb, want)


def _sizes() -> list[tuple[int, int]]:
    rng = np.random.default_rng(18)
    edges = [1, 2, 3, 13, 14, 15, 16, 17, 27, 28, 29, 511, 1023, 1024, 1025, 1539, 1540, 1541, 2047, 2048, 3079, 4096]
    pairs = [(h, w) for h in edges for w in edges]
    pairs += [tuple(int(v) for v in rng.integers(1, 6000, 2)) for _ in range(1500)]
    pairs += [(int(rng.integers(1, 8)), int(rng.integers(1000, 20000))) for _ in range(300)]
    return pairs


@pytest.mark.parametrize("edge,f", [(1024, 16), (1540, 28), (1000, 28), (512, 14), (1540, 14), (20, 16)])
def test_resized_size_matches_transformers(edge, f):
    from pixtral_plugin.sizing import resized_size

    problems = []
    for h, w in _sizes():
        shape = np.broadcast_to(np.uint8(0), (3, h, w))  # only .shape is read
        th, tw = pil_pixtral.get_resize_output_image_size(shape, (edge, edge), (f, f), ChannelDimension.FIRST)
        try:
            got = resized_size(h, w, edge, f)
        except mmf.MediaError:
            got = None
        if got != ((th, tw) if th > 0 and tw > 0 else None):
            problems.append(f"{h}x{w}: transformers {(th, tw)}, pixtral {got}")
    assert not problems, "\n".join(problems[:20])


# ----- whole prompts through the real PixtralProcessor -----------------------------------

PROMPTS = {
    "single": [("user", [("image", "photo_640x480.jpg"), ("text", "Describe this image.")])],
    "three": [("user", [("image", "odd_70x50.png"), ("text", "vs"), ("image", "rgba_640x480.png"),
                        ("image", "sliver_3000x3.png"), ("text", "?")])],
    "turns": [("user", [("image", "tiny_10x10.png"), ("text", "And?")]), ("assistant", [("text", "Small.")]),
              ("user", [("text", "Now "), ("image", "portrait_333x501.png")])],
    # Equal sizes: the torchvision backend resizes and normalizes them as one stacked batch.
    "same_size": [("user", [("image", "photo_640x480.jpg"), ("image", "lossy_640x480.webp"),
                            ("image", "cmyk_640x480.jpg"), ("text", "Which differ?")])],
}


@pytest.mark.skipif(not HAS_TEKKEN, reason="needs mistral-common (the Pixtral-12B Tekken vocabulary)")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("prompt", list(PROMPTS))
def test_prompt_matches_pixtral_processor(preset, prompt, backend):
    proc = ref.processor(preset, backend)
    turns = PROMPTS[prompt]
    text = ref.render(preset, turns)
    names = [v for _, content in turns for kind, v in content if kind == "image"]
    datas = [pixtral_images.make(n) for n in names]
    want = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in datas], return_tensors="np")
    prompt_ids = proc.tokenizer(text)["input_ids"]
    pipe = pipeline(preset, backend)
    out = pipe.process(mmf.MmInput(images=datas, input_ids=prompt_ids))
    assert out.input_ids.tolist() == np.asarray(want["input_ids"])[0].tolist()
    kw = out.model_kwargs()
    assert kw["image_sizes"].tolist() == np.asarray(want["image_sizes"]).tolist()
    assert kw["pixel_values"].tobytes() == np.ascontiguousarray(want["pixel_values"], dtype=np.float32).tobytes()
    counts = proc._get_num_multimodal_tokens(image_sizes=[Image.open(io.BytesIO(d)).size[::-1] for d in datas])
    for i, (w, h) in enumerate(Image.open(io.BytesIO(d)).size for d in datas):
        s, e = out.offsets[i]
        assert pipe.num_media_tokens(w, h) == e - s + 1
        if h not in (1, 3):  # transformers' count misreads those heights (docs/families/pixtral.md §6)
            assert counts["num_image_tokens"][i] == e - s + 2


@pytest.mark.skipif(not HAS_TEKKEN, reason="needs mistral-common (the Pixtral-12B Tekken vocabulary)")
@pytest.mark.parametrize("preset", PRESETS)
def test_placeholder_text_is_the_processors_image_token(preset):
    """The family's placeholder text is what the real tokenizer maps to its placeholder id,
    so a text prompt through that tokenizer gives the processor's ids."""
    proc = ref.processor(preset)
    pipe = mmf.pipeline_from_spec(mmf.preset(preset))
    caps = pipe.capabilities
    assert caps.placeholder_texts == {"image": proc.image_token}
    assert proc.tokenizer.convert_tokens_to_ids(proc.image_token) == caps.placeholders["image"] == proc.image_token_id
    turns = PROMPTS["three"]
    text = ref.render(preset, turns)
    datas = [pixtral_images.make(v) for _, content in turns for kind, v in content if kind == "image"]
    want = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in datas], return_tensors="np")
    out = pipe.process(mmf.MmInput(images=datas, text=text), tokenize=lambda t: proc.tokenizer(t)["input_ids"])
    assert out.input_ids.tolist() == np.asarray(want["input_ids"])[0].tolist()
