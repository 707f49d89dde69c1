from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import par, plugins

from .toy_family import ToyPlugin

pytest_plugins = ["pytester"]


def png_bytes(w: int, h: int, seed: int = 0, mode: str = "RGB") -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    im = Image.fromarray(arr, "RGB")
    if mode != "RGB":
        im = im.convert(mode)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def toy():
    """Register the toy family for one test."""
    name = plugins.register(ToyPlugin(), name="toy-plugin")
    try:
        yield
    finally:
        plugins.unregister(name)


@pytest.fixture
def threads():
    """Set the fan-out mode for a test; restored afterwards."""
    yield par.set_threads
    par.set_threads(None)


@pytest.fixture
def toy_pipe(toy):
    return mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1})
