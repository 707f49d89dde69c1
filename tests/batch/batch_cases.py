"""The bundled families with a spec and a prompt each, for the batch tests."""

from __future__ import annotations

from typing import Any

import pytest

import mm_framework as mmf
from mm_framework.testing import sample_image

# family: (preset or spec, the id its prompt places per image)
FAMILIES: dict[str, tuple[str | dict[str, Any], str | int]] = {
    "qwen_vl": ("qwen2_vl", "image_token_id"),
    "intern_vl": ("internvl2_5_8b", "image_token_id"),
    "gemma3": ("gemma3_4b_it", "boi_token_id"),
    "pixtral": ("pixtral_12b", "image_token_id"),
    "llava_onevision": ("llava_onevision_qwen2_7b_ov", "image_token_id"),
    "inkling": ({"family": "inkling"}, -101),
}


def family_case(family: str) -> tuple[dict[str, Any], int]:
    """The family's spec and placeholder id; skipped when its plugin is not installed."""
    if family not in {f["name"] for f in mmf.list_families()}:
        pytest.skip(f"family {family} is not installed")
    spec, placeholder = FAMILIES[family]
    spec = mmf.preset(spec) if isinstance(spec, str) else spec
    return spec, int(spec[placeholder]) if isinstance(placeholder, str) else placeholder


IMAGES = [sample_image(64, 48, "PNG", 1), sample_image(50, 90, "JPEG", 2), sample_image(120, 80, "PNG", 3)]
