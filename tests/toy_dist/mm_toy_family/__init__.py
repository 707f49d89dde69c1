"""A family found only through its installed entry point: one token per image."""

import numpy as np

import mm_framework as mmf


class OneToken:
    def __init__(self, params):
        unknown = set(params) - {"image_token_id"}
        if unknown:
            raise mmf.SpecError(f"toy_ep spec: unknown field {sorted(unknown)[0]!r}")
        self.token = params.get("image_token_id", 1)

    @mmf.hookimpl
    def mm_process_item(self, media):
        mean = media.rgb.reshape(-1, 3).mean(axis=0, dtype=np.float64).astype(np.float32)
        return mmf.ProcessedItem(feature=mmf.Tensor.f32(mean[None]), geometry=mmf.Tiles(1))

    @mmf.hookimpl
    def mm_layout(self, input_ids, geometries):
        return mmf.layout_by_placeholder(input_ids, self.token, [1] * len(geometries))

    @mmf.hookimpl
    def mm_plan_item(self, header):
        return mmf.ItemPlan(mmf.Tiles(1), (header.width, header.height))


@mmf.hookimpl
def mm_register_families(register):
    register("toy_ep", OneToken)


@mmf.hookimpl
def mm_register_presets(register):
    register("toy_ep_default", {"family": "toy_ep", "image_token_id": 1})
