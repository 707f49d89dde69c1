#!/usr/bin/env python
"""Generate the kimi_k25 video golden cases from the reference: transformers 5.24's Kimi_K25Processor
over Kimi_K25VideoProcessor (torch + torchvision), in the torchvision venv::

    /work/venvs/tv/bin/python plugins/kimi_k25_plugin/tests/golden_video/generate_kimi_k25_video_goldens.py

Each clip of ``kimi_k25_clips`` is encoded once with PyAV and committed (``clips/``, its sha256 in
every case), loaded for the reference with ``load_video(path, backend="pyav")`` and handed over with
its metadata. A case records the spec, the prompt ids (``kimi_k25_reference.tokenizer``), and what
the reference gave: the expanded ids, ``pixel_values_videos`` (dtype, shape, blake3), the
``video_grid_thw`` rows, each video's sampled frame indices and its ``replace_video_token`` text;
for the mixed case also ``pixel_values`` and ``image_grid_thw``. A request the reference refuses
is recorded with its error (``rejection``). Only the record helpers of mm_framework are used
(blake3 digests, library versions), never its processing.

The same reference runs are also written in ``mm_framework.testing.golden``'s schema under
``conformance/`` (per item its content hash, feature and aux, the expanded ids, offsets from the
first to the last video token, ``rope1d``), which ``FamilyConformance`` replays; those specs hold
the test tokenizer's ``video_text_token_ids``.
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import kimi_k25_clips  # noqa: E402
import kimi_k25_images  # noqa: E402
import kimi_k25_reference as ref  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, file_case, ids_doc, reference_versions, sha256, tensor_doc,
)

PRESET = {  # kimi_k2_5, written out: the replay pins the shipped preset to it
    "family": "kimi_k25", "image_token_id": 163605, "patch_size": 14, "merge_size": 2, "max_patches": 16384,
    "max_size_per_side": 512, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "resample": "pil_bicubic", "rescale_factor": 1 / 255, "do_rescale": True, "do_normalize": True,
    "alpha": "composite", "exif_transpose": False, "video_token_id": 163840, "media_begin_token_id": 163602,
    "media_content_token_id": 163603, "media_end_token_id": 163604, "video_sample_frames": True, "video_fps": 2.0,
    "video_max_patches": 4096, "video_max_size_per_side": 512, "temporal_patch_size": 4,
    "video_resample": "pil_bicubic", "video_text_token_ids": None,
}
VARIANTS = {
    "preset": {},
    "budget_16": {"video_max_patches": 16},
    "all_frames": {"video_sample_frames": False, "video_fps": None},
    "fps_5_tps_2": {"video_fps": 5.0, "temporal_patch_size": 2},
    "side_4_lanczos": {"video_max_size_per_side": 4, "video_resample": "pil_lanczos"},
    "bilinear_clip_norm": {"video_resample": "pil_bilinear", "image_mean": [0.48145466, 0.4578275, 0.40821073],
                           "image_std": [0.26862954, 0.26130258, 0.27577711]},
    "fps_60": {"video_fps": 60.0},
}
VIDEO = "<|kimi_k25_video_placeholder|>"
IMAGE = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"
PROMPT = f"<|im_user|>user<|im_middle|>x{VIDEO}What is in this image ?<|im_end|><|im_assistant|>assistant<|im_middle|>"
MIXED = f"<|im_user|>user<|im_middle|>{VIDEO}{IMAGE}and {VIDEO} compare them .<|im_end|>"
# name -> (variant, clips, image or None, prompt)
CASES: dict[str, tuple[str, list[str], str | None, str]] = {
    **{f"preset-{c}": ("preset", [c], None, PROMPT) for c in kimi_k25_clips.CLIPS},
    "budget_16-mpeg4_320x240_9f_6fps": ("budget_16", ["mpeg4_320x240_9f_6fps"], None, PROMPT),
    "all_frames-mpeg4_100x60_30f_10fps": ("all_frames", ["mpeg4_100x60_30f_10fps"], None, PROMPT),
    "all_frames-h264_64x36_7f_30fps": ("all_frames", ["h264_64x36_7f_30fps"], None, PROMPT),
    "fps_5_tps_2-mpeg4_320x240_9f_6fps": ("fps_5_tps_2", ["mpeg4_320x240_9f_6fps"], None, PROMPT),
    "side_4_lanczos-mpeg4_320x240_9f_6fps": ("side_4_lanczos", ["mpeg4_320x240_9f_6fps"], None, PROMPT),
    "bilinear_clip_norm-mpeg4_320x240_9f_6fps": ("bilinear_clip_norm", ["mpeg4_320x240_9f_6fps"], None, PROMPT),
    "preset-mixed": ("preset", ["mpeg4_100x60_30f_10fps", "h264_64x36_7f_30fps"], "rgb_640x480.jpg", MIXED),
    "fps_60-mpeg4_100x60_30f_10fps": ("fps_60", ["mpeg4_100x60_30f_10fps"], None, PROMPT),
}


def tensor(array: Any) -> dict[str, Any]:
    a = np.ascontiguousarray(np.asarray(array))
    return {"dtype": str(a.dtype), "shape": list(a.shape), "blake3": digest(a)}


def run(name: str, variant: str, clips: list[str], image: str | None, prompt: str) -> dict[str, Any]:
    from PIL import Image
    from transformers.video_utils import load_video

    spec = {**PRESET, **VARIANTS[variant]}
    proc = ref.processor(spec)
    tok = proc.tokenizer
    videos, metadata, docs = [], [], []
    for clip in clips:
        path = os.path.join(HERE, "clips", f"{clip}.mp4")
        with open(path, "rb") as fh:
            docs.append({"file": f"{clip}.mp4", "sha256": sha256(fh.read())})
        frames, meta = load_video(path, backend="pyav")
        videos.append(frames)
        metadata.append(meta)
    case: dict[str, Any] = {"name": name, "variant": variant, "spec": spec, "clips": docs, "image": image,
                            "prompt_ids": tok(prompt)["input_ids"]}
    images = None
    if image is not None:
        data = kimi_k25_images.make(image)
        case["image_sha256"] = sha256(data)
        images = [Image.open(io.BytesIO(data))]
    try:
        out = proc(text=[prompt], videos=videos, video_metadata=metadata, images=images, return_tensors="np")
        # The same call's pieces, for the per-video facts: the processed videos and their texts.
        vids = proc.video_processor(videos=videos, video_metadata=metadata, return_metadata=True,
                                    return_tensors="np")
    except ValueError as e:
        case["rejection"] = {"error": "ValueError", "message": str(e)}
        return case
    expected: dict[str, Any] = {
        "input_ids": out["input_ids"][0].tolist(),
        "pixel_values_videos": tensor(out["pixel_values_videos"]),
        "video_grid_thw": np.asarray(out["video_grid_thw"]).tolist(),
        "frames_indices": [[int(i) for i in m.frames_indices] for m in vids["video_metadata"]],
        "expansion_text": [proc.replace_video_token(vids, video_idx=k) for k in range(len(videos))],
    }
    assert digest(np.asarray(vids["pixel_values_videos"])) == expected["pixel_values_videos"]["blake3"]
    buf = io.BytesIO()
    np.save(buf, np.asarray(out["pixel_values_videos"]))
    case["_pvv"] = buf.getvalue()
    if images is not None:
        expected["pixel_values"] = tensor(out["pixel_values"])
        expected["image_grid_thw"] = np.asarray(out["image_grid_thw"]).tolist()
    case["expected"] = expected
    return case


def conformance_case(case: dict[str, Any], datas: list[bytes], image: bytes | None) -> dict[str, Any]:
    """``case`` in the golden schema: items in prompt order, each with its slice of the reference's
    tensors (a video's rows are its frames' patches; its aux ``video_thw`` sums its chunks' frames)."""
    spec = {**case["spec"], "video_text_token_ids": ref.text_ids(case["spec"])}
    doc: dict[str, Any] = {
        "name": case["name"], "spec": spec, "prompt_ids": case["prompt_ids"],
        "images": [] if image is None else [{"name": case["image"], "blake3": digest(image)}],
        "videos": [f"../../../clips/{c['file']}" for c in case["clips"]], "provenance": case["provenance"],
    }
    if "rejection" in case:
        doc["reference_error"] = f"{case['rejection']['error']}: {case['rejection']['message']}"
        return doc
    exp = case["expected"]
    ids = np.asarray(exp["input_ids"], dtype=np.int64)
    vid, pad = spec["video_token_id"], spec["image_token_id"]
    items = []  # (start, end, hash, feature, aux)
    pos_v = np.flatnonzero(ids == vid)
    rows = iter(exp["video_grid_thw"])
    pvv = np.load(io.BytesIO(case.pop("_pvv")))
    at_row, at_tok = 0, 0
    for k, data in enumerate(datas):
        chunks = int(np.ceil(len(exp["frames_indices"][k]) / spec["temporal_patch_size"]))
        mine = [next(rows) for _ in range(chunks)]
        per_chunk = mine[0][1] * mine[0][2] // spec["merge_size"] ** 2
        toks = pos_v[at_tok : at_tok + chunks * per_chunk]
        at_tok += chunks * per_chunk
        frames = sum(r[0] for r in mine)
        n = frames * mine[0][1] * mine[0][2]
        feature = tensor_doc("f32", np.ascontiguousarray(pvv[at_row : at_row + n]))
        at_row += n
        aux = {"video_thw": {"dtype": "i64", "shape": [3], "values": [frames, mine[0][1], mine[0][2]]}}
        items.append((int(toks[0]), int(toks[-1]), content_hash(data), feature, aux))
    if image is not None:
        pads = np.flatnonzero(ids == pad)
        aux = {"image_grid_thw": {"dtype": "i64", "shape": [3], "values": exp["image_grid_thw"][0]}}
        feature = {**exp["pixel_values"], "dtype": "f32"}  # the one image's rows: all of pixel_values
        assert exp["pixel_values"]["dtype"] == "float32"
        items.append((int(pads[0]), int(pads[-1]), content_hash(image), feature, aux))
    items.sort(key=lambda it: it[0])
    doc["expected"] = {
        "hashes": [it[2] for it in items], "features": [it[3] for it in items], "aux": [it[4] for it in items],
        "input_ids": ids_doc(ids), "offsets": [[it[0], it[1]] for it in items], "positions": {"kind": "rope1d"},
    }
    return doc


def main() -> None:
    os.makedirs(os.path.join(HERE, "clips"), exist_ok=True)
    for clip in kimi_k25_clips.CLIPS:
        path = os.path.join(HERE, "clips", f"{clip}.mp4")
        if not os.path.exists(path):  # committed once: a re-encode may differ across FFmpeg builds
            with open(path, "wb") as fh:
                fh.write(kimi_k25_clips.make(clip))
    import av

    versions = {**reference_versions(), "av": av.__version__}
    conformance = os.path.join(HERE, "conformance")
    for name, (variant, clips, image, prompt) in CASES.items():
        case = run(name, variant, clips, image, prompt)
        case["provenance"] = {"generator": "generate_kimi_k25_video_goldens.py", **versions}
        datas = [open(os.path.join(HERE, "clips", c["file"]), "rb").read() for c in case["clips"]]
        golden = conformance_case(case, datas, None if image is None else kimi_k25_images.make(image))
        rejection = None
        if "reference_error" in golden:  # the one refusal: more frames asked than the clip has
            rejection = {"type": "MediaError", "item": 0, "match": "more than the clip has"}
        print(file_case(golden, rejection, os.path.join(conformance, "cases"), os.path.join(conformance, "rejections")))
        with open(os.path.join(HERE, "cases", f"{name}.json"), "w", encoding="utf-8") as fh:
            json.dump(case, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print(name, "rejected" if "rejection" in case else "ok")


if __name__ == "__main__":
    main()
