"""The decoder's lent Pillow image (``keep_source``) and the single-pass RGB export."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from PIL import Image

from mm_framework.plugin import DecodedImage, DecodeOptions
from mm_framework.media.decode import SourcedImage, decode_rgb, take_source


def _encode(mode: str, fmt: str = "PNG") -> bytes:
    rng = np.random.default_rng(1)
    im = Image.fromarray(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)).convert(mode)
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("mode", "fmt"), [("RGB", "PNG"), ("RGB", "JPEG"), ("L", "PNG"), ("RGBA", "PNG"), ("P", "PNG")]
)
@pytest.mark.parametrize("alpha", ["composite", "drop"])
def test_lent_source_has_the_array_pixels(mode, fmt, alpha):
    data = _encode(mode, fmt)
    opts = DecodeOptions(alpha=alpha)
    media = decode_rgb(data, opts, keep_source=True)
    plain = decode_rgb(data, opts)
    assert isinstance(media, SourcedImage) and isinstance(media, DecodedImage)
    assert type(plain) is DecodedImage
    assert np.array_equal(media.rgb, plain.rgb) and not media.rgb.flags.writeable
    source = take_source(media)
    assert source.mode == "RGB" and source.size == (media.width, media.height)
    assert np.array_equal(np.asarray(source), media.rgb)
    assert take_source(media) is None  # lent once
    assert take_source(plain) is None


def test_source_is_taken_by_exactly_one_thread():
    for _ in range(50):
        media = decode_rgb(_encode("RGB"), keep_source=True)
        got = []
        barrier = threading.Barrier(4)

        def take():
            barrier.wait()
            got.append(take_source(media))

        threads = [threading.Thread(target=take) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(g is not None for g in got) == 1
