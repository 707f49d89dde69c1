"""The committed transformers goldens: their inputs, specs and rejections (no transformers needed).

Accepted cases (``golden/cases``) are replayed by the conformance harness in
``test_qwen_conformance.py``. This module checks what surrounds them: every input image
is rebuilt byte for byte, every case's spec is the preset its model directory resolves
to, and every rejected request (``golden/rejections``) is rejected with the recorded
error, including the declared divergence from transformers.
"""

from __future__ import annotations

import functools
import io
import json
import re
from pathlib import Path
from typing import Any

import PIL
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing import golden
from . import golden_images
from qwen_vl_plugin.spec import PRESETS
from qwen_vl_plugin.video_spec import VIDEO_FIELDS

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("cases/*/case.json"))
REJECTIONS = sorted(GOLDEN.glob("rejections/*/case.json"))
ALL = CASES + REJECTIONS


@functools.lru_cache(maxsize=None)
def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def image_bytes(ref: dict[str, Any]) -> bytes:
    data = golden_images.make(ref["name"])
    assert golden.digest(data) == ref["blake3"], (
        f"golden image {ref['name']} rebuilt differently (Pillow, zlib, libjpeg or libwebp changed?)"
    )
    return data


def test_goldens_cover_every_preset_and_both_backends():
    seen = {(load(p)["provenance"]["preset"], load(p)["spec"]["backend"]) for p in ALL}
    generated = ("qwen2_vl_class_defaults", "qwen2_5_vl", "qwen3_vl", "qwen3_5")
    assert seen == {(p, b) for p in generated for b in ("pil", "torchvision")}
    assert len(CASES) >= 200 and REJECTIONS
    # Every shipped preset's image settings are among the recorded specs (qwen2_vl and
    # qwen2_5_vl share theirs).
    specs = [{k: v for k, v in load(p)["spec"].items() if k != "backend"} for p in ALL]
    for name, preset in PRESETS.items():
        assert image_fields(preset, "backend") in specs, f"preset {name} has no golden case"


def image_fields(spec: dict, *leave_out: str) -> dict:
    """A spec's image settings: the image goldens record image-only specs (the video
    settings have goldens of their own, golden_video/)."""
    return {k: v for k, v in spec.items() if k not in VIDEO_FIELDS and k not in leave_out}


def test_goldens_were_made_with_this_pillow_major():
    # Pillow 13 changed the bicubic pass order; another major resizes differently.
    majors = {load(p)["provenance"]["pillow"].split(".")[0] for p in ALL}
    assert majors == {PIL.__version__.split(".")[0]}


def test_every_golden_image_is_rebuilt_identically():
    refs = {img["name"]: img for p in ALL for img in load(p)["images"]}
    assert set(refs) == set(golden_images.IMAGES)
    for ref in refs.values():
        Image.open(io.BytesIO(image_bytes(ref))).verify()


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.parent.name)
def test_spec_is_the_preset_its_model_dir_resolves_to(path: Path):
    case = load(path)
    spec, prov = case["spec"], case["provenance"]
    options = {k: spec[k] for k in ("backend", "alpha", "exif_transpose")}
    assert spec == image_fields({**mmf.preset(prov["preset"]), **options})
    resolved = mmf.spec_from_model_dir(GOLDEN / prov["model_dir"])
    assert image_fields(resolved) == {**spec, "backend": "pil", "alpha": "composite", "exif_transpose": False}
    # The PIL-object entry decodes like the default spec; the path entry pins drop + EXIF.
    assert (spec["alpha"], spec["exif_transpose"]) == (
        ("drop", True) if prov["entry"] == "path" else ("composite", False)
    )


@pytest.mark.parametrize("path", REJECTIONS, ids=lambda p: p.parent.name)
def test_rejected_request(path: Path):
    case = load(path)
    err = case["expected_error"]
    pipe = mmf.pipeline_from_spec(case["spec"])
    request = mmf.MmInput(images=[image_bytes(ref) for ref in case["images"]], input_ids=case["prompt_ids"])
    with pytest.raises(getattr(mmf, err["type"]), match=re.escape(err["match"])) as info:
        pipe.process(request)
    assert info.value.item == err["item"]
    if "divergence" in err:
        # transformers accepted it: the divergence is deliberate, and documented.
        assert "reference_error" not in case
    else:
        assert err["match"] in case["reference_error"]
