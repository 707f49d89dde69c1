#!/usr/bin/env python
"""Generate the gemma4 video golden cases from the reference: transformers 5.24's Gemma4Processor
with Gemma4VideoProcessor (torchvision; run in the torchvision venv).

Each case is one request: clips made with PyAV (``gemma4_clips``; their bytes are stored in
``golden_video/clips/``, since encoders are not bit-stable), read by the reference as a user
would (``load_video(path, backend="pyav")``) and passed with their metadata to the full
processor, built from explicit arguments equal to the case's spec (``gemma4_reference``;
images on the PIL backend). The tokenizer is :func:`gemma4_reference.video_tokenizer`
(Gemma's structure around a timestamp, the spec's ids: the real one is not available
offline). Recorded per case: the prompt ids, the expanded ids, offsets, the model kwargs'
dtype/shape/blake3 (``pixel_values_videos``, ``video_position_ids``, ``num_frames_per_video``,
and the images' ``pixel_values``, ``image_position_ids``), and per video its kept frame
indices, timestamps, soft tokens per frame and ``replace_video_token``'s text. Requests the
reference refuses go to ``golden_video/rejections`` with the error mm_framework must give.
Library versions (transformers, torch, torchvision, PyAV/FFmpeg, Pillow, numpy) are recorded::

    /work/venvs/tv/bin/python plugins/gemma4_plugin/tests/generate_gemma4_video_goldens.py
"""

from __future__ import annotations

import copy
import io
import os
import shutil
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import gemma4_clips  # noqa: E402
import gemma4_images  # noqa: E402
from gemma4_reference import IMAGE, VIDEO, video_processing  # noqa: E402
from generate_gemma4_goldens import PRESET  # noqa: E402
from mm_framework.testing.records import digest, file_case, ids_doc, reference_versions, tensor_doc, token_runs  # noqa: E402

OUT = os.path.join(HERE, "golden_video")
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
C40, C30, C130, C6 = ("clip_64x48_40f_10fps.mp4", "clip_96x32_30f_12fps.mp4", "clip_32x24_130f_1fps.mp4",
                      "clip_40x60_6f_ntsc.mp4")
ONE = f"Describe {VIDEO} now."
# name -> (spec fields over the preset, prompt, images, clips). Every video option at least once.
CASES: dict[str, tuple[dict[str, Any], str, list[str], list[str]]] = {
    "preset_mixed": ({}, f"first {IMAGE} then {VIDEO} and {VIDEO} last.", ["rgb_640x480.jpg"], [C40, C130]),
    "frames_4_budget_140": ({"video_num_frames": 4, "video_max_soft_tokens": 140}, ONE, [], [C30]),
    "fps_2": ({"video_num_frames": None, "video_fps": 2.0}, ONE, [], [C30]),
    "fps_2_one_frame": ({"video_num_frames": None, "video_fps": 2.0}, ONE, [], [C6]),
    "all_frames_bilinear_clip_norm": ({"video_do_sample_frames": False, "video_resample": "pil_bilinear",
                                       "video_image_mean": CLIP_MEAN, "video_image_std": CLIP_STD}, ONE, [], [C6]),
    "frames_3_budget_280_unrescaled": ({"video_num_frames": 3, "video_max_soft_tokens": 280,
                                        "video_do_rescale": False}, ONE, [], [C40]),
    "frames_1_budget_560": ({"video_num_frames": 1, "video_max_soft_tokens": 560}, ONE, [], [C130]),
    "minutes_1120": ({"video_num_frames": 2, "video_max_soft_tokens": 1120}, VIDEO, [], [C130]),
    # Refused: more frames than the clip has (32 of 6; 2 fps of a 1 fps clip is 260 of 130).
    "too_few_frames": ({}, ONE, [], [C6]),
    "fps_2_of_1fps": ({"video_num_frames": None, "video_fps": 2.0}, ONE, [], [C130]),
}
KWARGS = {"pixel_values_videos": "f32", "video_position_ids": "i64", "num_frames_per_video": "i64",
          "pixel_values": "f32", "image_position_ids": "i64"}


def run(spec: dict[str, Any], text: str, images: list[str], clips: list[str], tmp: str) -> dict[str, Any]:
    import numpy as np
    from PIL import Image
    from transformers.video_utils import load_video

    proc = video_processing(spec)
    loaded = [load_video(os.path.join(tmp, c), backend="pyav") for c in clips]
    imgs = [gemma4_images.make(n) for n in images]
    prompt = proc.tokenizer(text)["input_ids"]
    case: dict[str, Any] = {
        "spec": spec, "prompt_ids": prompt,
        "images": [{"name": n, "blake3": digest(d)} for n, d in zip(images, imgs)],
        "videos": [{"file": c, "blake3": digest(open(os.path.join(tmp, c), "rb").read())} for c in clips],
    }
    try:
        out = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in imgs] or None,
                   videos=[f for f, _ in loaded], video_metadata=[copy.deepcopy(m) for _, m in loaded],
                   return_tensors="np")
    except ValueError as e:
        assert "exceeds total_num_frames" in str(e), e
        case["reference_error"] = str(e)
        return case
    vout = proc.video_processor(videos=[f for f, _ in loaded], video_metadata=[copy.deepcopy(m) for _, m in loaded],
                                return_metadata=True)
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    offsets = [[int(s), int(e) - 1] for s, e in token_runs(ids, spec["image_token_id"])]
    runs = token_runs(ids, spec["video_token_id"])
    videos, at = [], 0
    for k, meta in enumerate(vout["video_metadata"]):
        n = int(vout["num_frames_per_video"][k])
        offsets.append([int(runs[at][0]), int(runs[at + n - 1][1]) - 1])
        at += n
        videos.append({"frames_indices": [int(i) for i in meta.frames_indices], "fps": meta.fps,
                       "timestamps": [float(t) for t in meta.timestamps],
                       "soft_tokens": int(vout["num_soft_tokens_per_video"][k]),
                       "expansion_text": proc.replace_video_token(vout, k)})
    assert at == len(runs)
    assert np.asarray(vout["pixel_values_videos"]).tobytes() == np.asarray(out["pixel_values_videos"]).tobytes()
    case["expected"] = {
        "input_ids": ids_doc(ids), "offsets": offsets,
        "model_kwargs": {k: tensor_doc(t, np.ascontiguousarray(out[k]).astype({"f32": np.float32,
                                                                               "i64": np.int64}[t]))
                         for k, t in KWARGS.items() if k in out},
    }
    case["gemma4_video"] = videos
    return case


def main() -> int:
    import av

    vers = {**reference_versions(), "av": av.__version__, "ffmpeg": str(getattr(av, "ffmpeg_version_info", ""))}
    for k in ("torch", "torchvision"):
        vers[k] = vers[k].replace(" (installed, not used)", "")
    clip_dir = os.path.join(OUT, "clips")
    for sub in ("cases", "rejections", "clips"):
        shutil.rmtree(os.path.join(OUT, sub), ignore_errors=True)
    os.makedirs(clip_dir)
    for name in gemma4_clips.CLIPS:
        with open(os.path.join(clip_dir, name), "wb") as f:
            f.write(gemma4_clips.make(name))
    for name, (fields, text, images, clips) in CASES.items():
        spec = {**PRESET, **fields}
        case = {"name": name, **run(spec, text, images, clips, clip_dir)}
        error = case.pop("reference_error", None)
        rejection = {"type": "MediaError", "item": 0, "match": "cannot sample"} if error else None
        case["provenance"] = {
            "generator": "plugins/gemma4_plugin/tests/generate_gemma4_video_goldens.py",
            "processor": "Gemma4Processor", "video_processor": "Gemma4VideoProcessor",
            "image_processor": "Gemma4ImageProcessorPil", "loader": "transformers load_video(backend='pyav')",
            "tokenizer": "gemma4_reference.video_tokenizer", "prompt_text": text, **vers,
            **({"reference_error": error} if error else {}),
        }
        print(file_case(case, rejection, os.path.join(OUT, "cases"), os.path.join(OUT, "rejections"),
                        extra=("gemma4_video",)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
