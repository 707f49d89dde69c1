"""A tiny in-process family that drives the core without any real model.

Each image becomes one token per 4x4 block (at least one); the feature is the block
means as f32, so outputs depend on every pixel and determinism checks mean something.
Knobs in the spec let tests make the family misbehave on purpose.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mm_framework import plugin as mmp
from mm_framework.plugin import SpecError

FIELDS = {"image_token_id": int, "block": int, "layout": str, "fail_on_width": int, "mrope": bool, "int32_ids": bool,
          "placeholder_text": str, "unnamed": bool}


class ToyFamily:
    def __init__(self, params: dict[str, Any]) -> None:
        for key, value in params.items():
            if key not in FIELDS:
                raise SpecError(f"toy spec: unknown field {key!r}")
            if not isinstance(value, FIELDS[key]) or isinstance(value, bool) != (FIELDS[key] is bool):
                raise SpecError(f"toy spec: field {key!r} must be {FIELDS[key].__name__}")
        self.token = params.get("image_token_id", 1)
        self.block = params.get("block", 4)
        self.layout_kind = params.get("layout", "placeholder")
        self.fail_on_width = params.get("fail_on_width", -1)
        self.mrope = params.get("mrope", False)
        self.int32_ids = params.get("int32_ids", False)
        self.placeholder_text = params.get("placeholder_text")
        self.unnamed = params.get("unnamed", False)

    @mmp.hookimpl
    def mm_capabilities(self):
        # The toy names its placeholder (default prompts, token counts) unless told not to;
        # with a placeholder text it also names that text (text checks).
        named = {} if self.unnamed else {"image": self.token}
        texts = {} if self.placeholder_text is None else {"image": self.placeholder_text}
        return mmp.Capabilities(id_range=(0, 2**31 - 1) if self.int32_ids else None, placeholders=named,
                                placeholder_texts=texts)

    def grid(self, width: int, height: int) -> tuple[int, int]:
        return max(1, height // self.block), max(1, width // self.block)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedImage) -> mmp.ProcessedItem:
        if media.width == self.fail_on_width:
            raise RuntimeError("toy family exploded")
        gh, gw = self.grid(media.width, media.height)
        b = self.block
        crop = media.rgb[: gh * b, : gw * b].astype(np.float32)
        if crop.shape[0] < b or crop.shape[1] < b:
            feat = crop.reshape(-1, 3).mean(axis=0, keepdims=True)
        else:
            feat = crop.reshape(gh, b, gw, b, 3).mean(axis=(1, 3)).reshape(gh * gw, 3)
        return mmp.ProcessedItem(
            feature=mmp.Tensor.f32(feat),
            aux={"grid": mmp.Tensor.i64([1, gh, gw])},
            geometry=mmp.Grid(1, gh, gw),
            size=(media.width, media.height),
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids, geometries):
        counts = [g.h * g.w for g in geometries]
        if self.layout_kind == "placeholder":
            return mmp.layout_by_placeholder(input_ids, self.token, counts)
        if self.layout_kind == "drop_tail":
            full = mmp.layout_by_placeholder(input_ids, self.token, counts)
            return mmp.TokenLayout(full.segments[:-1])
        if self.layout_kind == "zero":
            return mmp.layout_by_placeholder(input_ids, self.token, [0] * len(counts))
        if self.layout_kind == "not_a_layout":
            return ["nope"]
        raise AssertionError(self.layout_kind)

    @mmp.hookimpl
    def mm_positions(self, input_len, offsets, geometries):
        if not self.mrope:
            return None  # fall through to the default Rope1D
        # Sequential ids on all three rows: the core only carries an MRope, the math is a family's.
        return mmp.MRope(np.tile(np.arange(input_len, dtype=np.int64), (3, 1)), 0)

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.ImageHeader) -> mmp.ItemPlan:
        return mmp.ItemPlan(mmp.Grid(1, *self.grid(header.width, header.height)), (header.width, header.height))


class ToyPlugin:
    """Discovery plugin announcing the toy family."""

    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy", ToyFamily)

    @mmp.hookimpl
    def mm_register_presets(self, register):
        register("toy_default", {"family": "toy", "image_token_id": 1})
