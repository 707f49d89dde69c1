"""The specs and prompts of the glm4v video tests (live parity and the golden generator).

The presets carry no ``video_timestamp_ids`` (the real GLM-4 tokenizers are not available
offline); the test specs add the table the video tests' small tokenizer
(:func:`glm4v_reference.video_tokenizer`) gives, for every timestamp text a test clip can
produce, so the id layout is checked against the processor's with real special-token ids.
"""

from __future__ import annotations

from typing import Any

import mm_framework as mmf
from glm4v_plugin import timestamp_texts

PRESETS = {"glm4v": "glm4_1v_9b_thinking", "glm46v": "glm4_6v"}
# config -> (model class, spec overrides on its preset)
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "glm4v": ("glm4v", {}),
    "glm4v_small": ("glm4v", {"video_min_pixels": 28 * 28 * 2, "video_max_pixels": 28 * 28 * 2 * 3,
                              "video_fps": 3.0, "video_max_duration": 1}),
    "glm46v": ("glm46v", {}),
    "glm46v_tps3": ("glm46v", {"temporal_patch_size": 3, "video_min_pixels": 20000,
                               "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}),
}
VIDEO = "<|begin_of_video|><|video|><|end_of_video|>"
IMAGE = "<|begin_of_image|><|image|><|end_of_image|>"


def spec(config: str, tok, stamps: list[str] | None = None) -> dict[str, Any]:
    """The config's spec with ``tok``'s ids of ``stamps`` (default: every text a test clip
    can give) as its ``video_timestamp_ids``."""
    model, overrides = CONFIGS[config]
    if stamps is None:
        stamps = timestamp_texts(model, 100)  # every text a test clip (under 100 s) can give
    table = {t: [int(i) for i in tok(t, add_special_tokens=False)["input_ids"]] for t in stamps}
    return {**mmf.preset(PRESETS[model]), **overrides, "video_timestamp_ids": table}


def prompt(items: list[str]) -> str:
    """The chat template's rendering of one user turn holding ``items`` ("image"/"video")."""
    body = "".join(VIDEO if k == "video" else IMAGE for k in items)
    return f"[gMASK]<sop><|user|>\n{body}Describe this video.<|assistant|>\n"
