"""Golden case directories: record one request's outputs, replay them stage by stage.

A case is a directory holding ``case.json`` plus, optionally, the input files::

    {
      "name": "rgb_640x480_jpg",
      "spec": {"family": ...},
      "prompt_ids": [...],
      "images": ["input_0.png", {"name": "large.jpg", "blake3": "..."}],
      "expected": {
        "hashes": ["<u64 as decimal string>", ...],
        "features": [{"dtype": "f32", "shape": [...], "blake3": "<hex of the LE bytes>"}],
        "aux": [{"image_grid_thw": {"dtype": "i64", "shape": [3], "values": [1, 34, 46]}}],
        "input_ids": {"length": L, "blake3": "..."},    # or a plain list when short
        "offsets": [[s, e], ...],
        "positions": {"kind": "mrope", "delta": d, "blake3": "..."} | {"kind": "rope1d"},
        "stages": {"resized_0": "<blake3 of an intermediate>", ...}   # optional, family-defined
      },
      "provenance": {"generator": "...", "transformers": "5.24.0", "pillow": "13.0.0", ...}
    }

Images given as a file name are read from the case directory; images given as
``{"name", "blake3"}`` are produced by the caller's image source (so large inputs can be
regenerated deterministically instead of committed) and checked against the digest.
Hashes are decimal strings because JSON numbers cannot carry a u64 exactly.
Replay compares in pipeline order and fails naming the first stage that differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ..carriers import MRope, Tensor
from ..request import MmInput, Output
from .records import digest, ids_doc, tensor_doc

ImageSource = Callable[[str], bytes]


@attrs.frozen
class GoldenCase:
    path: Path
    doc: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.doc.get("name", self.path.name))

    def images(self, source: ImageSource | None = None) -> list[bytes]:
        out = []
        for i, ref in enumerate(self.doc["images"]):
            if isinstance(ref, str):
                out.append((self.path / ref).read_bytes())
                continue
            if source is None:
                raise AssertionError(f"golden case {self.name}: image {i} ({ref['name']}) needs an image source")
            data = source(ref["name"])
            got = digest(data)
            assert got == ref["blake3"], (
                f"golden case {self.name}: stage 'input[{i}]' differs: generated {ref['name']} has blake3 {got}, "
                f"the case recorded {ref['blake3']} (the image generator is not deterministic here)"
            )
            out.append(data)
        return out


def load_cases(root: str | Path) -> list[GoldenCase]:
    """Every case directory under ``root`` (sorted by name)."""
    root = Path(root)
    return [GoldenCase(p.parent, json.loads(p.read_text())) for p in sorted(root.glob("*/case.json"))]


def expected_of(out: Output) -> dict[str, Any]:
    """The ``expected`` section describing ``out``."""
    ids = np.asarray(out.input_ids)
    positions: dict[str, Any]
    if isinstance(out.positions, MRope):
        positions = {"kind": "mrope", "delta": out.positions.delta, "blake3": digest(out.positions.positions)}
    else:
        positions = {"kind": "rope1d"}
    return {
        "hashes": [str(it.hash) for it in out.items],
        "features": [tensor_doc(it.feature.dtype, it.feature.array) for it in out.items],
        "aux": [{k: tensor_doc(v.dtype, v.array) for k, v in it.aux.items()} for it in out.items],
        "input_ids": ids_doc(ids),
        "offsets": [list(o) for o in out.offsets],
        "positions": positions,
    }


def record_case(
    directory: str | Path,
    *,
    spec: Mapping[str, Any],
    prompt_ids: Sequence[int],
    images: Sequence[str | Mapping[str, str]],
    output: Output,
    provenance: Mapping[str, Any],
    stages: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Path:
    """Write ``case.json`` for one request (input files must already be in place)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    expected = expected_of(output)
    if stages:
        expected["stages"] = dict(stages)
    doc = {
        "name": name or directory.name,
        "spec": dict(spec),
        "prompt_ids": [int(i) for i in prompt_ids],
        "images": [i if isinstance(i, str) else dict(i) for i in images],
        "expected": expected,
        "provenance": dict(provenance),
    }
    path = directory / "case.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def _compare_tensor(case: str, stage: str, want: Mapping[str, Any], got: Tensor) -> None:
    assert got.dtype == want["dtype"], f"golden case {case}: stage {stage!r} differs: dtype {got.dtype} != {want['dtype']}"
    assert list(got.shape) == list(want["shape"]), (
        f"golden case {case}: stage {stage!r} differs: shape {list(got.shape)} != {want['shape']}"
    )
    if "values" in want:
        assert got.array.tolist() == want["values"], (
            f"golden case {case}: stage {stage!r} differs: {got.array.tolist()} != {want['values']}"
        )
    else:
        assert digest(got.array) == want["blake3"], f"golden case {case}: stage {stage!r} differs (blake3 of bytes)"


def compare(case: GoldenCase, out: Output, stages: Mapping[str, str] | None = None) -> None:
    """Assert ``out`` equals the case, naming the first differing stage."""
    name, exp = case.name, case.doc["expected"]
    assert len(out.items) == len(exp["hashes"]), f"golden case {name}: stage 'items' differs: count"
    for i, it in enumerate(out.items):
        assert str(it.hash) == exp["hashes"][i], f"golden case {name}: stage 'hash[{i}]' differs"
    for key, want in (exp.get("stages") or {}).items():
        if stages is not None and key in stages:
            assert stages[key] == want, f"golden case {name}: stage {key!r} differs"
    for i, it in enumerate(out.items):
        _compare_tensor(name, f"feature[{i}]", exp["features"][i], it.feature)
        want_aux = exp["aux"][i]
        assert sorted(it.aux) == sorted(want_aux), f"golden case {name}: stage 'aux[{i}]' differs: names"
        for k, t in it.aux.items():
            _compare_tensor(name, f"aux[{i}].{k}", want_aux[k], t)
    ids = np.asarray(out.input_ids)
    want_ids = exp["input_ids"]
    if isinstance(want_ids, list):
        assert ids.tolist() == want_ids, f"golden case {name}: stage 'input_ids' differs"
    else:
        assert len(ids) == want_ids["length"] and digest(ids) == want_ids["blake3"], (
            f"golden case {name}: stage 'input_ids' differs"
        )
    assert [list(o) for o in out.offsets] == exp["offsets"], (
        f"golden case {name}: stage 'offsets' differs: {[list(o) for o in out.offsets]} != {exp['offsets']}"
    )
    pos = exp["positions"]
    if pos["kind"] == "mrope":
        assert isinstance(out.positions, MRope), f"golden case {name}: stage 'positions' differs: kind"
        assert out.positions.delta == pos["delta"], f"golden case {name}: stage 'positions' differs: delta"
        assert digest(out.positions.positions) == pos["blake3"], f"golden case {name}: stage 'positions' differs"
    else:
        assert not isinstance(out.positions, MRope), f"golden case {name}: stage 'positions' differs: kind"


def replay_case(
    case: GoldenCase,
    pipeline_from_spec: Callable[[Mapping[str, Any]], Any],
    *,
    source: ImageSource | None = None,
    update: bool = False,
) -> Output:
    """Run the case through a fresh pipeline; compare, or rewrite ``expected`` if ``update``."""
    pipe = pipeline_from_spec(case.doc["spec"])
    out = pipe.process(MmInput(images=case.images(source), input_ids=case.doc["prompt_ids"]))
    if update:
        doc = dict(case.doc)
        stages = doc.get("expected", {}).get("stages")
        doc["expected"] = expected_of(out)
        if stages:
            doc["expected"]["stages"] = stages
        (case.path / "case.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    else:
        compare(case, out)
    return out
