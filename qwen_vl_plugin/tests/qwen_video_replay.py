"""Test support: one video golden case recomputed with the phase-1 functions, no torch.

``replay`` runs decode -> sample -> resize -> patchify -> ids -> rope for a case and
returns a document in the shape of the case's ``expected`` section, so a test compares
the two field by field (pipeline order: the first differing field is the first broken
stage). ``prompt_and_positions`` is the part that needs no decoding: it starts from the
recorded header, indices and grid, so it runs without PyAV.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from . import golden_images
import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.testing.records import rle, sha256 as sha
from qwen_vl_plugin.mrope import IMAGE, TEXT, VIDEO, rope_index
from qwen_vl_plugin.video import (
    qwen2_frame_size,
    qwen3_frame_size,
    second_per_grid_t,
    video_norm,
)
from qwen_vl_plugin.video_prompt import TimestampVocab, group_timestamps, qwen2_video_tokens, qwen3_video_ids
from qwen_vl_plugin.video_sampling import qwen2_sample_indices, qwen3_sample_indices
from qwen_vl_plugin.video_spec import TIMESTAMP_PIECES, VIDEO_FIELDS

GOLDEN = Path(__file__).parent / "golden_video"
CASES = sorted((GOLDEN / "cases").glob("*.json"))
NO_LIMIT = 1 << 62


@functools.lru_cache(maxsize=None)
def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def clip_bytes(case: dict[str, Any]) -> bytes:
    data = (GOLDEN / "clips" / case["clip"]["file"]).read_bytes()
    assert sha(data) == case["clip"]["sha256"], (
        f"clip {case['clip']['file']} differs from the one the case was made from"
    )
    return data


def sample(v: dict[str, Any], total: int, fps: float | None) -> tuple[list[int] | None, float | None]:
    """The frames a configuration keeps (None: every frame) and the rate its prompt uses."""
    if not v["do_sample_frames"]:
        return None, fps
    if v["generation"] == "qwen3":
        return qwen3_sample_indices(total, fps, fps=v["fps"], num_frames=v["num_frames"],
                                    min_frames=v["min_frames"], max_frames=v["max_frames"])
    indices = qwen2_sample_indices(total, fps, fps=v["fps"], num_frames=v["num_frames"], min_frames=v["min_frames"],
                                   max_frames=v["max_frames"], temporal_patch_size=v["temporal_patch_size"])
    return indices, fps


def frame_size(v: dict[str, Any], t: int, h: int, w: int) -> tuple[int, int]:
    factor = v["patch_size"] * v["merge_size"]
    if v["generation"] == "qwen3":
        return qwen3_frame_size(t, h, w, factor=factor, temporal_factor=v["temporal_patch_size"],
                                min_pixels=v["min_pixels"], max_pixels=v["max_pixels"])
    return qwen2_frame_size(h, w, factor=factor, min_pixels=v["min_pixels"], max_pixels=v["max_pixels"])


def spec_for(case: dict[str, Any], backend: str = "torchvision") -> dict[str, Any]:
    """The pipeline spec of a case's configuration: its preset's image fields (the mixed
    prompts' images went through transformers' torchvision image processor) and the
    video fields of the video processor the generator built."""
    v = case["video"]
    spec = {k: x for k, x in mmf.preset(v["preset"]).items() if k not in VIDEO_FIELDS}
    video = {"video_processor": "qwen3" if v["generation"] == "qwen3" else "qwen2",
             "video_token_id": v["video_token_id"],
             "video_min_pixels": v["min_pixels"], "video_max_pixels": v["max_pixels"],
             "video_sample_frames": v["do_sample_frames"], "tokens_per_second": v["tokens_per_second"]}
    if v["do_sample_frames"]:
        video.update(video_fps=v["fps"], video_min_frames=v["min_frames"], video_max_frames=v["max_frames"])
    if v["generation"] == "qwen3":
        ts = v["timestamp_ids"]
        pieces = [ts["open"], *ts["digits"], ts["dot"], ts["seconds"], ts["close"]]
        video.update(vision_start_token_id=v["vision_start_id"], vision_end_token_id=v["vision_end_id"],
                     timestamp_token_ids=dict(zip(TIMESTAMP_PIECES, pieces)))
    return {**spec, **{k: x for k, x in video.items() if x is not None}, "backend": backend}


def header_of(case: dict[str, Any]) -> mmp.ClipHeader:
    h = case["header"]
    return mmp.ClipHeader(total_frames=h["total_frames"], fps=h["fps"], width=h["width"], height=h["height"],
                          duration=h["total_frames"] / h["fps"], codec=h["codec"], pixel_format=h["pixel_format"])


def images_out(case: dict[str, Any]) -> list[mmf.OutputItem]:
    """The mixed prompt's images through the mm_framework pipeline (torchvision backend)."""
    v = case["video"]
    pipe = mmf.pipeline_from_spec({**mmf.preset(v["preset"]), "backend": "torchvision"})
    out = []
    for ref in case["images"]:
        data = golden_images.make(ref["name"])
        assert sha(data) == ref["sha256"], f"golden image {ref['name']} rebuilt differently"
        out.append(pipe.process(mmf.MmInput(images=[data], input_ids=[v["image_token_id"]])).items[0])
    return out


def prompt_and_positions(
    case: dict[str, Any], indices: list[int], total: int, fps: float | None, grid: list[int],
    image_grids: list[list[int]],
) -> dict[str, Any]:
    """Expanded ids, ``second_per_grid_ts`` and M-RoPE of a case from its video's facts."""
    v = case["video"]
    merge, tps = v["merge_size"], v["temporal_patch_size"]
    if v["generation"] == "qwen3":
        vocab = TimestampVocab(**v["timestamp_ids"])
        times = group_timestamps(indices, fps, tps)
        video_ids = qwen3_video_ids(
            grid, times, video_token_id=v["video_token_id"], vision_start_id=v["vision_start_id"],
            vision_end_id=v["vision_end_id"], vocab=vocab, merge=merge,
        )
    else:
        video_ids = [v["video_token_id"]] * qwen2_video_tokens(grid, merge)
    image_counts = iter(int(np.prod(g)) // merge**2 for g in image_grids)
    ids: list[int] = []
    for tok in case["prompt_ids"]:
        if tok == v["video_token_id"]:
            ids += video_ids
        elif tok == v["image_token_id"]:
            ids += [tok] * next(image_counts)
        else:
            ids.append(tok)
    arr = np.asarray(ids, dtype=np.int64)
    types = np.where(arr == v["image_token_id"], IMAGE, np.where(arr == v["video_token_id"], VIDEO, TEXT))
    doc: dict[str, Any] = {"input_ids_rle": rle(arr)}
    spg = None
    if v["generation"] == "qwen2_5":
        spg = second_per_grid_t(len(indices), total, fps, tps)
        doc["second_per_grid_ts"] = {"values": [float(spg)], "f32_hex": np.float32(spg).tobytes().hex()}
    pos, delta = rope_index(types, image_grids, [grid], merge=merge, tokens_per_second=v["tokens_per_second"],
                            second_per_grid_ts=None if spg is None else [spg], video_groups=v["generation"] == "qwen3")
    doc["positions"] = {"delta": delta, "sha256": sha(pos)}
    if pos.shape[1] <= 128:
        doc["positions"]["values"] = pos.tolist()
    return doc


def replay(case: dict[str, Any]) -> tuple[dict[str, Any], np.ndarray]:
    """The whole case with the phase-1 functions; raises what mm_framework raises."""
    v = case["video"]
    data = clip_bytes(case)
    rate: list[float | None] = [None]

    def choose(header: mmp.ClipHeader) -> list[int] | None:
        indices, rate[0] = sample(v, header.total_frames, header.fps)
        return indices

    clip = mmp.decode_clip(data, choose, max_frames=NO_LIMIT, max_pixels=NO_LIMIT)
    rh, rw = frame_size(v, clip.num_frames, clip.height, clip.width)
    resized = np.stack([mmp.video_patches.resize_frame(f, rh, rw) for f in clip.frames])
    ps, merge, tps = v["patch_size"], v["merge_size"], v["temporal_patch_size"]
    pv = mmp.video_patches.pixel_values(clip.frames, rh, rw, patch_size=ps, merge_size=merge, temporal_patch_size=tps,
                            norm=video_norm(v["image_mean"], v["image_std"]))
    grid = list(mmp.video_patches.grid(clip.num_frames, rh, rw, patch_size=ps, temporal_patch_size=tps))
    images = images_out(case)
    image_grids = [it.aux["image_grid_thw"].array.tolist() for it in images]
    doc: dict[str, Any] = {
        "indices": list(clip.indices),
        "decoded_frames_sha256": [sha(f) for f in clip.frames],
        "resized_shape": list(resized.shape),
        "resized_sha256": sha(resized),
        "pixel_values_videos": {"shape": list(pv.shape), "sha256": sha(pv)},
        "video_grid_thw": [grid],
    }
    doc.update(prompt_and_positions(case, list(clip.indices), clip.total_frames, rate[0], grid, image_grids))
    if images:
        doc["image_grid_thw"] = image_grids
        pixels = np.concatenate([it.feature.array for it in images])
        doc["pixel_values"] = {"shape": list(pixels.shape), "sha256": sha(pixels)}
    return doc, pv


def request(case: dict) -> mmf.MmInput:
    """The case's prompt, images and clip as a pipeline request."""
    images = []
    for ref in case["images"]:
        data = golden_images.make(ref["name"])
        assert sha(data) == ref["sha256"], f"golden image {ref['name']} rebuilt differently"
        images.append(data)
    return mmf.MmInput(images=images, videos=[clip_bytes(case)], input_ids=case["prompt_ids"])


def output_doc(out: mmf.Output) -> dict:
    """The output in the shape of a case's ``expected`` section."""
    kw = out.model_kwargs()
    pos = out.positions.positions
    doc = {
        "pixel_values_videos": {
            "shape": list(kw["pixel_values_videos"].shape), "sha256": sha(kw["pixel_values_videos"]),
        },
        "video_grid_thw": kw["video_grid_thw"].tolist(),
        "input_ids_rle": rle(out.input_ids),
        "positions": {"delta": out.positions.delta, "sha256": sha(pos)},
    }
    if pos.shape[1] <= 128:
        doc["positions"]["values"] = pos.tolist()
    if "second_per_grid_ts" in kw:
        spg = kw["second_per_grid_ts"]
        assert spg.dtype == np.float32
        doc["second_per_grid_ts"] = {"values": [float(v) for v in spg], "f32_hex": spg.tobytes().hex()}
    if "pixel_values" in kw:
        doc["image_grid_thw"] = kw["image_grid_thw"].tolist()
        doc["pixel_values"] = {"shape": list(kw["pixel_values"].shape), "sha256": sha(kw["pixel_values"])}
    return doc


# The expected fields in pipeline order: the first one that differs names the stage.
ORDER = ("indices", "decoded_frames_sha256", "resized_shape", "resized_sha256", "pixel_values_videos", "video_grid_thw",
         "second_per_grid_ts", "image_grid_thw", "pixel_values", "input_ids_rle", "positions")


PROMPT_FIELDS = ("second_per_grid_ts", "input_ids_rle", "positions")


def compare(ours: dict[str, Any], expected: dict[str, Any], name: str, fields: tuple[str, ...] = ORDER) -> None:
    for key in fields:
        if key not in expected:
            assert key not in ours, f"{name}: produced {key}, which the reference does not"
            continue
        want = dict(expected[key]) if isinstance(expected[key], dict) else expected[key]
        if isinstance(want, dict):
            want.pop("blob", None)
        assert ours.get(key) == want, f"{name}: first difference at {key}: ours {ours.get(key)!r} != reference {want!r}"
