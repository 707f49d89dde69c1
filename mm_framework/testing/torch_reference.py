"""Skipping a test module whose reference is a torchvision backend where it cannot run.

A family's torchvision parity module calls :func:`require_torchvision` at import:
transformers' torchvision image processors need torch and torchvision, and a clone of the
uint8 bilinear resize is only the reference where torchvision itself takes ATen's uint8
path (on other CPUs it resizes through float32).
"""

from __future__ import annotations

import pytest

__all__ = ["require_torchvision"]


def require_torchvision(*, uint8_bilinear: bool = False) -> None:
    """Skip the calling module unless torch and torchvision import; with ``uint8_bilinear``,
    also unless torchvision resizes uint8 bilinear on ATen's uint8 kernel on this CPU."""
    pytest.importorskip("torch", reason="the torchvision backend's reference needs torch")
    pytest.importorskip("torchvision", reason="the torchvision backend's reference needs torchvision")
    if uint8_bilinear:
        from torchvision.transforms.v2.functional import _geometry

        if not _geometry._do_native_uint8_resize_on_cpu(_geometry.InterpolationMode.BILINEAR):
            pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU, not ATen's uint8 path "
                        "(the backend clones the latter)", allow_module_level=True)
