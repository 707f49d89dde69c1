"""The pixel-free anyres geometry: pinned reference values, edge cases, and (when
transformers imports) every formula against transformers' own functions."""

from __future__ import annotations

import types

import numpy as np
import pytest

import mm_framework as mmf
from llava_onevision_plugin import anyres
from llava_onevision_plugin.spec import parse_spec

PRESET = "llava_onevision_qwen2_7b_ov"


def make_spec(**changes):
    s = {k: v for k, v in mmf.preset(PRESET).items() if k != "family"}
    s.update(changes)
    return parse_spec(s)


SPEC = make_spec()
# Small pinpoints, the default strategy and a lower cap: every branch with other constants.
SMALL = make_spec(
    image_size=32,
    image_grid_pinpoints=[[32, 32], [32, 64], [64, 32], [64, 64], [32, 96], [96, 96]],
    num_image_tokens=16,
    vision_feature_select_strategy="default",
    vision_aspect_ratio="anyres_max_2",
)

# (width, height) -> (best, fitted, offset, tokens), read off transformers 5.24 for the
# llava-onevision-qwen2-7b-ov-hf configuration.
PINNED = {
    (1, 1): ((384, 384), (384, 384), (0, 0), 1485),
    (384, 384): ((384, 384), (384, 384), (0, 0), 1485),
    (640, 480): ((768, 768), (576, 768), (96, 0), 2929),
    (1280, 960): ((1152, 1536), (1152, 1536), (0, 0), 7309),
    (1024, 899): ((1152, 1152), (1012, 1152), (70, 0), 6551),
    (1920, 1080): ((1152, 1920), (1080, 1920), (36, 0), 7269),
    (4000, 3000): ((1920, 2304), (1728, 2304), (96, 0), 7309),
    (3000, 20): ((384, 2304), (16, 2304), (184, 0), 892),
    (20, 3000): ((2304, 384), (2304, 16), (0, 184), 1053),
}


@pytest.mark.parametrize(("size", "want"), PINNED.items(), ids=[f"{w}x{h}" for w, h in PINNED])
def test_pinned_plans(size, want):
    p = anyres.plan(SPEC, *size)
    assert (p.best, p.fitted, p.offset, p.tokens) == want
    assert p.patches == 1 + (p.best[0] // 384) * (p.best[1] // 384)
    assert (p.height, p.width) == (size[1], size[0])


def test_ties_keep_the_first_pinpoint():
    # A 384x384 image fits 384x384 and every larger pinpoint without loss; least waste wins.
    assert anyres.best_resolution(384, 384, [(768, 768), (384, 384), (384, 384)]) == (384, 384)
    assert anyres.best_resolution(10, 10, [(64, 32), (32, 64)]) == (64, 32)


def test_strip_too_thin_for_any_pinpoint_takes_the_first():
    # No pinpoint keeps a pixel of a 1x250000 strip: all tie at zero, the first wins.
    p = anyres.plan(SPEC, 1, 250000)
    assert (p.best, p.fitted, p.offset) == ((384, 384), (384, 1), (0, 191))


def test_default_strategy_drops_one_token():
    full = make_spec(vision_feature_select_strategy="full")
    default = make_spec(vision_feature_select_strategy="default")
    for w, h in PINNED:
        assert anyres.plan(default, w, h).tokens == anyres.plan(full, w, h).tokens - 1


def test_cap_applies_only_above_ratio_1_1():
    # 1024x899 on 1152x1152: 81x81 features unpad to 71 rows, ratio 0.94, no cap.
    assert anyres.feature_count(SPEC, 899, 1024, (1152, 1152)) == 71 * 81 + 71 + 729
    # 1280x960 on 1152x1536: 81x108 features, ratio sqrt(8748 / 6561) = 1.15, pooled to 70x93.
    assert anyres.feature_count(SPEC, 960, 1280, (1152, 1536)) == 70 * 93 + 70 + 729


def _hf_counter(transformers, spec):
    """transformers' own ``_get_number_of_features``, bound to a bare namespace (no tokenizer)."""
    proc_cls = transformers.LlavaOnevisionProcessor
    ns = types.SimpleNamespace(
        image_processor=types.SimpleNamespace(image_grid_pinpoints=[list(p) for p in spec.image_grid_pinpoints]),
        num_image_tokens=spec.num_image_tokens,
        vision_aspect_ratio=spec.vision_aspect_ratio,
    )
    ns._get_unpadded_features = types.MethodType(proc_cls._get_unpadded_features, ns)

    def count(h, w):
        n = proc_cls._get_number_of_features(ns, h, w, spec.image_size, spec.image_size)
        return n - 1 if spec.vision_feature_select_strategy == "default" else n

    return count


@pytest.mark.parametrize("which", ["checkpoint", "small"])
def test_matches_transformers_functions(which):
    transformers = pytest.importorskip("transformers")
    from transformers.image_processing_utils import get_patch_output_size, select_best_resolution

    spec = SPEC if which == "checkpoint" else SMALL
    count = _hf_counter(transformers, spec)
    pins = [list(p) for p in spec.image_grid_pinpoints]
    top = 5000 if which == "checkpoint" else 400
    rng = np.random.default_rng(18)
    sizes = [tuple(int(v) for v in s) for s in rng.integers(1, top, (3000, 2))]
    sizes += [(1, n) for n in range(1, top, 3)] + [(n, 1) for n in range(1, top, 3)]
    problems = []
    for w, h in sizes:
        p = anyres.plan(spec, w, h)
        best = tuple(select_best_resolution((h, w), pins))
        fitted = tuple(get_patch_output_size(np.empty((3, h, w), np.uint8), best, "channels_first"))
        if (p.best, p.fitted, p.tokens) != (best, fitted, count(h, w)):
            problems.append(f"{w}x{h}: {p} vs best {best} fitted {fitted} tokens {count(h, w)}")
    assert not problems, "\n".join(problems[:20])
