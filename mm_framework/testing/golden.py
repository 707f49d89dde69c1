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
        "stages": {"resized_u8[0]": "<blake3 of an intermediate>", ...}   # optional, family-defined
      },
      "provenance": {"generator": "...", "transformers": "5.24.0", "pillow": "13.0.0", ...}
    }

Stages are the reference's intermediate arrays (decoded image, resized image, ...). Replay
computes them on our side with a stages function (``(pipeline, request) -> {name: array}``,
:func:`standard_stages` unless the family supplies its own) and compares every stage the case
records: a recorded stage the function does not compute fails the replay, it is never skipped.

A case whose provenance names a generator script or a reference library (``transformers``,
``torch``, ...) was made in the reference environment: only that generator may rewrite it,
so replay with ``update`` refuses it. Cases recorded from this implementation (by
:func:`record_case`, with no such provenance) may be rewritten.

Images given as a file name are read from the case directory; images given as
``{"name", "blake3"}`` are produced by the caller's image source (so large inputs can be
regenerated deterministically instead of committed) and checked against the digest. An
``"audios"`` list holds audio clips and a ``"videos"`` list encoded video clips, in the same
two forms (the same source makes them).
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
import pytest

from .. import errors
from ..carriers import MRope, Tensor
from ..errors import UnsupportedError
from ..media.hashing import content_hash
from ..pipeline import Pipeline, pipeline_from_spec
from ..request import MmInput, Output
from .records import digest, ids_doc, tensor_doc

ImageSource = Callable[[str], bytes]
# (pipeline, request) -> the case's intermediate arrays by stage name, in pipeline order.
Stages = Callable[[Any, MmInput], Mapping[str, np.ndarray]]

# Provenance keys that say a case was made in the reference environment, not from our output.
REFERENCE_PROVENANCE = ("generator", "transformers", "torch", "torchvision")


@attrs.frozen
class GoldenCase:
    path: Path
    doc: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.doc.get("name", self.path.name))

    def images(self, source: ImageSource | None = None) -> list[bytes]:
        return self._media("images", "image", source)

    def audios(self, source: ImageSource | None = None) -> list[bytes]:
        """The case's audio clips (``"audios"``, the same entry forms as images)."""
        return self._media("audios", "audio", source)

    def videos(self, source: ImageSource | None = None) -> list[bytes]:
        """The case's encoded video clips (``"videos"``, the same entry forms as images)."""
        return self._media("videos", "video", source)

    def _media(self, key: str, what: str, source: ImageSource | None) -> list[bytes]:
        out = []
        for i, ref in enumerate(self.doc.get(key, ())):
            if isinstance(ref, str):
                out.append((self.path / ref).read_bytes())
                continue
            if source is None:
                raise AssertionError(f"golden case {self.name}: {what} {i} ({ref['name']}) needs a media source")
            data = source(ref["name"])
            got = digest(data)
            assert got == ref["blake3"], (
                f"golden case {self.name}: stage 'input[{i}]' differs: generated {ref['name']} has blake3 {got}, "
                f"the case recorded {ref['blake3']} (the {what} generator is not deterministic here)"
            )
            out.append(data)
        return out

    def request(self, source: ImageSource | None = None) -> MmInput:
        """The case's request: its images, video and audio clips and prompt ids."""
        return MmInput(images=self.images(source), videos=self.videos(source), audios=self.audios(source),
                       input_ids=self.doc["prompt_ids"])

    def reference(self) -> str | None:
        """What made the case in the reference environment (its generator script or the
        reference library it names), or ``None`` when it was recorded from this implementation."""
        provenance = self.doc.get("provenance") or {}
        found = [f"{k} {provenance[k]}" for k in REFERENCE_PROVENANCE if k in provenance]
        return ", ".join(found) or None


def load_cases(root: str | Path) -> list[GoldenCase]:
    """Every case directory under ``root`` (sorted by name)."""
    root = Path(root)
    return [GoldenCase(p.parent, json.loads(p.read_text())) for p in sorted(root.glob("*/case.json"))]


def decoded_images(pipe: Any, inp: MmInput) -> list[np.ndarray]:
    """Each item's RGB array as the family decodes it (the first stage of most families), in
    item order; the items are encoded bytes, as golden cases hold them."""
    out, media = pipe.decode(inp)
    by_hash = {it.hash: m.rgb for it, m in zip(out.items, media) if it.modality == "image"}
    return [by_hash[content_hash(data)] for data in inp.images]


def standard_stages(pipe: Any, inp: MmInput) -> dict[str, np.ndarray]:
    """Per item ``decoded_rgb[i]`` (:func:`decoded_images`) and, for a family that stores
    uint8 pixels, ``resized_u8[i]`` (the pixels it cuts features from)."""
    decoded = decoded_images(pipe, inp)
    try:
        stored = pipe.stored_pixels(inp)[1]
    except UnsupportedError:
        stored = None
    out: dict[str, np.ndarray] = {}
    for i, rgb in enumerate(decoded):
        out[f"decoded_rgb[{i}]"] = rgb
        if stored is not None:
            out[f"resized_u8[{i}]"] = stored[i]
    return out


def stage_digests(case: GoldenCase, pipe: Any, inp: MmInput, stages: Stages) -> dict[str, str]:
    """The digest of every stage ``case`` records, computed by ``stages``; fails naming a
    recorded stage the function does not compute."""
    recorded = case.doc["expected"].get("stages") or {}
    if not recorded:
        return {}
    computed = stages(pipe, inp)
    missing = sorted(set(recorded) - set(computed))
    assert not missing, (
        f"golden case {case.name}: stage {missing[0]!r} is recorded but not computed "
        f"(give the replay a stages function that computes {', '.join(missing)})"
    )
    return {k: digest(v) for k, v in computed.items() if k in recorded}


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
    audios: Sequence[str | Mapping[str, str]] = (),
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
        **({"audios": [a if isinstance(a, str) else dict(a) for a in audios]} if audios else {}),
        "expected": expected,
        "provenance": dict(provenance),
    }
    path = directory / "case.json"
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def _compare_tensor(case: str, stage: str, want: Mapping[str, Any], got: Tensor) -> None:
    assert got.dtype == want["dtype"], (
        f"golden case {case}: stage {stage!r} differs: dtype {got.dtype} != {want['dtype']}"
    )
    assert list(got.shape) == list(want["shape"]), (
        f"golden case {case}: stage {stage!r} differs: shape {list(got.shape)} != {want['shape']}"
    )
    if "values" in want:
        assert got.array.tolist() == want["values"], (
            f"golden case {case}: stage {stage!r} differs: {got.array.tolist()} != {want['values']}"
        )
    else:
        assert digest(got.array) == want["blake3"], f"golden case {case}: stage {stage!r} differs (blake3 of bytes)"


def compare(case: GoldenCase, out: Output, stages: Mapping[str, str]) -> None:
    """Assert ``out`` and the stage digests (:func:`stage_digests`, in pipeline order) equal
    the case, naming the first differing stage."""
    name, exp = case.name, case.doc["expected"]
    assert len(out.items) == len(exp["hashes"]), f"golden case {name}: stage 'items' differs: count"
    for i, it in enumerate(out.items):
        assert str(it.hash) == exp["hashes"][i], f"golden case {name}: stage 'hash[{i}]' differs"
    recorded = exp.get("stages") or {}
    assert sorted(stages) == sorted(recorded), f"golden case {name}: stages {sorted(stages)} != {sorted(recorded)}"
    for key, got in stages.items():
        assert got == recorded[key], f"golden case {name}: stage {key!r} differs"
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
    stages: Stages = standard_stages,
    update: bool = False,
) -> Output:
    """Run the case through a fresh pipeline; compare (every recorded stage included, see
    :func:`stage_digests`), or rewrite ``expected`` if ``update``. ``update`` refuses a case
    made in the reference environment: only its generator may rewrite it."""
    reference = case.reference()
    assert not (update and reference), (
        f"golden case {case.name} was made in the reference environment ({reference}): "
        "--mm-update-goldens may not rewrite it from our own output; regenerate it with its generator"
    )
    pipe = pipeline_from_spec(case.doc["spec"])
    inp = case.request(source)
    out = pipe.process(inp)
    digests = stage_digests(case, pipe, inp, stages)
    if update:
        doc = dict(case.doc)
        doc["expected"] = expected_of(out)
        if digests:
            doc["expected"]["stages"] = digests
        (case.path / "case.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    else:
        compare(case, out, digests)
    return out


def run_case(case: GoldenCase, make: Callable[[str], bytes]) -> tuple[Pipeline, Output]:
    """The pipeline of ``case``'s spec and its output for the case's request (:meth:`GoldenCase.request`:
    its images from ``make``, its video and audio clips, its prompt)."""
    pipe = pipeline_from_spec(case.doc["spec"])
    return pipe, pipe.process(case.request(make))


def assert_rejection(case: GoldenCase, make: Callable[[str], bytes], *, naming_item: bool = False) -> None:
    """A rejected case's request raises its ``expected_error``: that mm_framework error type, a
    message matching its pattern (preceded by ``item <n>: `` with ``naming_item``)."""
    want = case.doc["expected_error"]
    match = rf"item {want['item']}: .*{want['match']}" if naming_item else want["match"]
    with pytest.raises(getattr(errors, want["type"]), match=match):
        run_case(case, make)


def assert_tensors(got: Mapping[str, np.ndarray], want: Mapping[str, Mapping[str, Any]],
                   dtypes: Mapping[str, str]) -> None:
    """Each recorded ``{dtype, shape, blake3}`` entry of ``want`` matches ``got[key]``; ``dtypes``
    maps a recorded dtype name to numpy's."""
    for key, doc in want.items():
        array = got[key]
        assert (str(array.dtype), list(array.shape)) == (dtypes[doc["dtype"]], doc["shape"]), key
        assert digest(array) == doc["blake3"], key
