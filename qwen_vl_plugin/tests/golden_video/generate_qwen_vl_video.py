#!/usr/bin/env python
"""Generate the qwen_vl video goldens from the reference: transformers 5.24 + PyAV.

Per clip (``clips/``, encoded by :mod:`video_clips`) and per configuration (a video
processor built from explicit arguments, the preset's torchvision image processor, the
offline Qwen tokenizer and the model's own ``get_rope_index``), one request runs through
the reference exactly as a user would run it: ``load_video(path, backend="pyav")`` and
then the full processor with the frames and their metadata (the processors cannot decode
files themselves without torchcodec; docs/families/qwen_vl_video.md §2). The prompts are
a video-only chat turn and, for some clips, an (image, video, image) turn.

Each case in ``cases/<name>.json`` records the clip's digest and header, the video
processor's effective parameters, the source indices used, the sha256 of every used
decoded frame, of the resized uint8 frames and of ``pixel_values_videos`` (the raw f32
bytes go to ``blobs/`` when small), ``video_grid_thw``, ``second_per_grid_ts`` (f32),
the prompt ids, the expanded ids (run-length), the image outputs of mixed prompts, and
the M-RoPE positions (digest; inline when short) and delta. A request the reference
rejects records its error and the error mm_framework must raise instead. Digests are
sha256 so the reference venv needs nothing beyond transformers, torch, torchvision and
PyAV (mm_framework is not imported: the record helpers and the image generator's image
table come from their files, through ``mm_framework/testing/standalone.py``). Run from the
repository root::

    /work/tvvenv/bin/python qwen_vl_plugin/tests/golden_video/generate_qwen_vl_video.py \
        --tokenizer-dir /tmp/qwen-tokenizers
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import platform
import shutil
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402
import video_clips  # noqa: E402
from reference_errors import clean, expected_error  # noqa: E402

# The image golden generator: its tokenizer, processor and rope builders are reused.
img = standalone.load_module(os.path.join(HERE, "..", "golden", "generate_qwen_vl.py"), "qwen_vl_golden_generator")
from mm_framework.testing.records import dumps, rle, sha256 as sha  # noqa: E402
MAX_BLOB = 64 << 10  # bytes of pixel_values_videos kept whole
MAX_INLINE_POSITIONS = 128

# name -> (preset, explicit video processor arguments). cap_pixels_per_frame is passed
# as False, the value 5.24 uses when it is unset (§1).
HUB_QWEN3 = {"size": {"shortest_edge": 4096, "longest_edge": 25165824}, "fps": 2, "min_frames": 4, "max_frames": 768,
             "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5] * 3,
             "image_std": [0.5] * 3, "do_sample_frames": True}
HUB_QWEN2 = {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2}
GENERATIONS = {"qwen2_vl_class_defaults": "qwen2", "qwen2_5_vl": "qwen2_5", "qwen3_vl": "qwen3", "qwen3_5": "qwen3"}
GENERATIONS = {"qwen2_vl_class_defaults": "qwen2", "qwen2_5_vl": "qwen2_5", "qwen3_vl": "qwen3", "qwen3_5": "qwen3"}
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "qwen2_vl": ("qwen2_vl_class_defaults", {}),  # class defaults: every frame, 100352..602112 per frame
    "qwen2_vl_fps2": (
        "qwen2_vl_class_defaults", {"do_sample_frames": True, "fps": 2, "min_pixels": 3136, "max_pixels": 28 * 28 * 16}
    ),
    "qwen2_5_vl": ("qwen2_5_vl", HUB_QWEN2),  # the published checkpoint: image bounds, every frame
    "qwen2_5_vl_fps2": ("qwen2_5_vl", {**HUB_QWEN2, "do_sample_frames": True, "fps": 2}),
    "qwen3_vl": ("qwen3_vl", HUB_QWEN3),
    "qwen3_vl_defaults": ("qwen3_vl", {}),
    "qwen3_vl_small": ("qwen3_vl", {**HUB_QWEN3, "size": {"shortest_edge": 4096, "longest_edge": 65536}}),
    "qwen3_5": ("qwen3_5", HUB_QWEN3),
}
VIDEO_CLASS = {"qwen2_vl_class_defaults": "Qwen2VLVideoProcessor", "qwen2_5_vl": "Qwen2VLVideoProcessor",
               "qwen3_vl": "Qwen3VLVideoProcessor", "qwen3_5": "Qwen3VLVideoProcessor"}
MIXED_IMAGES = ("tiny_10x10.png", "halfround_98x70.png")
MIXED_CLIPS = ("x264_yuv420p_160x120_30f_10fps.mp4", "mpeg4_yuv420p_65x49_7f_29.97fps.mp4")


def video_processor(config: str):
    import transformers

    preset, kwargs = CONFIGS[config]
    return getattr(transformers, VIDEO_CLASS[preset])(**copy.deepcopy(kwargs), cap_pixels_per_frame=False)


def make_processor(config: str, tokenizer):
    import transformers

    preset = CONFIGS[config][0]
    cls = getattr(transformers, img.PRESETS[preset][1])
    return cls(image_processor=img.image_processor(preset, "torchvision"), tokenizer=tokenizer,
               video_processor=video_processor(config))


def video_params(proc, config: str) -> dict[str, Any]:
    """What the reference actually runs with, in the terms of the plugin's functions."""
    preset = CONFIGS[config][0]
    vp = proc.video_processor
    with open(os.path.join(img.HERE, "models", img.PRESETS[preset][0], "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    tok = proc.tokenizer
    return {
        "generation": GENERATIONS[preset],
        "preset": preset,
        "patch_size": int(vp.patch_size), "merge_size": int(vp.merge_size),
        "temporal_patch_size": int(vp.temporal_patch_size),
        "min_pixels": int(vp.size.shortest_edge), "max_pixels": int(vp.size.longest_edge),
        "image_mean": [float(v) for v in vp.image_mean], "image_std": [float(v) for v in vp.image_std],
        "do_sample_frames": bool(vp.do_sample_frames), "fps": vp.fps, "num_frames": vp.num_frames,
        "min_frames": int(vp.min_frames), "max_frames": int(vp.max_frames),
        "tokens_per_second": cfg.get("vision_config", {}).get("tokens_per_second") if preset == "qwen2_5_vl" else None,
        "video_token_id": int(proc.video_token_id), "image_token_id": int(proc.image_token_id),
        "vision_start_id": int(tok.convert_tokens_to_ids("<|vision_start|>")),
        "vision_end_id": int(tok.convert_tokens_to_ids("<|vision_end|>")),
        "timestamp_ids": timestamp_vocab(tok) if preset in ("qwen3_vl", "qwen3_5") else None,
    }


def timestamp_vocab(tok) -> dict[str, Any]:
    """The ids a timestamp text tokenizes to, checked to be position independent."""
    ids = tok("<0123456789.5 seconds>", add_special_tokens=False)["input_ids"]
    vocab = {"open": ids[0], "digits": ids[1:11], "dot": ids[11], "seconds": ids[-2], "close": ids[-1]}
    assert len(ids) == 15 and ids[12] == ids[6], ids  # one token per digit
    return vocab


def render(preset: str, items: list[str], question: str) -> str:
    """The chat template's rendering: ``items`` are "image"/"video" in prompt order."""
    marker = {
        "image": "<|vision_start|><|image_pad|><|vision_end|>", "video": "<|vision_start|><|video_pad|><|vision_end|>",
    }
    system = ""
    if preset in ("qwen2_vl_class_defaults", "qwen2_5_vl"):
        system = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    body = "".join(marker[k] for k in items)
    return f"{system}<|im_start|>user\n{body}{question}<|im_end|>\n<|im_start|>assistant\n"


def run_reference(proc, rope, config: str, clip_path: str, images: list[bytes], text: str) -> dict[str, Any]:
    """One request through the reference; raises what the reference raises (with its stage)."""
    import torch
    from PIL import Image
    from transformers.video_utils import load_video

    try:
        frames, meta = load_video(clip_path, backend="pyav")
    except Exception as e:
        e.stage = "load_video"
        raise
    vp = proc.video_processor
    try:
        vout = vp(videos=[frames], video_metadata=[copy.deepcopy(meta)], return_metadata=True, return_tensors="pt")
        out = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images] or None, videos=[frames],
                   video_metadata=[copy.deepcopy(meta)], return_tensors="pt")
    except Exception as e:
        e.stage = "processor"
        raise
    used_meta = vout["video_metadata"][0]
    indices = [int(i) for i in used_meta.frames_indices] if vp.do_sample_frames else list(range(len(frames)))
    used = frames[indices]
    chw = torch.from_numpy(np.ascontiguousarray(used)).permute(0, 3, 1, 2)[None]
    resized = vp.resize(chw, size=vp.size, resample=vp.resample, factor=vp.patch_size * vp.merge_size,
                        temporal_factor=vp.temporal_patch_size, cap_pixels_per_frame=False)[0]
    pv = np.ascontiguousarray(out["pixel_values_videos"].numpy(), dtype=np.float32)
    assert pv.tobytes() == vout["pixel_values_videos"].numpy().tobytes()
    ids = out["input_ids"][0].numpy().astype(np.int64)
    kw = {"input_ids": out["input_ids"], "mm_token_type_ids": out["mm_token_type_ids"],
          "video_grid_thw": out["video_grid_thw"], "image_grid_thw": out.get("image_grid_thw")}
    if "second_per_grid_ts" in out:
        kw["second_per_grid_ts"] = out["second_per_grid_ts"]
    pos, delta = rope(**kw)
    pos = np.ascontiguousarray(pos[:, 0].numpy(), dtype=np.int64)
    doc: dict[str, Any] = {
        "indices": indices,
        "decoded_frames_sha256": [sha(f) for f in used],
        "resized_shape": list(resized.permute(0, 2, 3, 1).shape),
        "resized_sha256": sha(resized.permute(0, 2, 3, 1).contiguous().numpy()),
        "pixel_values_videos": {"shape": list(pv.shape), "sha256": sha(pv)},
        "video_grid_thw": out["video_grid_thw"].tolist(),
        "input_ids_rle": rle(ids),
        "positions": {"delta": int(delta.reshape(-1)[0]), "sha256": sha(pos)},
    }
    if "second_per_grid_ts" in out:
        spg = out["second_per_grid_ts"].numpy()
        assert spg.dtype == np.float32
        doc["second_per_grid_ts"] = {"values": [float(v) for v in spg], "f32_hex": spg.tobytes().hex()}
    if images:
        doc["image_grid_thw"] = out["image_grid_thw"].tolist()
        doc["pixel_values"] = {"shape": list(out["pixel_values"].shape), "sha256": sha(out["pixel_values"].numpy())}
    if pos.shape[1] <= MAX_INLINE_POSITIONS:
        doc["positions"]["values"] = pos.tolist()
    return doc, pv


def versions() -> dict[str, Any]:
    import av
    import PIL
    import tokenizers
    import torch
    import torchvision
    import transformers

    return {
        "transformers": transformers.__version__, "torch": torch.__version__, "torchvision": torchvision.__version__,
        "pyav": av.__version__, "ffmpeg": {k: ".".join(map(str, v)) for k, v in av.library_versions.items()},
        "pillow": PIL.__version__, "numpy": np.__version__, "tokenizers": tokenizers.__version__,
        "python": platform.python_version(),
    }


def write_clips(out_dir: str) -> dict[str, bytes]:
    """Encode the clips into ``out_dir`` and read them back.

    The encoding runs in a fresh interpreter: with transformers and torch loaded, this
    PyAV/FFmpeg build intermittently corrupts its heap while muxing a faststart MP4.
    """
    import subprocess

    subprocess.run([sys.executable, video_clips.__file__, out_dir], check=True, stderr=subprocess.DEVNULL)
    clips = {}
    for name in {**video_clips.ACCEPTED, **video_clips.BROKEN}:
        with open(os.path.join(out_dir, name), "rb") as f:
            clips[name] = f.read()
    return clips


def jobs(clips) -> list[tuple[str, str]]:
    """(clip, prompt kind) pairs of one configuration: every clip alone, two in a mixed prompt."""
    return [(clip, "video") for clip in clips] + [(clip, "mixed") for clip in MIXED_CLIPS]


def reference_case(proc, rope, config: str, clip: str, data: bytes, kind: str) -> tuple[dict[str, Any], Any]:
    """The case document of ``clip`` in a ``kind`` prompt, and the reference's
    ``pixel_values_videos`` (None when it rejected the request)."""
    preset = CONFIGS[config][0]
    items, image_names = (["video"], []) if kind == "video" else (["image", "video", "image"], list(MIXED_IMAGES))
    text = render(preset, items, "Describe this video." if kind == "video" else "Compare the pictures and the video.")
    images = [img.golden_images.make(n) for n in image_names]
    case: dict[str, Any] = {
        "name": f"{config}-{kind}-{clip.replace('.', '_')}", "config": config, "video": video_params(proc, config),
        "clip": {"file": clip, "sha256": sha(data)},
        "images": [{"name": n, "sha256": sha(d)} for n, d in zip(image_names, images)],
        "prompt_ids": [int(i) for i in proc.tokenizer(text)["input_ids"]], "prompt_text": text,
    }
    pv = None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, clip)
        with open(path, "wb") as f:
            f.write(data)
        try:
            case["expected"], pv = run_reference(proc, rope, config, path, images, text)
        except Exception as e:  # the reference rejected (or crashed on) the request
            case["reference_error"] = clean(f"{getattr(e, 'stage', '?')}: {type(e).__name__}: {e}")
            case["expected_error"] = expected_error(clip, case["reference_error"], header_frames(data))
        else:
            case["header"] = header_of(data)
    return case, pv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tokenizer-dir", default=None, help="cache of the rebuilt tokenizers (read if present, else written)"
    )
    ap.add_argument("--configs", default=",".join(CONFIGS))
    args = ap.parse_args(argv)
    import transformers

    transformers.logging.set_verbosity_error()
    clips = write_clips(os.path.join(HERE, "clips"))
    cases_dir, blobs_dir = os.path.join(HERE, "cases"), os.path.join(HERE, "blobs")
    for d in (cases_dir, blobs_dir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    vers, toks, written = versions(), {}, 0
    for config in [c for c in args.configs.split(",") if c]:
        preset = CONFIGS[config][0]
        vocab = img.PRESETS[preset][3]
        toks.setdefault(vocab, img.build_tokenizer(vocab, args.tokenizer_dir))
        proc = make_processor(config, toks[vocab])
        rope, rope_name = img.rope_fn(preset)
        for clip, kind in jobs(clips):
            case, pv = reference_case(proc, rope, config, clip, clips[clip], kind)
            name = case["name"]
            if pv is not None and pv.nbytes <= MAX_BLOB:
                case["expected"]["pixel_values_videos"]["blob"] = f"{name}.f32"
                with open(os.path.join(blobs_dir, f"{name}.f32"), "wb") as f:
                    f.write(pv.astype("<f4").tobytes())
            case["provenance"] = {"generator": "qwen_vl_plugin/tests/golden_video/generate_qwen_vl_video.py",
                                  "processor": type(proc).__name__,
                                  "video_processor": type(proc.video_processor).__name__,
                                  "video_processor_args": CONFIGS[config][1], "positions": rope_name,
                                  "prompt_text": case.pop("prompt_text"), **vers}
            with open(os.path.join(cases_dir, f"{name}.json"), "w", encoding="utf-8") as f:
                f.write(dumps(case))
            written += 1
            if "expected_error" in case:
                status = case["expected_error"]["match"]
            else:
                status = f"{len(case['expected']['indices'])} frames"
            print(f"{name}: {status}", flush=True)
    print(f"wrote {written} case(s) to {cases_dir}")
    return 0


def header_frames(data: bytes) -> int | None:
    try:
        return header_of(data)["total_frames"]
    except Exception:  # no video stream, no rate, not a container
        return None


def header_of(data: bytes) -> dict[str, Any]:
    """The stream header as transformers' loader reads it."""
    import av

    with av.open(io.BytesIO(data)) as c:
        s = c.streams.video[0]
        return {"total_frames": int(s.frames), "fps": float(s.average_rate), "fps_fraction": str(s.average_rate),
                "width": int(s.width), "height": int(s.height), "codec": s.codec_context.name,
                "pixel_format": s.codec_context.pix_fmt}


if __name__ == "__main__":
    sys.exit(main())
