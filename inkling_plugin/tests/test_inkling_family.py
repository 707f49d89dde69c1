"""The ``inkling`` family through the installed entry point and ``pipeline_from_spec``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs
import numpy as np
import pytest
from PIL import Image

import inkling_plugin as inkling
from inkling_plugin.family import InklingFamily
import mm_framework as mmf
from mm_framework import plugin as mmp

from .inkling_reference import make_photo_like, ref_decode_rescale, ref_patchify, ref_scaled_dims
from mm_framework import par
from mm_framework import Grid, MmInput, Rope1D
from mm_framework.plugin import DecodedImage, DecodeOptions
from mm_framework import LayoutError, LimitExceededError, MediaError, SpecError
from mm_framework import content_hash
from mm_framework.kernels import resize_wants_source
from mm_framework.testing import FamilyConformance, sample_image

SPEC = {"family": "inkling", "patch_size": 40, "rescale_frac": 2.0, "rescale_cap": 2048, "image_token_id": -101}


class TestInklingConformance(FamilyConformance):
    optional_fields = frozenset({
        "patch_size", "rescale_frac", "rescale_cap", "image_token_id", "audio_token_id", "sampling_rate",
        "feature_size", "audio_token_duration_s", "window_size_multiplier", "n_fft", "num_dmel_bins",
        "dmel_min_value", "dmel_max_value",
    })
    # Request cases whose expectations come from the independent reference (generate_golden.py).
    golden_dir = Path(__file__).parent / "golden" / "cases"

    @pytest.fixture
    def family_spec(self):
        return dict(SPEC)

    @pytest.fixture
    def golden_stages(self):
        return _stages


def _stages(pipe: mmf.Pipeline, inp: MmInput) -> dict:
    """The audio cases' ``audio_samples[i]``: decoded and resampled to the family's rate, as
    ``load_audio`` gives them to the processor (image cases record no stages)."""
    from mm_framework import kernels

    out, media = pipe.decode(inp)
    rate = pipe.spec["sampling_rate"]
    clips = [m for it, m in zip(out.items, media) if it.modality == "audio"]
    return {f"audio_samples[{k}]": kernels.resample(m.samples, m.sample_rate, rate) for k, m in enumerate(clips)}


@pytest.fixture
def threads():
    yield par.set_threads
    par.set_threads(None)


def family_of(spec: dict) -> InklingFamily:
    return InklingFamily({k: v for k, v in spec.items() if k != "family"})


def decoded(pipe: mmf.Pipeline, data: bytes) -> DecodedImage:
    """``data`` decoded as ``pipe`` decodes it for its family."""
    return pipe.decode(MmInput(images=[data]))[1][0]


def png(h: int, w: int, seed: int = 0, mode: str = "RGB") -> bytes:
    im = Image.fromarray(make_photo_like(h, w, seed), "RGB")
    if mode != "RGB":
        im = im.convert(mode)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


# ----- discovery and the spec ---------------------------------------------------------


def test_installed_through_the_entry_point():
    fams = {f["name"]: f for f in mmf.list_families()}
    assert fams["inkling"]["distribution"] == "mm-framework-inkling"
    assert fams["inkling"]["plugin"] == "inkling"


def test_defaults_are_the_processor_defaults():
    pipe = mmf.pipeline_from_spec({"family": "inkling"})
    fam = InklingFamily({})
    assert (fam.patch_size, fam.rescale_frac, fam.rescale_cap, fam.image_token_id) == (40, 2.0, 2048, -101)
    assert attrs.evolve(pipe.decode_options, max_pixels=None) == DecodeOptions(alpha="drop", exif_transpose=False)
    assert pipe.spec == {
        "family": "inkling", "patch_size": 40, "rescale_frac": 2.0, "rescale_cap": 2048, "image_token_id": -101,
        "audio_token_id": 200053, "sampling_rate": 16000, "feature_size": 80, "audio_token_duration_s": 0.05,
        "window_size_multiplier": 2.0, "n_fft": 1600, "num_dmel_bins": 16, "dmel_min_value": -7.0,
        "dmel_max_value": 2.0,
    }


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("patch_size", 0, "field 'patch_size' must be greater than zero"),
        ("patch_size", -40, "field 'patch_size' must be greater than zero"),
        ("patch_size", 40.0, "field 'patch_size' must be an integer"),
        ("patch_size", "40", "field 'patch_size' must be an integer"),
        ("patch_size", None, "field 'patch_size' must be an integer"),
        ("patch_size", True, "field 'patch_size' must be an integer"),
        # One patch larger than the core's decode bound (178956970 pixels); every image is
        # at least one patch.
        ("patch_size", 13378, "field 'patch_size' must be <= 13377"),
        ("rescale_frac", 0, "field 'rescale_frac' must be finite and greater than zero"),
        ("rescale_frac", -1.5, "field 'rescale_frac' must be finite and greater than zero"),
        ("rescale_frac", float("nan"), "field 'rescale_frac' must be finite"),
        ("rescale_frac", float("inf"), "field 'rescale_frac' must be finite"),
        ("rescale_frac", "2.0", "field 'rescale_frac' must be a number"),
        ("rescale_frac", False, "field 'rescale_frac' must be a number"),
        ("rescale_frac", 1.0, "field 'rescale_cap' requires rescale_frac > 1"),
        ("rescale_frac", None, "field 'rescale_cap' requires rescale_frac > 1"),
        ("rescale_cap", 0, "field 'rescale_cap' must be greater than zero"),
        ("rescale_cap", 2048.5, "field 'rescale_cap' must be an integer"),
        ("rescale_cap", "2048", "field 'rescale_cap' must be an integer"),
        ("image_token_id", "-101", "field 'image_token_id' must be an integer"),
        ("image_token_id", -101.0, "field 'image_token_id' must be an integer"),
        ("image_token_id", 1 << 63, "field 'image_token_id' must fit in int64"),
        ("image_token_id", -(1 << 63) - 1, "field 'image_token_id' must fit in int64"),
    ],
)
def test_bad_field_is_rejected_by_name(field, value, match):
    with pytest.raises(SpecError, match=f"^inkling spec: {match}"):
        mmf.pipeline_from_spec({**SPEC, field: value})


def test_unknown_field_is_rejected():
    with pytest.raises(SpecError, match="unknown field 'merge_size'; known fields: "):
        mmf.pipeline_from_spec({"family": "inkling", "merge_size": 2})


def test_rescale_can_be_disabled_and_cap_dropped():
    off = mmf.pipeline_from_spec({"family": "inkling", "rescale_frac": None, "rescale_cap": None})
    assert off.num_media_tokens(53, 37) == 2
    uncapped = mmf.pipeline_from_spec({"family": "inkling", "rescale_frac": 3.0, "rescale_cap": None})
    assert uncapped.num_media_tokens(1000, 10) == 1 * (3000 // 40 + 1)
    down = mmf.pipeline_from_spec({"family": "inkling", "rescale_frac": 0.5, "rescale_cap": None})
    assert down.num_media_tokens(400, 200) == 3 * 6
    assert json.loads(json.dumps(off.spec)) == off.spec


# ----- end to end ---------------------------------------------------------------------


def test_request_end_to_end():
    pipe = mmf.pipeline_from_spec({"family": "inkling"})
    images = [png(37, 53, 1), png(90, 120, 2)]
    ids = [1, -101, 2, 3, -101, 4]
    out = pipe.process(MmInput(images=images, input_ids=ids))
    counts = []
    for data, item in zip(images, out.items, strict=True):
        arr = ref_decode_rescale(data, 2.0, 2048)
        want = ref_patchify(arr, 40)
        assert item.feature.dtype == "bf16" and item.feature.array.dtype == np.uint16
        assert item.feature.array.tobytes() == want.tobytes() and item.feature.shape == want.shape
        nph, npw = -(-arr.shape[0] // 40), arr.shape[1] // 40 + 1
        assert item.aux["patch_grid"].array.tolist() == [nph, npw]
        assert item.aux["image_size"].array.tolist() == list(arr.shape[:2])
        assert item.hash == content_hash(data)
        counts.append(nph * npw)
    n0, n1 = counts
    assert out.input_ids.tolist() == [1] + [-101] * n0 + [2, 3] + [-101] * n1 + [4]
    assert out.offsets == ((1, n0), (n0 + 3, n0 + 2 + n1))
    assert out.positions == Rope1D()

    kw = out.model_kwargs()
    assert sorted(kw) == ["image_sizes", "num_patches", "patch_grids", "vision_patches"]
    assert kw["vision_patches"].dtype == np.uint16 and kw["vision_patches"].shape == (n0 + n1, 40, 40, 3)
    assert kw["vision_patches"].tobytes() == out.items[0].feature.array.tobytes() + out.items[1].feature.array.tobytes()
    assert kw["num_patches"].tolist() == [n0, n1]
    assert kw["patch_grids"].dtype == np.int64 and kw["patch_grids"].shape == (2, 2)
    assert kw["image_sizes"].tolist() == [[74, 106], [180, 240]]


def test_feature_equals_the_library_function():
    data = png(61, 87, 3)
    out = mmf.pipeline_from_spec(SPEC).process(MmInput(images=[data], input_ids=[-101]))
    h, w, bits = inkling.decode_patchify(data, 40, 2.0, 2048)
    assert out.items[0].feature.array.tobytes() == bits.tobytes()
    assert out.items[0].aux["image_size"].array.tolist() == [h, w]


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
@pytest.mark.parametrize("spec", [SPEC, {"family": "inkling", "rescale_frac": None, "rescale_cap": None}])
def test_lent_source_is_consumed_and_changes_nothing(mode, spec):
    pipe, fam = mmf.pipeline_from_spec(spec), family_of(spec)
    data = png(61, 87, 3, mode)
    # One is lent exactly when the resize starts from it (Pillow, portable kernels).
    lent = mmp.take_source(decoded(pipe, data))
    assert (lent is not None) == resize_wants_source("pil_lanczos")
    media = decoded(pipe, data)
    item = fam.mm_process_item(media=media)
    assert mmp.take_source(media) is None  # released by the resize (or dropped when none)
    # The same item from a plain decoded image (no source to start from): byte-identical.
    again = fam.mm_process_item(media=DecodedImage(rgb=media.rgb))
    assert item.feature == again.feature and item.aux == again.aux


def test_geometry_is_the_patch_grid():
    spec = {"family": "inkling", "rescale_frac": None, "rescale_cap": None}
    media = decoded(mmf.pipeline_from_spec(spec), png(41, 80))
    assert family_of(spec).mm_process_item(media=media).geometry == Grid(1, 2, 3)


def test_custom_token_id_and_patch_size():
    pipe = mmf.pipeline_from_spec({"family": "inkling", "patch_size": 16, "image_token_id": 7})
    out = pipe.process(MmInput(images=[png(34, 50)], input_ids=[5, 7, 6]))
    n = pipe.num_media_tokens(50, 34)
    assert n == (-(-68 // 16)) * (100 // 16 + 1)
    assert out.input_ids.tolist() == [5] + [7] * n + [6]
    assert out.items[0].feature.shape == (n, 16, 16, 3)


def test_placeholder_mismatch_is_a_layout_error():
    pipe = mmf.pipeline_from_spec(SPEC)
    with pytest.raises(LayoutError, match="placeholder"):
        pipe.process(MmInput(images=[png(20, 20)], input_ids=[1, 2]))


def test_alpha_is_dropped_not_composited():
    rgba = Image.fromarray(
        np.dstack([make_photo_like(48, 64, 4), np.full((48, 64), 10, np.uint8)]), "RGBA"
    )
    buf = io.BytesIO()
    rgba.save(buf, "PNG")
    pipe = mmf.pipeline_from_spec({"family": "inkling", "rescale_frac": None, "rescale_cap": None})
    out = pipe.process(MmInput(images=[buf.getvalue()], input_ids=[-101]))
    assert out.items[0].feature.array.tobytes() == ref_patchify(make_photo_like(48, 64, 4), 40).tobytes()


def test_exif_orientation_is_not_applied():
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW" when honoured: 60x30 would become 30x60
    buf = io.BytesIO()
    Image.fromarray(make_photo_like(30, 60, 5), "RGB").save(buf, "JPEG", exif=exif.tobytes())
    pipe = mmf.pipeline_from_spec({"family": "inkling", "rescale_frac": None, "rescale_cap": None})
    out = pipe.process(MmInput(images=[buf.getvalue()], input_ids=[-101]))
    assert out.items[0].aux["image_size"].array.tolist() == [30, 60]


# ----- pixel-free token counts -----------------------------------------------------------

SETTINGS = [
    {"family": "inkling"},
    {"family": "inkling", "patch_size": 16, "rescale_frac": 1.5, "rescale_cap": 300},
    {"family": "inkling", "patch_size": 14, "rescale_frac": 0.5, "rescale_cap": None},
    {"family": "inkling", "rescale_frac": None, "rescale_cap": None},
]


@pytest.mark.parametrize("spec", SETTINGS, ids=["defaults", "ps16-1.5-300", "ps14-0.5", "no-rescale"])
def test_num_media_tokens_equals_real_counts(spec):
    pipe, fam = mmf.pipeline_from_spec(spec), family_of(spec)
    rng = np.random.default_rng(11)
    sizes = [(1, 1), (40, 40), (80, 40), (39, 41), (1, 300), (300, 1)] + [
        tuple(int(v) for v in rng.integers(1, 260, 2)) for _ in range(14)
    ]
    for w, h in sizes:
        predicted = pipe.num_media_tokens(w, h)
        out = pipe.process(MmInput(images=[sample_image(w, h, seed=w + h)], input_ids=[3, fam.image_token_id]))
        s, e = out.offsets[0]
        assert predicted == e - s + 1 == out.items[0].feature.shape[0], (spec, w, h)
        w2, h2 = ref_scaled_dims(w, h, fam.rescale_frac, fam.rescale_cap)
        assert predicted == -(-h2 // fam.patch_size) * (w2 // fam.patch_size + 1)


def test_num_media_tokens_over_many_sizes_matches_the_formula():
    pipe = mmf.pipeline_from_spec({"family": "inkling"})
    for w in range(1, 3000, 37):
        for h in range(1, 3000, 53):
            w2, h2 = ref_scaled_dims(w, h, 2.0, 2048)
            assert pipe.num_media_tokens(w, h) == -(-h2 // 40) * (w2 // 40 + 1)


@pytest.mark.parametrize("w,h", [(0, 10), (10, 0), (-1, 5), (2.5, 3)])
def test_num_media_tokens_rejects_bad_sizes(w, h):
    with pytest.raises(MediaError):
        mmf.pipeline_from_spec(SPEC).num_media_tokens(w, h)


def test_unbounded_rescale_is_refused_consistently():
    pipe = mmf.pipeline_from_spec({"family": "inkling", "rescale_frac": 1000.0, "rescale_cap": None})
    with pytest.raises(LimitExceededError):
        pipe.num_media_tokens(100, 100)
    with pytest.raises(LimitExceededError, match="item 0: "):
        pipe.process(MmInput(images=[png(100, 100)], input_ids=[-101]))


# ----- determinism ---------------------------------------------------------------------


def test_large_request_identical_across_thread_modes(threads):
    # 700x500 grows to 1400x1000: big enough that patchify splits into parallel bands.
    images = [png(500, 700, 1), png(37, 53, 2), png(300, 200, 3)]
    pipe = mmf.pipeline_from_spec(SPEC)
    ids = [1, -101, -101, 2, -101]
    outs = []
    for mode in ("inline", 1, 4):
        threads(mode)
        outs.append(pipe.process(MmInput(images=images, input_ids=ids)))
    for other in outs[1:]:
        assert other.input_ids.tolist() == outs[0].input_ids.tolist()
        for a, b in zip(outs[0].items, other.items, strict=True):
            assert a.feature == b.feature and a.hash == b.hash
            assert all(a.aux[k] == b.aux[k] for k in a.aux)


def test_placeholder_text_only_for_the_vocabularys_image_token():
    # SGLang's Inkling tokenizer inserts the protocol id -101 itself: no text maps to it.
    # The audio placeholder defaults to the vocabulary's own token, whose text is known.
    assert mmf.pipeline_from_spec({"family": "inkling"}).capabilities.placeholder_texts == {
        "audio": "<|unused_200053|>"}
    caps = mmf.pipeline_from_spec({"family": "inkling", "image_token_id": 200054, "audio_token_id": 7}).capabilities
    assert caps.placeholder_texts == {"image": "<|unused_200054|>"}
    assert caps.placeholders == {"image": 200054, "audio": 7}


def test_the_vocabularys_image_token_is_transformers_inkling_config():
    from inkling_plugin.family import INKLING_IMAGE_TOKEN

    config = pytest.importorskip("transformers.models.inkling.configuration_inkling")
    assert config.InklingConfig().image_token_id == INKLING_IMAGE_TOKEN[0]
    from inkling_plugin.audio import INKLING_AUDIO_TOKEN

    assert config.InklingConfig().audio_token_id == INKLING_AUDIO_TOKEN[0]
