"""What the torchvision-backed Qwen chat tests share: the Qwen2-VL, Qwen2.5-VL and Qwen3-VL model
directories (over ``qwen_model_dir``'s tokenizer files), transformers' processors for them with
the torchvision image and video processors, deterministic clips, and the reference's video
loading.

transformers 5.24 cannot decode a video path here: its processors' ``fetch_videos`` needs
torchcodec, and ``torchvision.io.read_video`` is gone from torchvision 0.29. The reference is
therefore transformers' documented user path, ``load_video(path, backend="pyav")`` (every frame
and its metadata), with those frames in the message part and the metadata in
``processor_kwargs`` (docs/families/qwen_vl_video.md §2).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .qwen_model_dir import make_qwen2_vl_dir, tokenizer_config

GOLDEN_MODELS = Path(__file__).parents[2] / "qwen_vl_plugin" / "tests" / "golden" / "models"
QWEN3_TEMPLATE = Path(__file__).parent / "data" / "qwen3_vl_8b_instruct" / "chat_template.jinja"

# model -> (golden model directory, transformers processor class, video processor class,
# the qwen_vl golden generator's preset whose model class gives get_rope_index)
MODELS: dict[str, tuple[str, str, str, str]] = {
    "qwen2_vl": ("qwen2_vl_instruct", "Qwen2VLProcessor", "Qwen2VLVideoProcessor", "qwen2_vl_class_defaults"),
    "qwen2_5_vl": ("qwen2_5_vl_instruct", "Qwen2_5_VLProcessor", "Qwen2VLVideoProcessor", "qwen2_5_vl"),
    "qwen3_vl": ("qwen3_vl_instruct", "Qwen3VLProcessor", "Qwen3VLVideoProcessor", "qwen3_vl"),
    "qwen3_5": ("qwen3_5", "Qwen3VLProcessor", "Qwen3VLVideoProcessor", "qwen3_5"),
}


def make_dir(model: str, root: Path) -> Path:
    """The model directory of ``model`` ("qwen2_vl", "qwen2_5_vl", "qwen3_vl") in ``root``, each
    with its published template: Qwen2.5-VL-7B-Instruct publishes Qwen2-VL's text; Qwen3-VL its
    own (tests/chat/data/SOURCES.md). Qwen3.5 has its own vocabulary (tests/chat/models/qwen_vl.py)."""
    if model == "qwen2_vl":
        return make_qwen2_vl_dir(root)
    root = make_qwen2_vl_dir(root, chat_template_json=model == "qwen2_5_vl",
                             config=tokenizer_config(template=model == "qwen2_5_vl"))
    for source in (GOLDEN_MODELS / MODELS[model][0]).glob("*.json"):
        shutil.copy(source, root / source.name)
    if model == "qwen3_vl":
        shutil.copy(QWEN3_TEMPLATE, root / "chat_template.jinja")
    return root


def chat_template_of(root: Path) -> str:
    """The processor's template in ``root`` (``chat_template.jinja``, else ``chat_template.json``)."""
    if (root / "chat_template.jinja").is_file():
        return (root / "chat_template.jinja").read_text(encoding="utf-8")
    return json.loads((root / "chat_template.json").read_text(encoding="utf-8"))["chat_template"]


def hf_processor(model: str, root: Path, image_backend: str = "torchvision", **video_changes: Any):
    """transformers' processor for ``root`` as ``AutoProcessor.from_pretrained`` builds it (the video
    processor's dict from ``video_preprocessor_config.json``, else ``preprocessor_config.json``),
    its image processor the torchvision (``Qwen2VLImageProcessor``) or the PIL one;
    ``video_changes`` replace video processor config keys."""
    import transformers

    pp = json.loads((root / "preprocessor_config.json").read_text())
    vfile = root / "video_preprocessor_config.json"
    vpp = json.loads(vfile.read_text()) if vfile.is_file() else dict(pp)
    ip_cls = "Qwen2VLImageProcessor" if image_backend == "torchvision" else "Qwen2VLImageProcessorPil"
    ip = getattr(transformers, ip_cls).from_dict(pp)
    vp = getattr(transformers, MODELS[model][2]).from_dict({**vpp, **video_changes})
    tok = transformers.AutoTokenizer.from_pretrained(root)
    return getattr(transformers, MODELS[model][1])(image_processor=ip, video_processor=vp, tokenizer=tok,
                                                   chat_template=chat_template_of(root))


def write_clip(path: Path, frames: int, fps: int, width: int, height: int, seed: int) -> Path:
    """An H.264 (yuv420p, so even sides) MP4 of ``frames`` seeded noise-and-gradient frames; deterministic."""
    import av

    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, width, dtype=np.float32)[None, :, None]
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for k in range(frames):
            noise = rng.integers(0, 56, (height, width, 3)).astype(np.float32)
            frame = np.clip(ramp + noise + 3 * k, 0, 255).astype(np.uint8)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    return path


def video_path(part: dict[str, Any]) -> str | None:
    """The file a video part names (``video``, ``url``, ``path``, or ``video_url``), else None."""
    if part.get("type") == "video_url":
        url = part["video_url"]
        url = url["url"] if isinstance(url, dict) else url
    elif part.get("type") == "video":
        url = next(part[k] for k in ("video", "url", "path") if k in part)
    else:
        return None
    return url[len("file://"):] if url.startswith("file://") else url


def with_loaded_videos(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """``messages`` with every video part replaced by ``{"type": "video", "video": frames}`` (the
    frames ``load_video(path, backend="pyav")`` gives, its per-item options dropped: transformers
    reads none) and the videos' metadata, in message order."""
    from transformers.video_utils import load_video

    metadata, out = [], []
    for message in messages:
        content = message["content"]
        if isinstance(content, list):
            parts = []
            for part in content:
                path = video_path(part)
                if path is not None:
                    frames, meta = load_video(path, backend="pyav")
                    metadata.append(meta)
                    part = {"type": "video", "video": frames}
                parts.append(part)
            content = parts
        out.append({**message, "content": content})
    return out, metadata


def reference(hf: Any, messages: list[dict[str, Any]], **processor_kwargs: Any) -> dict[str, np.ndarray]:
    """transformers' ``apply_chat_template(tokenize=True, return_dict=True, return_tensors="np")`` of
    ``messages``, its videos loaded as :func:`with_loaded_videos` does."""
    loaded, metadata = with_loaded_videos(messages)
    if metadata:
        processor_kwargs["video_metadata"] = metadata
    out = hf.apply_chat_template(loaded, tokenize=True, return_dict=True, return_tensors="np",
                                 add_generation_prompt=True, processor_kwargs=processor_kwargs)
    return {k: np.asarray(v) for k, v in out.items()}
