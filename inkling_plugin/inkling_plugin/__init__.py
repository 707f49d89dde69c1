"""Inkling for mm_framework: the ``inkling`` family and the seed's ``inkling`` Python API.

``import inkling_plugin as inkling`` gives the seed's functions (see :mod:`.api` for the
argument rules and return shapes)::

    inkling.patchify_rgb(arr, patch_size)                     # uint16 bf16 bits [n, ps, ps, 3]
    inkling.decode_patchify(data, ps, frac=None, cap=None)    # (h, w, bits), h/w post-rescale
    inkling.decode_patchify_batch(datas, ps, frac, cap)       # [(h, w, bits)], input order
    inkling.preprocess_images(datas, ps, frac, cap)           # [(h, w, bits, hash of raw bytes)]
    inkling.rescale_patchify_hash(arr, raw, ps, frac, cap)    # (h, w, bits, hash of raw)

The family (``mm_framework.pipeline_from_spec({"family": "inkling"})``) is registered
through the entry point ``inkling = "inkling_plugin.plugin"``; see :mod:`.family`.
"""

from .api import decode_patchify, decode_patchify_batch, patchify_rgb, preprocess_images, rescale_patchify_hash
from .patchify import LUT, MEAN, PAD_BITS, STD, bf16_bits, patch_grid

__all__ = [
    "LUT", "MEAN", "PAD_BITS", "STD", "bf16_bits", "decode_patchify", "decode_patchify_batch", "patch_grid",
    "patchify_rgb", "preprocess_images", "rescale_patchify_hash",
]
