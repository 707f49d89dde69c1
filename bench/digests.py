"""One digest per installed preset and bench input, of every output array: two checkouts
(before and after a refactor) print the same lines exactly when their outputs are the same bytes.

    python bench/digests.py > before.txt   # in one checkout's venv, then diff with the other's

Each line: preset, input, the digest of ``process`` and the digest of ``count_tokens`` (ids,
offsets, positions, and per item its hash, modality, geometry, sizes, feature and aux bytes),
or the error a preset gives for that input. The 12-MP input is left out to keep it quick.
"""

from __future__ import annotations

import hashlib

import numpy as np
from inputs import inputs

import mm_framework as mmf


def digest(out: mmf.Output) -> str:
    h = hashlib.sha256()
    h.update(np.asarray(out.input_ids).tobytes())
    h.update(repr(out.offsets).encode())
    if isinstance(out.positions, mmf.MRope):
        h.update(np.asarray(out.positions.positions).tobytes())
        h.update(str(out.positions.delta).encode())
    for it in out.items:
        h.update(f"{it.hash}{it.modality}{it.geometry!r}{it.size}{it.processed_size}".encode())
        if it.feature is not None:
            h.update(it.feature.dtype.encode())
            h.update(np.asarray(it.feature.array).tobytes())
        for k in sorted(it.aux):
            h.update(k.encode())
            h.update(np.asarray(it.aux[k].array).tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    table = inputs()
    for preset, spec in sorted(mmf.list_presets().items()):
        pipe = mmf.pipeline_from_spec(spec)
        placeholder = pipe.capabilities.placeholders["image"]
        for name, inp in table.items():
            if "4000" in name:
                continue
            req = mmf.MmInput(images=list(inp.images), input_ids=[1] + [placeholder] * len(inp.images) + [2])
            try:
                line = f"{digest(pipe.process(req))} {digest(pipe.count_tokens(req))}"
            except mmf.MmError as e:
                line = f"{type(e).__name__}: {e}"
            print(preset, name, line, flush=True)


if __name__ == "__main__":
    main()
