#!/usr/bin/env python
"""Generate the smolvlm video golden cases from the reference: transformers 5.24's
SmolVLMProcessor with SmolVLMVideoProcessor (torchvision; run in the torchvision venv, with
num2words, the reference's own dependency).

Each case is one request's videos: clips made with PyAV (``smolvlm_clips``; their bytes are
stored in ``golden_video/clips/``, since encoders are not bit-stable), read by the reference
as a user would (``load_video(path, backend="pyav")``) and passed with their metadata to the
video processor built from explicit arguments equal to the case's spec
(``smolvlm_reference.video_processing``). Recorded per case: the batch's ``pixel_values`` and
``pixel_attention_mask`` (dtype, shape, blake3) and per video its kept frame indices and
``replace_video_token``'s text. Library versions (transformers, torch, torchvision,
PyAV/FFmpeg, num2words, numpy) are recorded::

    /work/venvs/tv/bin/python plugins/smolvlm_plugin/tests/generate_smolvlm_video_goldens.py
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import smolvlm_clips  # noqa: E402
from smolvlm_reference import published_spec, video_processing  # noqa: E402
from mm_framework.testing.records import digest, reference_versions, tensor_doc, write_case  # noqa: E402

OUT = os.path.join(HERE, "golden_video")
VIDEO_ID = 49280
PRESET = {**published_spec("smolvlm2_500m_video_instruct"), "video_token_id": VIDEO_ID, "video_do_sample_frames": False,
          "video_num_frames": 64, "video_fps": 1.0, "video_size_longest_edge": None}
SMALL = {**PRESET, "size_longest_edge": 96, "max_image_size": 32, "image_seq_len": 4}
C40, C6, C75 = "clip_64x48_40f_10fps.mp4", "clip_32x48_6f_ntsc.mp4", "clip_48x32_75f_1fps.mp4"
# name -> (spec fields over SMALL, clips). Every video field and option at least once.
CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "all_frames_ntsc": ({}, [C6]),
    "fps_1_max_64_skips_a_second": ({"video_do_sample_frames": True}, [C75]),
    "fps_2_max_5_two_videos": ({"video_do_sample_frames": True, "video_fps": 2.0, "video_num_frames": 5}, [C6, C40]),
    "edge_40_bicubic_3": ({"video_do_sample_frames": True, "video_num_frames": 3, "video_size_longest_edge": 40,
                           "resample": "pil_bicubic"}, [C40]),
    "unnormalized_bilinear": ({"video_do_sample_frames": True, "video_num_frames": 2, "do_normalize": False,
                               "resample": "pil_bilinear"}, [C75]),
    "preset_2_frames": ({**PRESET, "video_do_sample_frames": True, "video_num_frames": 2}, [C40]),
}


def run(spec: dict[str, Any], clips: list[str], clip_dir: str) -> dict[str, Any]:
    import numpy as np
    from transformers.video_utils import load_video

    proc = video_processing(spec)
    loaded = [load_video(os.path.join(clip_dir, c), backend="pyav") for c in clips]
    out = proc.video_processor(videos=[f for f, _ in loaded], video_metadata=[copy.deepcopy(m) for _, m in loaded],
                               return_metadata=True, return_tensors="np")
    videos = [{"file": c, "blake3": digest(open(os.path.join(clip_dir, c), "rb").read()),
               "frames_indices": [int(i) for i in out["video_metadata"][k].frames_indices],
               "expansion_text": proc.replace_video_token(out, k)} for k, c in enumerate(clips)]
    kwargs = {"pixel_values": tensor_doc("f32", np.ascontiguousarray(out["pixel_values"], dtype=np.float32)),
              "pixel_attention_mask": tensor_doc("i64", np.ascontiguousarray(out["pixel_attention_mask"],
                                                                             dtype=np.int64))}
    return {"spec": spec, "videos": videos, "expected": {"model_kwargs": kwargs}}


def main() -> int:
    from importlib.metadata import version

    import av

    vers = {**reference_versions(), "av": av.__version__, "ffmpeg": str(getattr(av, "ffmpeg_version_info", "")),
            "num2words": version("num2words")}
    for k in ("torch", "torchvision"):
        vers[k] = vers[k].replace(" (installed, not used)", "")
    clip_dir = os.path.join(OUT, "clips")
    for sub in ("cases", "clips"):
        shutil.rmtree(os.path.join(OUT, sub), ignore_errors=True)
    os.makedirs(clip_dir)
    for name in smolvlm_clips.CLIPS:
        with open(os.path.join(clip_dir, name), "wb") as f:
            f.write(smolvlm_clips.make(name))
    for name, (fields, clips) in CASES.items():
        case = {"name": name, **run({**SMALL, **fields}, clips, clip_dir)}
        case["provenance"] = {
            "generator": "plugins/smolvlm_plugin/tests/generate_smolvlm_video_goldens.py",
            "processor": "SmolVLMProcessor.replace_video_token", "video_processor": "SmolVLMVideoProcessor",
            "loader": "transformers load_video(backend='pyav')", **vers,
        }
        write_case(os.path.join(OUT, "cases", name), case)
        print(name, case["expected"]["model_kwargs"]["pixel_values"]["shape"], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
