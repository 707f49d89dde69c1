"""Pixel math that families share, each function exact against a named reference.

This is one of the three modules a family plugin may import (with ``mm_framework`` and
``mm_framework.testing``); the names in ``__all__`` are the contract
(docs/plugin-authoring.md). The modules behind it, one concern each:

* :mod:`.sizing`: the size a reference resizes to (``smart_resize``, ``scaled_dims``);
* :mod:`.norm`: rescale + normalize as exact per-channel tables (``ChannelNorm``);
* :mod:`.bf16`: bfloat16 bits and the exact bf16 rescale + normalize table (Llama 4's);
* :mod:`.patchify`: normalized pixels written straight into a model's patch layout;
* :mod:`.planes`: uint8 pixels as CHW planes (``rgb_planes``);
* :mod:`.resize`: the exact uint8 resizers (Pillow's, and ATen's in :mod:`.aten`);
* :mod:`.native`: the optional C kernels behind them (``MM_FRAMEWORK_KERNELS``,
  docs/kernels.md): which kernels run (``kernel_mode``, ``simd_level``) and Inkling's bf16
  patch layout (``patchify_bf16``, native only);
* :mod:`.mel` and :mod:`.resample`: audio, Whisper's log-mel features (``WhisperMel``,
  exact), ``torch.stft``'s log10 mel magnitudes (``StftLogMel``, within a stated tolerance)
  with the exact dMel quantisation (``dmel_centers``, ``dmel_bins``), and transformers' soxr
  resampling (``resample``, exact) (docs/audio.md);
* band fan-out helpers from :mod:`mm_framework.par`, for kernels that split one image.
"""

from __future__ import annotations

from ..checks import check_rgb
from ..par import for_chunks, rows_per_worker, try_map
from .norm import (
    ChannelNorm, channel_norm_fused, channel_norm_pil, channel_norm_steps, normalize_lut_fused, normalize_lut_pil,
    normalize_lut_recip,
)
from .bf16 import Bf16Norm, apply_bf16_lut, bf16_bits, bf16_widen, normalize_lut_bf16
from .native import active as kernel_mode
from .native import patchify_bf16, simd_level
from .patchify import patch_dtype, patchify_merged_blocks
from .resize import (
    RESAMPLERS, TORCHVISION_RESAMPLERS, TRANSFORMERS_RESAMPLE, check_resample, pil_vertical_first, resize_rgb,
    resize_wants_source,
)
from .aten import aten_coeffs
from .mel import StftLogMel, WhisperMel, dmel_bins, dmel_centers
from .planes import rgb_planes
from .resample import resample, resampled_length
from .sizing import scaled_dims, smart_resize

__all__ = [
    "RESAMPLERS",
    "ChannelNorm",
    "StftLogMel",
    "TORCHVISION_RESAMPLERS",
    "TRANSFORMERS_RESAMPLE",
    "WhisperMel",
    "Bf16Norm",
    "apply_bf16_lut",
    "aten_coeffs",
    "bf16_bits",
    "bf16_widen",
    "channel_norm_fused",
    "channel_norm_pil",
    "channel_norm_steps",
    "check_resample",
    "check_rgb",
    "dmel_bins",
    "dmel_centers",
    "for_chunks",
    "kernel_mode",
    "normalize_lut_fused",
    "normalize_lut_bf16",
    "normalize_lut_pil",
    "normalize_lut_recip",
    "patch_dtype",
    "patchify_bf16",
    "patchify_merged_blocks",
    "pil_vertical_first",
    "resample",
    "resampled_length",
    "resize_rgb",
    "resize_wants_source",
    "rgb_planes",
    "rows_per_worker",
    "scaled_dims",
    "simd_level",
    "smart_resize",
    "try_map",
]
