"""Video benchmark: a 10 s 720p clip at 30 fps through mm_framework and through transformers.

Usage (a venv with the repository, PyAV, and for the reference columns torch,
torchvision and transformers 5.24; see docs/video.md, "Benchmark")::

    python bench/video.py               # all families, about 3 minutes on 2 cores
    python bench/video.py --passes 3 --only qwen3

The clip is encoded here (libx264, yuv420p, 1280x720, 300 frames, about 4.4 Mbit/s: a
moving pattern with light noise, :func:`encode_clip`). Per Qwen family:

- **ours**: ``Pipeline.process`` of a chat prompt holding the clip's bytes (decode of
  the sampled frames only, resize, normalize, patches, prompt ids, M-RoPE), single
  thread (``MM_FRAMEWORK_THREADS=inline``), native kernels when built;
- **transformers**: ``load_video(path, backend="pyav")`` (every frame decoded and
  converted, as the reference loader does) and the family's video processor on those
  frames with their metadata, ``torch.set_num_threads(1)``.

PyAV's decoder runs with its defaults in both. Qwen2-VL and Qwen2.5-VL take their preset
with 2 fps sampling turned on (the published checkpoints sample nothing, so a 300-frame
clip would be 150 temporal patches: 3.4 GB of ``pixel_values_videos`` on either side);
Qwen3-VL and Qwen3.5 run their presets (2 fps). Outputs are compared byte for byte before
anything is timed; contenders are interleaved over passes and the medians reported
(bench/run.py's method), together with the decode floor both sides share
(:func:`decode_floor`) and each side's time above it. Memory: each contender once in a fresh interpreter; the peak
RSS above the pre-request RSS, against the output and the decoded frames.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (puts the repository on sys.path, registers families)

import mm_framework as mmf  # noqa: E402
from mm_framework import par  # noqa: E402
from mm_framework.kernels import kernel_mode  # noqa: E402

W, H, FPS, SECONDS = 1280, 720, 30, 10
SAMPLE_2FPS = {"video_sample_frames": True, "video_fps": 2.0, "video_min_frames": 4, "video_max_frames": 768}
FAMILIES = {
    "qwen2_vl (2 fps)": ("qwen2_vl", SAMPLE_2FPS),
    "qwen2_5_vl (2 fps)": ("qwen2_5_vl", SAMPLE_2FPS),
    "qwen3_vl": ("qwen3_vl", {}),
    "qwen3_5": ("qwen3_5", {}),
}


def encode_clip(path: str) -> None:
    """Moving gradients, a moving disc and light noise: about 4.4 Mbit/s at crf 23, a
    common bitrate for 720p30 (decoding, which both sides pay, grows with the bitrate)."""
    import av

    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:H, 0:W]
    noise = rng.integers(0, 5, (8, H, W, 3), dtype=np.uint8)
    with av.open(path, "w", format="mp4") as out:
        s = out.add_stream("libx264", rate=FPS, options={"preset": "veryfast", "crf": "23"})
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        for k in range(FPS * SECONDS):
            frame = np.stack([(xx + 4 * k) % 256, (yy + 2 * k) % 256, ((xx + yy) // 2 + 3 * k) % 256], -1)
            frame[(xx - (100 + 9 * k) % W) ** 2 + (yy - (200 + 5 * k) % H) ** 2 < 90**2] = (250, 40, 40)
            frame = (frame + noise[k % 8]).astype(np.uint8)
            out.mux(s.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(s.encode())


def spec_of(family: str) -> dict[str, Any]:
    preset, extra = FAMILIES[family]
    return {**mmf.preset(preset), **extra}


def ours(spec: dict[str, Any], data: bytes):
    pipe = mmf.pipeline_from_spec(spec)
    # <|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>What happens?<|im_end|>
    start, end = spec.get("vision_start_token_id", 151652), spec.get("vision_end_token_id", 151653)
    ids = [151644, 872, 198, start, spec["video_token_id"], end, 3838, 8573, 30, 151645]
    req = mmf.MmInput(videos=[data], input_ids=ids)
    return lambda: pipe.process(req)


def transformers_video(spec: dict[str, Any], path: str):
    import transformers
    from transformers.video_utils import load_video

    kw: dict[str, Any] = {
        "size": {"shortest_edge": spec["video_min_pixels"], "longest_edge": spec["video_max_pixels"]},
        "patch_size": spec["patch_size"], "temporal_patch_size": spec["temporal_patch_size"],
        "merge_size": spec["merge_size"], "image_mean": spec["image_mean"], "image_std": spec["image_std"],
        "do_sample_frames": spec["video_sample_frames"], "cap_pixels_per_frame": False,
    }
    if spec["video_sample_frames"]:
        kw.update(fps=spec["video_fps"], min_frames=spec["video_min_frames"], max_frames=spec["video_max_frames"])
    cls = "Qwen3VLVideoProcessor" if spec["video_processor"] == "qwen3" else "Qwen2VLVideoProcessor"
    vp = getattr(transformers, cls)(**kw)

    def run():
        frames, meta = load_video(path, backend="pyav")
        return vp(videos=[frames], video_metadata=[meta], return_tensors="pt")

    return run


def decode_floor(path: str):
    """Decoding every frame without converting one: what both sides pay at least (the
    reference loader and mm_framework both decode in stream order up to the last frame
    they use, which is at or near the end of the clip at 2 fps)."""
    import av

    def run():
        with av.open(path) as container:
            for _ in container.decode(video=0):
                pass

    return run


def compare(spec: dict[str, Any], data: bytes, path: str) -> tuple[int, str]:
    """Frames used and the output shape; fails unless both sides give the same tensors."""
    out = ours(spec, data)()
    ref = transformers_video(spec, path)()
    item = out.items[0]
    assert item.feature.array.tobytes() == ref["pixel_values_videos"].numpy().tobytes(), "pixel_values_videos differ"
    assert item.aux["video_grid_thw"].array.tolist() == ref["video_grid_thw"][0].tolist(), "video_grid_thw differs"
    g = item.geometry
    frames = g.t * spec["temporal_patch_size"]
    w, h = item.processed_size
    return frames, f"{list(item.feature.shape)} grid {[g.t, g.h, g.w]} at {w}x{h}"


def probe(job: dict[str, Any]) -> dict[str, Any]:
    """One request in this fresh process: output bytes and peak RSS above the pre-request RSS."""
    import gc

    spec, path = job["spec"], job["path"]
    data = Path(path).read_bytes()
    if job["kind"] == "ours":
        par.set_threads("inline")
        fn = ours(spec, data)
        size = lambda r: r.items[0].feature.array.nbytes  # noqa: E731
    else:
        import torch

        torch.set_num_threads(1)
        fn = transformers_video(spec, path)
        size = lambda r: r["pixel_values_videos"].numel() * 4  # noqa: E731
    gc.collect()
    rss0 = bench._status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    out_bytes = size(fn())
    return {"out_bytes": out_bytes, "peak_bytes": (bench._status_kib("VmHWM") - rss0) * 1024}


def run_probe(job: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--probe", json.dumps(job)], capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--only", default="", help="substring of the family label")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        print(json.dumps(probe(json.loads(args.probe))))
        return
    try:
        import torch  # noqa: F401
        from transformers.video_utils import load_video  # noqa: F401
    except ImportError as e:
        sys.exit(f"the reference needs torch, torchvision and transformers: {e}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "clip_720p_30fps_10s.mp4")
        encode_clip(path)
        data = Path(path).read_bytes()
        print(f"clip: {W}x{H}, {FPS} fps, {FPS * SECONDS} frames, libx264 yuv420p, {len(data) / 1e6:.1f} MB")
        print(f"machine: {json.dumps(bench.machine())}, kernels {kernel_mode()}\n")
        print("| family | frames used | pixel_values_videos | ours (ms) | transformers (ms) | speed-up |"
              " decode floor (ms) | above the floor: ours / transformers (ms) | ours peak RSS |"
              " transformers peak RSS |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for family in [f for f in FAMILIES if args.only in f]:
            spec = spec_of(family)
            frames, shape = compare(spec, data, path)
            contenders = {"ours": bench.Contender(ours(spec, data), "inline", 1),
                          "transformers": bench.Contender(transformers_video(spec, path), "inline", 1),
                          "floor": bench.Contender(decode_floor(path), "inline", 1)}
            ms = {k: v * 1000 for k, v in bench.measure(contenders, args.passes, 0.0).items()}
            mem = {}
            if not args.no_memory:
                for kind in ("ours", "transformers"):
                    r = run_probe({"kind": kind, "spec": spec, "path": path})
                    mem[kind] = r.get("error") or (
                        f"{r['peak_bytes'] / 2**20:.0f} MiB (output {r['out_bytes'] / 2**20:.0f} MiB)"
                    )
            print(f"| {family} | {frames} of {FPS * SECONDS} | {shape} | {ms['ours']:.0f} | {ms['transformers']:.0f} |"
                  f" {ms['transformers'] / ms['ours']:.2f}× | {ms['floor']:.0f} |"
                  f" {ms['ours'] - ms['floor']:.0f} / {ms['transformers'] - ms['floor']:.0f} |"
                  f" {mem.get('ours', '–')} | {mem.get('transformers', '–')} |",
                  flush=True)
        frame_mib = W * H * 3 / 2**20
        print(f"\nOne decoded 720p RGB frame is {frame_mib:.2f} MiB: 20 sampled frames {20 * frame_mib:.0f} MiB, "
              f"the whole clip {FPS * SECONDS * frame_mib:.0f} MiB.")


if __name__ == "__main__":
    main()
