"""vLLM's GPU-less render server (``vllm launch render``) on loopback, with or without the
plugin, and the chat requests the test and ``bench/vllm_render.py`` send it.

The server is a child process on 127.0.0.1 at a free port; its log goes to a file, and it
is stopped (terminate, then kill) when the ``with`` block ends. Waiting for it is bounded.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import vllm_models

CHAT_TEMPLATE = Path(__file__).resolve().parents[3] / "tests/chat/data/qwen2_vl_7b_instruct/chat_template.json"
ARCH = "Qwen2_5_VLForConditionalGeneration"
READY_SECONDS = 600


def model_dir(root: Path) -> Path:
    """An offline Qwen2.5-VL directory with the Qwen2-VL chat template (the same template)."""
    directory = vllm_models.model_dir(vllm_models.MODELS[ARCH], root)
    shutil.copy(CHAT_TEMPLATE, directory / "chat_template.json")
    return directory


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def render(self, client, body: dict) -> dict:
        """The response of ``/v1/chat/completions/render`` to ``body``, without its request id."""
        r = client.post(f"{self.url}/v1/chat/completions/render", json=body, timeout=300)
        if r.status_code != 200:
            raise AssertionError(f"{self.url} answered {r.status_code}: {r.text[:2000]}")
        out = r.json()
        out.pop("request_id", None)
        return out


@contextmanager
def server(directory: Path, log: Path, *, plugin: bool, extra: tuple[str, ...] = ()) -> Iterator[Server]:
    """A render server of ``directory``; ``plugin=False`` sets ``MM_FRAMEWORK_VLLM=0``.

    The hash seed is fixed: the render server serializes an item's feature dict in an
    order that follows string hashing, so two servers with random seeds may order
    ``pixel_values`` and ``image_grid_thw`` differently with or without the plugin."""
    import httpx

    port = _free_port()
    env = {**os.environ, "MM_FRAMEWORK_VLLM": "1" if plugin else "0", "VLLM_TARGET_DEVICE": "cpu",
           "PYTHONHASHSEED": "0"}
    vllm = Path(sys.executable).with_name("vllm")
    cmd = [str(vllm), "launch", "render", str(directory), "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", "8192", *extra]
    with open(log, "wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the render server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the render server was not ready in {READY_SECONDS} s:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield Server(url, log)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def jpeg_url(image) -> str:
    """A ``data:`` URL of ``image`` as a quality-90 JPEG (RGB), as an OpenAI client sends it."""
    buf = io.BytesIO()
    image.convert("RGB").save(buf, "JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def png_url(image) -> str:
    """A ``data:`` URL of ``image`` as PNG, in its own mode."""
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def chat(directory: Path, urls: list[str], text: str = "Describe the images.", **extra) -> dict:
    """A chat completion request with ``urls`` as image parts, then ``text``."""
    parts = [{"type": "image_url", "image_url": {"url": u}} for u in urls] + [{"type": "text", "text": text}]
    return {"model": str(directory), "messages": [{"role": "user", "content": parts}], **extra}
