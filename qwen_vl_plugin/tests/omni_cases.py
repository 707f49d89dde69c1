"""Test support: the qwen2_5_omni golden cases (``golden_omni/``) as requests and as outputs.

:func:`request` rebuilds a case's inputs (images from :mod:`.golden_images`, audio clips
from the qwen2_audio clip table, videos from the qwen_vl video goldens' files), checking
each against the digest the generator recorded; :func:`output_doc` gives an ``Output`` in
the shape of a case's ``expected`` section, so a test compares the two field by field.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

from . import golden_images
import mm_framework as mmf
from mm_framework.testing import load_module
from mm_framework.testing.records import rle, sha256

HERE = Path(__file__).parent
GOLDEN = HERE / "golden_omni"
MODEL = GOLDEN / "models" / "qwen2_5-omni-7b"
CASES = sorted((GOLDEN / "cases").glob("*.json"))
clips = load_module(HERE.parents[1] / "plugins" / "qwen2_audio_plugin" / "tests" / "qwen2_audio_clips.py",
                    "qwen2_audio_clips")


@functools.lru_cache(maxsize=None)
def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def media_bytes(modality: str, name: str) -> bytes:
    if modality == "image":
        return golden_images.make(name)
    if modality == "audio":
        return clips.make(name)
    return (HERE / "golden_video" / "clips" / name).read_bytes()


def request(case: dict[str, Any]) -> mmf.MmInput:
    got: dict[str, list[bytes]] = {"image": [], "video": [], "audio": []}
    for entry in case["inputs"]:
        data = media_bytes(entry["modality"], entry["name"])
        assert sha256(data) == entry["sha256"], f"{case['name']}: input {entry['name']} rebuilt differently"
        got[entry["modality"]].append(data)
    return mmf.MmInput(images=got["image"], videos=got["video"], audios=got["audio"], input_ids=case["prompt_ids"])


def tensor_entry(a: np.ndarray) -> dict[str, Any]:
    entry = {"dtype": str(a.dtype), "shape": list(a.shape), "sha256": sha256(a)}
    if a.size <= 16:
        entry["values"] = a.tolist()
    return entry


def output_doc(out: mmf.Output) -> dict[str, Any]:
    ids = np.asarray(out.input_ids, dtype=np.int64)
    pos = out.positions.positions
    return {
        "input_ids": {"length": len(ids), "sha256": sha256(ids), "rle": rle(ids)},
        "tensors": {k: tensor_entry(np.asarray(v)) for k, v in out.model_kwargs().items()},
        "positions": {"shape": list(pos.shape), "sha256": sha256(np.ascontiguousarray(pos)),
                      "delta": out.positions.delta},
    }


def compare(ours: dict[str, Any], expected: dict[str, Any], name: str) -> None:
    """Field by field in pipeline order: ids, then each tensor, then positions."""
    assert ours["input_ids"] == expected["input_ids"], f"{name}: input_ids differ"
    assert sorted(ours["tensors"]) == sorted(expected["tensors"]), f"{name}: model kwargs differ in their keys"
    for key, want in expected["tensors"].items():
        assert ours["tensors"][key] == want, f"{name}: {key} differs"
    assert ours["positions"] == expected["positions"], f"{name}: positions differ"
