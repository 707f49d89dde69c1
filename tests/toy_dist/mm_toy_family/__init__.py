"""A family found only through its installed entry point: one token per image."""

import numpy as np

from mm_framework import plugin as mmp


class OneToken:
    def __init__(self, params):
        unknown = set(params) - {"image_token_id"}
        if unknown:
            raise mmp.SpecError(f"toy_ep spec: unknown field {sorted(unknown)[0]!r}")
        self.token = params.get("image_token_id", 1)

    @mmp.hookimpl
    def mm_process_item(self, media):
        mean = media.rgb.reshape(-1, 3).mean(axis=0, dtype=np.float64).astype(np.float32)
        return mmp.ProcessedItem(feature=mmp.Tensor.f32(mean[None]), geometry=mmp.Tiles(1))

    @mmp.hookimpl
    def mm_layout(self, input_ids, geometries):
        return mmp.layout_by_placeholder(input_ids, self.token, [1] * len(geometries))

    @mmp.hookimpl
    def mm_plan_item(self, header):
        return mmp.ItemPlan(mmp.Tiles(1), (header.width, header.height))


@mmp.hookimpl
def mm_register_families(register):
    register("toy_ep", OneToken)


@mmp.hookimpl
def mm_register_presets(register):
    register("toy_ep_default", {"family": "toy_ep", "image_token_id": 1})
