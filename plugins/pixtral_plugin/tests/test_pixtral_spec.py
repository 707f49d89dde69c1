"""Every rejection of the ``pixtral`` spec, and the presets."""

from __future__ import annotations

import json

import pytest

import mm_framework as mmf
from pixtral_plugin import PRESETS, parse_spec
from pixtral_plugin.spec import MAX_EDGE

BASE = {k: v for k, v in PRESETS["pixtral_12b"].items() if k != "family"}


def spec(**changes):
    return {**BASE, **changes}


def rejected(params, field, match=None) -> str:
    """The message of the SpecError ``params`` give, checked to name ``field``."""
    with pytest.raises(mmf.SpecError, match=match) as e:
        parse_spec(params)
    assert f"field {field!r}" in str(e.value), str(e.value)
    assert str(e.value).startswith("pixtral spec:")
    return str(e.value)


def test_presets_are_valid_and_complete():
    assert set(PRESETS) == {"pixtral_12b", "mistral_small_3_1"}
    for name, doc in PRESETS.items():
        assert parse_spec({k: v for k, v in doc.items() if k != "family"}).to_dict() == doc
        assert mmf.preset(name) == doc
        json.dumps(doc)


def test_preset_values_are_the_checkpoints():
    a, b = mmf.preset("pixtral_12b"), mmf.preset("mistral_small_3_1")
    assert (a["patch_size"], a["spatial_merge_size"], a["longest_edge"]) == (16, 1, 1024)
    assert (b["patch_size"], b["spatial_merge_size"], b["longest_edge"]) == (14, 2, 1540)
    for d in (a, b):
        assert (d["image_token_id"], d["image_break_token_id"], d["image_end_token_id"]) == (10, 12, 13)
        assert (d["backend"], d["alpha"], d["exif_transpose"], d["pixels"]) == ("pil", "composite", False, "f32")


OPTIONAL = ("backend", "alpha", "exif_transpose", "pixels")


def test_optional_fields_default():
    s = parse_spec({k: v for k, v in BASE.items() if k not in OPTIONAL})
    assert (s.backend, s.alpha, s.exif_transpose, s.pixels) == ("pil", "composite", False, "f32")
    assert s.factor == 16


def test_torchvision_backend_is_accepted_and_kept():
    s = parse_spec(spec(backend="torchvision"))
    assert s.backend == "torchvision" and s.to_dict()["backend"] == "torchvision"
    assert mmf.pipeline_from_spec({**PRESETS["mistral_small_3_1"], "backend": "torchvision"}).spec["backend"] == (
        "torchvision")


def test_not_a_mapping():
    with pytest.raises(mmf.SpecError, match="expected an object"):
        parse_spec([1, 2])


@pytest.mark.parametrize("field", sorted(BASE))
def test_missing_required_field(field):
    params = {k: v for k, v in BASE.items() if k != field}
    if field in OPTIONAL:
        parse_spec(params)
        return
    with pytest.raises(mmf.SpecError, match=f"missing required field '{field}'"):
        parse_spec(params)


def test_unknown_field():
    with pytest.raises(mmf.SpecError, match="unknown field 'patch'"):
        parse_spec(spec(patch=16))


@pytest.mark.parametrize("field", ["image_token_id", "image_break_token_id", "image_end_token_id"])
@pytest.mark.parametrize("value", [-1, 2**31, 1.5, True, "10", None])
def test_bad_token_id(field, value):
    rejected(spec(**{field: value}), field)


@pytest.mark.parametrize(
    "field,other", [("image_break_token_id", "image_token_id"), ("image_end_token_id", "image_token_id"),
                    ("image_end_token_id", "image_break_token_id")],
)
def test_token_ids_must_differ(field, other):
    rejected(spec(**{field: BASE[other]}), field, match=f"must differ from '{other}'")


@pytest.mark.parametrize("field", ["patch_size", "spatial_merge_size", "longest_edge"])
@pytest.mark.parametrize("value", [0, -3, MAX_EDGE + 1, 2.0, False, "16", None])
def test_bad_size(field, value):
    rejected(spec(**{field: value}), field)


def test_factor_bound():
    rejected(spec(patch_size=MAX_EDGE, spatial_merge_size=2), "spatial_merge_size", match="times patch_size")


@pytest.mark.parametrize(
    "changes, field, other",
    [
        # Sides are rounded up to whole tokens, so no image could keep within longest_edge.
        ({"longest_edge": 15}, "longest_edge", "patch_size * spatial_merge_size = 16"),
        ({"patch_size": 14, "spatial_merge_size": 2, "longest_edge": 27}, "longest_edge", "spatial_merge_size"),
        # One token of 13378 x 13378 pixels is above the core's decode bound (178956970).
        ({"patch_size": 13378, "longest_edge": 20000}, "spatial_merge_size", "patch_size is 13378"),
        ({"patch_size": 6689, "spatial_merge_size": 2, "longest_edge": 20000}, "spatial_merge_size", "patch_size"),
    ],
)
def test_inconsistent_sizes_name_both_fields(changes, field, other):
    message = rejected(spec(**changes), field)
    assert other in message.split(f"field {field!r}", 1)[1], message


def test_the_edges_of_the_size_rules_are_accepted():
    assert parse_spec(spec(longest_edge=16)).longest_edge == 16
    assert parse_spec(spec(patch_size=13377, longest_edge=13377)).factor == 13377
    assert mmf.pipeline_from_spec({**PRESETS["pixtral_12b"], "longest_edge": 16}).num_media_tokens(640, 480) == 1


@pytest.mark.parametrize("field", ["image_mean", "image_std"])
@pytest.mark.parametrize(
    "value", [[0.5, 0.5], [0.5, 0.5, 0.5, 0.5], [0.5, "a", 0.5], [0.5, float("nan"), 0.5], [1e39, 0.5, 0.5], 0.5, None]
)
def test_bad_statistics(field, value):
    rejected(spec(**{field: value}), field)


@pytest.mark.parametrize("value", [[0.5, 0.0, 0.5], [1e-50, 0.5, 0.5]])
def test_zero_std(value):
    rejected(spec(image_std=value), "image_std", match="must not contain 0")


@pytest.mark.parametrize("value", ["blend", "", None, 1])
def test_bad_alpha(value):
    rejected(spec(alpha=value), "alpha")


@pytest.mark.parametrize("value", ["torch", "PIL", "Pil", "fast", "", None, 1, True, ["pil"]])
def test_bad_backend(value):
    rejected(spec(backend=value), "backend", match="must be one of 'pil', 'torchvision'")


@pytest.mark.parametrize("value", ["uint8", "F32", "", None, 8])
def test_bad_pixels(value):
    rejected(spec(pixels=value), "pixels", match="must be one of 'f32', 'u8'")


@pytest.mark.parametrize("backend", ["pil", "torchvision"])
def test_u8_pixels_are_the_resized_image(backend):
    """pixels="u8": the resized image's CHW uint8 planes, which the f32 spec's norm maps to its
    features; batches pad with uint8 zeros. (Against transformers: test_pixtral_hf_accelerate.py.)"""
    import numpy as np

    from mm_framework.kernels import channel_norm_fused, channel_norm_pil

    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((50, 70), (20, 33))]
    base = {**PRESETS["pixtral_12b"], "backend": backend}
    f32 = mmf.pipeline_from_spec(base).process(mmf.MmInput(images=images))
    u8 = mmf.pipeline_from_spec({**base, "pixels": "u8"}).process(mmf.MmInput(images=images))
    norm = (channel_norm_pil if backend == "pil" else channel_norm_fused)(base["image_mean"], base["image_std"])
    for a, b in zip(f32.items, u8.items):
        assert b.feature.dtype == "u8" and b.feature.shape == a.feature.shape
        assert np.stack([norm.lut[c][b.feature.array[c]] for c in range(3)]).tobytes() == a.feature.array.tobytes()
    kw = u8.model_kwargs()
    assert kw["pixel_values"].dtype == np.uint8 and kw["pixel_values"].shape == (2, 3, 64, 80)
    assert not kw["pixel_values"][1, :, 32:].any() and kw["image_sizes"].tolist() == [[64, 80], [32, 48]]


@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_bad_exif_transpose(value):
    rejected(spec(exif_transpose=value), "exif_transpose")


def test_pipeline_rejects_through_the_factory():
    with pytest.raises(mmf.SpecError, match="field 'longest_edge'"):
        mmf.pipeline_from_spec({**PRESETS["pixtral_12b"], "longest_edge": 0})
