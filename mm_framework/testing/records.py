"""The pieces of a golden record: digests, tensor and id entries, compact JSON, provenance.

Shared by the golden generator scripts, which run in the reference environment without
mm_framework (they load this file alone: :mod:`mm_framework.testing.standalone`), and by
the golden harness and replays. numpy, Pillow and the standard library only; ``blake3``
is imported when a blake3 digest is taken and ``transformers`` when a tokenizer is
built, so a generator that records sha256 digests only (the qwen_vl video goldens) runs
without blake3.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from PIL import Image, features

__all__ = [
    "SHORT_IDS", "ReferenceRequest", "cached_tokenizer", "content_hash", "digest", "divergence", "dumps", "file_case",
    "ids_doc", "image_jobs", "library_versions", "probe", "reference_request", "reference_versions", "rle", "sha256",
    "tensor_doc", "token_runs", "write_case", "write_reference_case",
]

SHORT_IDS = 64  # id lists up to this long are stored whole, longer ones as length + digest


def _bytes(data: bytes | np.ndarray) -> bytes:
    """Raw bytes, or an array's C-order bytes (little-endian on the machines the goldens come from)."""
    return np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) else data


def digest(data: bytes | np.ndarray) -> str:
    """blake3 hex of raw bytes or of an array's bytes."""
    from blake3 import blake3

    return blake3(_bytes(data)).hexdigest()


def sha256(data: bytes | np.ndarray) -> str:
    """sha256 hex of raw bytes or of an array's bytes."""
    return hashlib.sha256(_bytes(data)).hexdigest()


def content_hash(data: bytes) -> str:
    """mm_framework's item hash of the raw bytes (blake3, first 8 bytes big-endian), as decimal text."""
    from blake3 import blake3

    return str(int.from_bytes(blake3(data).digest(8), "big"))


def probe(array: np.ndarray, count: int, size: int | None = None) -> np.ndarray:
    """``count`` values of ``array``'s flat view at evenly spaced indices over its first ``size``
    (default: all) values, the sample a golden records beside a digest; empty for no values."""
    flat = np.asarray(array).reshape(-1)
    end = flat.size if size is None else size
    return flat[np.linspace(0, end - 1, count).astype(np.int64)] if end else flat[:0]


def tensor_doc(dtype: str, array: np.ndarray) -> dict[str, Any]:
    """A tensor entry: its values when tiny, else the digest of its bytes."""
    doc: dict[str, Any] = {"dtype": dtype, "shape": list(array.shape)}
    if array.size <= 16:
        doc["values"] = array.tolist()
    else:
        doc["blake3"] = digest(array)
    return doc


def ids_doc(ids: np.ndarray) -> list[int] | dict[str, Any]:
    """An id list entry: the ids when short, else their count and digest (of the int64 bytes)."""
    return ids.tolist() if len(ids) <= SHORT_IDS else {"length": len(ids), "blake3": digest(ids)}


def token_runs(ids: np.ndarray, token: int) -> np.ndarray:
    """``[start, end)`` of every run of ``token`` in ``ids``, shape ``[runs, 2]``."""
    edges = np.diff(np.concatenate([[0], (ids == token).astype(np.int8), [0]]))
    return np.flatnonzero(edges).reshape(-1, 2)


def rle(ids: np.ndarray) -> list[list[int]]:
    """``ids`` run-length encoded: ``[[value, count], ...]``."""
    out: list[list[int]] = []
    for v in ids.tolist():
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


class ReferenceRequest(NamedTuple):
    case: dict[str, Any]  # "prompt_ids", "images" and, when the processor raised, "reference_error"
    datas: list[bytes]  # the images' bytes
    inputs: list  # what the processor was given
    out: Any  # its output; None when it raised


def reference_request(proc, text: str, names: Sequence[str], make: Callable[[str], bytes], entry: str, tmp: str, *,
                      sizes: bool = True, add_special_tokens: bool = True, return_tensors: str = "np",
                      **call: Any) -> ReferenceRequest:
    """One request through the reference processor ``proc``, as a user makes it.

    The images ``names`` (bytes from ``make``) reach it as files under ``tmp`` for the
    ``"path"`` entry (``load_image`` decodes them), else as ``PIL.Image`` objects opened on
    the bytes. Each image's case entry is its name and blake3, plus its byte count, size
    and mode when ``sizes``. ``add_special_tokens=False`` goes to the tokenizer and the
    processor alike; ``call`` to the processor. ``return_tensors="pt"`` is for a processor whose
    arrays numpy cannot hold (bfloat16 pixel values).
    """
    datas = [make(n) for n in names]
    entries = [{"name": n, "blake3": digest(d)} for n, d in zip(names, datas)]
    if sizes:
        for e, d in zip(entries, datas):
            im = Image.open(io.BytesIO(d))
            e.update({"bytes": len(d), "size": list(im.size), "mode": im.mode})
    if entry == "path":
        inputs: list = [os.path.join(tmp, n) for n in names]
        for path, data in zip(inputs, datas):
            with open(path, "wb") as f:
                f.write(data)
    else:
        inputs = [Image.open(io.BytesIO(d)) for d in datas]
    tokens = {} if add_special_tokens else {"add_special_tokens": False}
    prompt_ids = [int(i) for i in proc.tokenizer(text, **tokens)["input_ids"]]
    case: dict[str, Any] = {"prompt_ids": prompt_ids, "images": entries}
    try:
        out = proc(text=[text], images=inputs, return_tensors=return_tensors, **tokens, **call)
    except Exception as e:  # the reference rejected the request
        case["reference_error"] = f"{type(e).__name__}: {e}"
        out = None
    return ReferenceRequest(case, datas, inputs, out)


def divergence(images: Sequence[Mapping[str, Any]], divergences: Mapping[str, tuple[str, str, str]]) -> dict | None:
    """The rejection mm_framework deliberately gives where the reference does not: the first
    image named in ``divergences`` (name -> error type, message match, why), else ``None``."""
    for i, img in enumerate(images):
        if img["name"] in divergences:
            kind, match, why = divergences[img["name"]]
            return {"type": kind, "item": i, "match": match, "divergence": why}
    return None


def dumps(doc: Mapping[str, Any]) -> str:
    """Indented JSON with every innermost list on one line (keeps the fixtures small)."""
    text = json.dumps(doc, indent=1)
    return re.sub(r"\[\s+([^\[\]{}\"]*?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text) + "\n"


def write_case(where: str, doc: Mapping[str, Any]) -> None:
    """``where/case.json`` holding :func:`dumps` of ``doc``; a case already there is replaced."""
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    with open(os.path.join(where, "case.json"), "w", encoding="utf-8") as f:
        f.write(dumps(doc))


def file_case(case: dict[str, Any], rejection: Mapping[str, Any] | None, cases_dir: str, rejections_dir: str, *,
              extra: Sequence[str] = ()) -> str:
    """Write ``case`` where it belongs and return the line a generator prints for it: with a
    ``rejection`` (the error mm_framework must give) under ``rejections_dir`` as its
    ``expected_error``, without ``expected`` and the family's ``extra`` sections; else under
    ``cases_dir``."""
    if rejection:
        case["expected_error"] = dict(rejection)
        for key in ("expected", *extra):
            case.pop(key, None)
    write_case(os.path.join(rejections_dir if rejection else cases_dir, case["name"]), case)
    ids = case.get("expected", {}).get("input_ids")
    return f"{case['name']}: {'rejected' if rejection else len(ids) if isinstance(ids, list) else ids['length']}"


def library_versions() -> dict[str, str]:
    """The versions every image golden depends on: Pillow and its codecs, numpy, Python."""
    return {
        "pillow": Image.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "libjpeg_turbo": str(features.version("libjpeg_turbo")),
        "zlib": str(features.version("zlib")),
        "webp": str(features.version("webp")),
    }


def image_jobs(images: Sequence[str], multi: Mapping[str, tuple[str, list[str]]], path_images: Sequence[str],
               single: Callable[[str], str]) -> list[tuple[str, str, str, list[str]]]:
    """A generator's requests as ``(entry, slug, prompt text, image names)``: each image alone
    (``single(name)`` its prompt) as a ``PIL.Image``, each ``multi`` prompt with its images, and
    each of ``path_images`` alone through a file path (the ``"path"`` entry)."""
    slug = lambda n: n.replace(".", "_")  # noqa: E731
    jobs = [("pil_object", slug(n), single(n), [n]) for n in images]
    jobs += [("pil_object", name, text, list(names)) for name, (text, names) in multi.items()]
    return jobs + [("path", "path_" + slug(n), single(n), [n]) for n in path_images]


def write_reference_case(case: dict[str, Any], divergences: Mapping[str, tuple[str, str, str]], accepted: str,
                         rejected: str, family_section: str) -> str:
    """:func:`file_case` for a generator whose only rejections are the :func:`divergence` entries its
    images declare: one of those, or else an accepted case. A reference error that no
    divergence declares is a generator bug: ``RuntimeError``."""
    declared = divergence(case["images"], divergences)
    if declared is None and "reference_error" in case:
        raise RuntimeError(f"{case['name']}: unexpected reference error {case['reference_error']}")
    return file_case(case, declared, accepted, rejected, extra=(family_section,))


def reference_versions() -> dict[str, str]:
    """:func:`library_versions` plus transformers' and tokenizers' (the reference processor's),
    and torch's and torchvision's where installed, marked as not used (a PIL-backend reference
    computes without them, but transformers imports them when present)."""
    import tokenizers
    import transformers

    v = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__, **library_versions()}
    for name in ("torch", "torchvision"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        v[name] = module.__version__ + " (installed, not used)"
    return v


def cached_tokenizer(cache_dir: str | None, build: Callable[[], Any]) -> Any:
    """The tokenizer saved in ``cache_dir``, else ``build()`` (saved there when a directory is given)."""
    from transformers import AutoTokenizer

    if cache_dir and os.path.isfile(os.path.join(cache_dir, "tokenizer.json")):
        return AutoTokenizer.from_pretrained(cache_dir, local_files_only=True)
    tok = build()
    if cache_dir:
        tok.save_pretrained(cache_dir)
    return tok
