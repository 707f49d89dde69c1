"""Handing arrays to torch without copies (torch is optional: imported on first use).

bf16 features travel as their ``uint16`` bit pattern (numpy has no bfloat16); torch
views those bits as ``torch.bfloat16``. Arrays are C-contiguous already, so the tensor
shares their memory. Outputs are read-only numpy; torch has no read-only tensors, so the
tensor aliases memory the caller must not write (torch's own warning about this is
silenced here once the caller asked for the hand-off).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import UnsupportedError


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise UnsupportedError("torch hand-off needs the 'torch' package, which is not installed") from None
    return torch


def to_torch(array: np.ndarray, dtype: str | None = None) -> Any:
    """``array`` as a torch tensor sharing its memory; ``dtype="bf16"`` views uint16 bits as bfloat16."""
    torch = _torch()
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        tensor = torch.from_numpy(array)
    return tensor.view(torch.bfloat16) if dtype == "bf16" else tensor


def kwargs_to_torch(kwargs: Mapping[str, np.ndarray], items: Sequence[Any]) -> dict[str, Any]:
    """A family's model kwargs as tensors; arrays holding bf16 features become bfloat16."""
    bf16 = any(it.feature.dtype == "bf16" for it in items)
    return {
        name: to_torch(a, "bf16" if bf16 and a.dtype == np.uint16 else None) for name, a in kwargs.items()
    }


def normalize_torch(patches: Any, lut: np.ndarray, run: int) -> Any:
    """``lut[(j // run) % 3][v]`` for each u8 value ``v`` in column ``j`` of the torch tensor
    ``patches`` ``[rows, cols]``, computed on its device (``carriers.PixelNorm.apply_torch``)."""
    torch = _torch()
    if patches.dtype != torch.uint8 or patches.dim() != 2:
        raise UnsupportedError(f"normalize needs a 2-D uint8 tensor, got {patches.dtype} {list(patches.shape)}")
    rows, cols = patches.shape
    table = torch.from_numpy(np.array(lut)).to(patches.device).reshape(-1)
    # Row c*256 + v of the flattened table; the channel offset repeats every 3 runs.
    channel = (torch.arange(cols // run, device=patches.device) % 3).repeat_interleave(run) * 256
    return table[patches.to(torch.int64) + channel]
