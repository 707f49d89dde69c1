#!/usr/bin/env python
"""Generate the minicpmv4_6 video golden cases from the reference: transformers 5.24's
MiniCPMV4_6Processor with MiniCPMV4_6VideoProcessor (torch + torchvision, so run it in the
torchvision venv)::

    /work/venvs/tv/bin/python plugins/minicpmv4_6_plugin/tests/generate_minicpmv4_6_video_goldens.py

Each clip of ``minicpmv4_6_video_cases.CLIPS`` is encoded once with PyAV into
``golden_video/clips`` (the replay decodes those bytes, whatever PyAV it has); transformers'
pyav loader decodes it, the processor samples frames from its metadata, and the case records
the prompt ids, the expanded ids, the sha256 and shape of ``pixel_values_videos`` and
``target_sizes_videos``, and the library versions. mm_framework is not imported.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import minicpmv4_6_reference as ref  # noqa: E402
from generate_minicpmv4_6_goldens import PUBLISHED  # noqa: E402
from minicpmv4_6_video_cases import CLIPS, PROMPTS, VARIANTS  # noqa: E402

OUT = os.path.join(HERE, "golden_video")
VERSIONS = {name: md.version(name) for name in ("transformers", "torch", "torchvision", "av", "numpy")}


def reference(spec: dict, prompt: str, clip_paths: list[str]) -> dict:
    from transformers.video_utils import load_video

    proc = ref.video_capable_processor(spec)
    loaded = [load_video(p, backend="pyav") for p in clip_paths]
    text = PROMPTS[prompt]
    r = proc(text=[text], videos=[f for f, _ in loaded], video_metadata=[m for _, m in loaded],
             return_tensors="pt")
    pv = r["pixel_values_videos"].numpy()
    return {
        "prompt_ids": proc.tokenizer(text)["input_ids"],
        "input_ids": r["input_ids"][0].tolist(),
        "pixel_values_videos": {"shape": list(pv.shape), "sha256": hashlib.sha256(pv.tobytes()).hexdigest()},
        "target_sizes_videos": r["target_sizes_videos"].tolist(),
    }


def main() -> None:
    shutil.rmtree(os.path.join(OUT, "cases"), ignore_errors=True)
    os.makedirs(os.path.join(OUT, "cases"))
    os.makedirs(os.path.join(OUT, "clips"), exist_ok=True)
    paths = {}
    for seed, (name, (frames, w, h, fps)) in enumerate(CLIPS.items()):
        paths[name] = os.path.join(OUT, "clips", f"{name}.mp4")
        with open(paths[name], "wb") as f:
            f.write(ref.make_clip(frames, w, h, fps, seed))
    jobs = [(v, c, "video") for v in VARIANTS for c in CLIPS] + [("", "c200x120_9f_3fps", "two")]
    for variant, clip, prompt in jobs:
        spec = {**PUBLISHED, **VARIANTS[variant]}
        name = f"minicpm_v_4_6{variant}-{prompt}-{clip}"
        with tempfile.TemporaryDirectory():
            expected = reference(spec, prompt, [paths[clip]] * PROMPTS[prompt].count("<|video_pad|>"))
        case = {"name": name, "spec": spec, "prompt": prompt, "clip": clip, "expected": expected,
                "provenance": {"reference": "MiniCPMV4_6Processor + MiniCPMV4_6VideoProcessor, pyav loader",
                               "versions": VERSIONS}}
        with open(os.path.join(OUT, "cases", f"{name}.json"), "w") as f:
            json.dump(case, f, indent=1)
            f.write("\n")
        print(name, len(expected["input_ids"]))


if __name__ == "__main__":
    main()
