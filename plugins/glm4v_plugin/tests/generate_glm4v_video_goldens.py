#!/usr/bin/env python
"""Generate the glm4v video golden cases from the reference: transformers 5.24's
Glm4vProcessor / Glm46VProcessor with Glm4vVideoProcessor / Glm46VVideoProcessor.

Each case is one request: a chat-shaped prompt holding a clip (alone, or between two images)
run through the real processor after ``load_video(backend="pyav")``, for each configuration
of ``glm4v_video_cases.CONFIGS`` (both generations, the class defaults, a small budget with
another fps and a short ``max_duration``, a temporal patch of 3 with other statistics). The
clips are encoded once with PyAV (``glm4v_clips``) and committed under ``golden_video/clips``
(encoders are not bit-stable across FFmpeg builds). Accepted requests go to
``golden_video/cases/<name>/case.json`` in the schema of ``mm_framework.testing.golden``:
per item its content hash, the blake3 of its ``pixel_values`` / ``pixel_values_videos`` rows
and its grid, the expanded ids, offsets (an image's run of ``<|image|>``; a video's span from
its first ``<|image|>`` to its last timestamp token) and ``Glm4vModel.get_rope_index``'s
positions. The case's spec holds ``video_timestamp_ids`` for the timestamp texts the processor
wrote (read back from ``replace_video_token``'s text), encoded by the small test tokenizer
(``glm4v_reference.video_tokenizer``; the real GLM-4 vocabularies are not available offline).
Requests the reference refuses go to ``golden_video/rejections`` with the error mm_framework
must give. Run in the torchvision venv::

    /work/venvs/tv/bin/python plugins/glm4v_plugin/tests/generate_glm4v_video_goldens.py
"""

from __future__ import annotations

import copy
import io
import os
import re
import shutil
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]
import glm4v_clips as clips  # noqa: E402
import glm4v_images as images  # noqa: E402
import glm4v_reference as ref  # noqa: E402
import glm4v_video_cases as cases  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, file_case, ids_doc, reference_versions, tensor_doc,
)

OUT = os.path.join(HERE, "golden_video")
CLIPS = list(clips.CLIPS)
MIXED = ("50x36_45f_29.97fps", ("tiny_10x10.png", "odd_333x501.png"))
# Refused by the reference: (config, clip) -> the error mm_framework gives.
REFUSALS = {
    ("glm46v", "64x48_1f_10fps"): {"type": "MediaError", "match": "GLM-4.6V's sampler no frame"},
    ("glm46v_tps3", "64x48_1f_10fps"): {"type": "MediaError", "match": "GLM-4.6V's sampler no frame"},
    ("glm46v_tps3", "34x18_7f_10fps"): {"type": "MediaError", "match": "t:2 must be larger than temporal_factor:3"},
}
STAMP = re.compile(r"<\|end_of_image\|>(.*?)(?=<\|begin_of_image\|>|$)")


def run(config: str, clip: str, data: bytes, names: tuple[str, ...]) -> dict[str, Any]:
    import numpy as np
    from PIL import Image
    from transformers.video_utils import load_video

    model, _ = cases.CONFIGS[config]
    tok = _tok(config)
    base = cases.spec(config, tok, [])
    items = ["image", "video", "image"] if names else ["video"]
    text = cases.prompt(items)
    prompt_ids = ref.token_ids(tok, text)
    case: dict[str, Any] = {
        "name": f"{config}-{clip}" + ("-mixed" if names else ""), "prompt_ids": prompt_ids, "prompt_text": text,
        "images": [{"name": n, "blake3": digest(images.make(n))} for n in names],
        "videos": [f"../../clips/{clip}.mp4"], "provenance": {"generator": os.path.basename(__file__),
                                                              **reference_versions(), **_av_versions()},
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clip.mp4")
        with open(path, "wb") as f:
            f.write(data)
        frames, meta = load_video(path, backend="pyav")
    proc = ref.video_processor_full(base, tok, model)
    try:
        vout = proc.video_processor(videos=[frames], video_metadata=[copy.deepcopy(meta)], return_metadata=True,
                                    return_tensors="pt")
        out = proc(text=[text], images=[Image.open(io.BytesIO(images.make(n))) for n in names] or None,
                   videos=[frames], video_metadata=[copy.deepcopy(meta)], return_tensors="pt")
    except Exception as e:  # noqa: BLE001 - the reference refusing the clip is a case too
        case["spec"] = base
        case["reference_error"] = f"{type(e).__name__}: {e}"
        return case
    expansion = proc.replace_video_token({**vout, "video_grid_thw": out["video_grid_thw"]}, 0)
    stamps = sorted(set(STAMP.findall(expansion)))
    case["spec"] = cases.spec(config, tok, stamps)
    ids = out["input_ids"][0].numpy().astype(np.int64)
    pad, start_v, end_v = base["image_token_id"], ref.MARKERS["<|begin_of_video|>"], ref.MARKERS["<|end_of_video|>"]
    # Offsets: the images' pad runs outside the video, then the video's span.
    vs = int(np.flatnonzero(ids == start_v)[0]) + 2  # past <|begin_of_video|> and the first <|begin_of_image|>
    ve = int(np.flatnonzero(ids == end_v)[0]) - 1
    pads = np.flatnonzero(ids == pad)
    outside = pads[(pads < vs) | (pads > ve)]
    runs = np.split(outside, np.flatnonzero(np.diff(outside) > 1) + 1) if outside.size else []
    offsets = [[int(r[0]), int(r[-1])] for r in runs] + [[vs, ve]]
    rope = ref.rope_fn(base["merge_size"])
    pos, delta = rope(input_ids=out["input_ids"], mm_token_type_ids=out["mm_token_type_ids"],
                      image_grid_thw=out.get("image_grid_thw"), video_grid_thw=out["video_grid_thw"])
    features, aux = [], []
    if names:
        pv, grids = out["pixel_values"].numpy(), out["image_grid_thw"].numpy()
        at = 0
        for g in grids:
            n = int(np.prod(g))
            features.append(tensor_doc("f32", np.ascontiguousarray(pv[at : at + n])))
            aux.append({"image_grid_thw": {"dtype": "i64", "shape": [3], "values": [int(v) for v in g]}})
            at += n
    pvv = np.ascontiguousarray(out["pixel_values_videos"].numpy(), dtype=np.float32)
    assert pvv.tobytes() == vout["pixel_values_videos"].numpy().tobytes()
    features.append(tensor_doc("f32", pvv))
    aux.append({"video_grid_thw": {"dtype": "i64", "shape": [3],
                                   "values": [int(v) for v in out["video_grid_thw"][0]]}})
    # Output items are in prompt order.
    hashes = [content_hash(images.make(n)) for n in names] + [content_hash(data)]
    order = sorted(range(len(offsets)), key=lambda k: offsets[k][0])
    case["expected"] = {
        "hashes": [hashes[k] for k in order], "features": [features[k] for k in order],
        "aux": [aux[k] for k in order], "input_ids": ids_doc(ids), "offsets": [offsets[k] for k in order],
        "positions": {"kind": "mrope", "delta": int(delta.reshape(-1)[0]),
                      "blake3": digest(np.ascontiguousarray(pos[:, 0].numpy(), dtype=np.int64))},
    }
    case["sampled_indices"] = [int(i) for i in vout["video_metadata"][0].frames_indices]
    return case


_TOKS: dict[str, Any] = {}


def _tok(config: str):
    model, _ = cases.CONFIGS[config]
    if model not in _TOKS:
        _TOKS[model] = ref.video_tokenizer({"glm4v": 151343, "glm46v": 151363}[model])
    return _TOKS[model]


def _av_versions() -> dict[str, Any]:
    import av

    return {"pyav": av.__version__, "ffmpeg": {k: ".".join(map(str, v)) for k, v in av.library_versions.items()}}


def main() -> None:
    clip_dir = os.path.join(OUT, "clips")
    for sub in ("cases", "rejections"):
        shutil.rmtree(os.path.join(OUT, sub), ignore_errors=True)
    os.makedirs(clip_dir, exist_ok=True)
    data = {}
    for name in CLIPS:
        path = os.path.join(clip_dir, f"{name}.mp4")
        if not os.path.exists(path):  # the committed bytes are the input: never re-encoded
            with open(path, "wb") as f:
                f.write(clips.encode(name))
        with open(path, "rb") as f:
            data[name] = f.read()
    jobs = [(c, clip, ()) for c in cases.CONFIGS for clip in CLIPS]
    jobs += [(c, MIXED[0], MIXED[1]) for c in ("glm4v", "glm46v")]
    for config, clip, names in jobs:
        case = run(config, clip, data[clip], names)
        refusal = REFUSALS.get((config, clip))
        if ("reference_error" in case) != (refusal is not None):
            raise RuntimeError(f"{case['name']}: reference error {case.get('reference_error')!r}, "
                               f"declared refusal {refusal!r}")
        print(file_case(case, refusal, os.path.join(OUT, "cases"), os.path.join(OUT, "rejections"),
                        extra=("sampled_indices",)))


if __name__ == "__main__":
    main()
