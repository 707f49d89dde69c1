"""``processor: "transformers"`` with ``backend: "torchvision"``: transformers 5.24's
``GotOcr2ImageProcessor`` (uint8 ``tvF.resize`` bicubic, fused rescale + normalize) as
``InternVLProcessor`` runs it (``crop_to_patches=True``), byte for byte. Needs torch and
torchvision (the torchvision stage of CI)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import require_torchvision
from .test_intern_vl_transformers import CONFIG, IMAGES, PP

require_torchvision()
got_ocr2 = pytest.importorskip("transformers.models.got_ocr2.image_processing_got_ocr2")
Image = pytest.importorskip("PIL.Image")

SPEC = {**mmf.spec_from_hf_configs(CONFIG, PP), "backend": "torchvision"}


def _reference(data: list[bytes], max_num: int):
    return got_ocr2.GotOcr2ImageProcessor.from_dict(PP)(
        images=[Image.open(io.BytesIO(d)) for d in data], crop_to_patches=True, max_patches=max_num,
        return_tensors="np",
    )


@pytest.mark.parametrize("max_num", [12, 4])
@pytest.mark.parametrize("name", list(IMAGES))
def test_items_equal_got_ocr2_torchvision(name, max_num):
    data = IMAGES[name]
    pipe = mmf.pipeline_from_spec(SPEC)
    out = pipe.process(mmf.MmInput(items=[mmf.Item("image", data, max_patches=max_num)]))
    ref = _reference([data], max_num)
    ours, theirs = out.model_kwargs(), np.asarray(ref["pixel_values"])
    assert ours["pixel_values"].shape == theirs.shape
    assert ours["pixel_values"].tobytes() == theirs.astype(np.float32).tobytes()
    assert ours["num_patches"].tolist() == list(ref["num_patches"])


def test_batch_equals_got_ocr2_torchvision():
    # The processor stacks images of one shape and reorders them back: no byte may move.
    names = ["photo_640x480", "tall_300x1200", "photo_640x480", "tiny_10x7"]
    data = [IMAGES[n] for n in names]
    pipe = mmf.pipeline_from_spec(SPEC)
    out = pipe.process(mmf.MmInput(items=[mmf.Item("image", d) for d in data]))
    ref = _reference(data, 12)
    ours, theirs = out.model_kwargs(), np.asarray(ref["pixel_values"], dtype=np.float32)
    assert ours["pixel_values"].shape == theirs.shape and ours["pixel_values"].tobytes() == theirs.tobytes()
    assert ours["num_patches"].tolist() == list(ref["num_patches"])


def test_the_backends_differ():
    data = [mmf.Item("image", IMAGES["photo_640x480"])]
    pil = mmf.pipeline_from_spec({**SPEC, "backend": "pil"}).process(mmf.MmInput(items=data)).model_kwargs()
    tv = mmf.pipeline_from_spec(SPEC).process(mmf.MmInput(items=data)).model_kwargs()
    assert pil["pixel_values"].shape == tv["pixel_values"].shape
    assert pil["pixel_values"].tobytes() != tv["pixel_values"].tobytes()
