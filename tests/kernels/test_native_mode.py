"""Kernel mode selection (``MM_FRAMEWORK_KERNELS``) and what the face reports.

The first test is deliberately not skipped: a run that asks for the native kernels must
have them, so CI cannot silently test only the portable path.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from mm_framework import kernels
from mm_framework.errors import SpecError, UnsupportedError
from mm_framework.kernels import native


def test_requested_native_kernels_are_built():
    if os.environ.get(native.ENV, "").strip().lower() == "native":
        assert native.built(), f"{native.ENV}=native but the extension is missing: {native.missing_cause()}"
        assert native.active() == "native"
    elif os.environ.get(native.ENV, "").strip().lower() == "portable":
        assert native.active() == "portable"


@pytest.fixture
def fresh_mode(monkeypatch):
    """The mode re-read from a test-controlled environment; restored afterwards."""
    monkeypatch.delenv(native.ENV, raising=False)
    native.set_mode(None)
    yield monkeypatch
    monkeypatch.undo()
    native.set_mode(None)


def test_unset_means_native_when_built(fresh_mode):
    assert native.active() == ("native" if native.built() else "portable")


@pytest.mark.parametrize("value", ["portable", " Portable "])
def test_portable_forced(fresh_mode, value):
    fresh_mode.setenv(native.ENV, value)
    assert native.active() == "portable" and not native.use_native() and native.simd_level() == "none"


@pytest.mark.skipif(not native.built(), reason="native kernels not built")
def test_native_forced_reports_simd_level(fresh_mode):
    fresh_mode.setenv(native.ENV, "native")
    assert native.active() == "native" and native.simd_level() in ("avx2", "baseline")


def test_native_forced_without_the_extension_names_the_cause(fresh_mode):
    fresh_mode.setattr(native, "_native", None)
    fresh_mode.setattr(native, "_missing", "ImportError: no module named _native")
    fresh_mode.setenv(native.ENV, "native")
    with pytest.raises(UnsupportedError, match="not built.*no module named _native"):
        native.active()
    with pytest.raises(UnsupportedError, match="not built"):
        native.set_mode("native")
    fresh_mode.delenv(native.ENV)
    native.set_mode(None)
    assert native.active() == "portable" and native.simd_level() == "none"


def test_unknown_mode_is_rejected(fresh_mode):
    fresh_mode.setenv(native.ENV, "fast")
    with pytest.raises(SpecError, match=r"^MM_FRAMEWORK_KERNELS must be 'native', 'portable', .*; got 'fast'$"):
        native.active()
    with pytest.raises(UnsupportedError, match="kernel mode 'turbo' is not one of: native, portable"):
        native.set_mode("turbo")


def test_set_mode_overrides_the_environment(fresh_mode):
    fresh_mode.setenv(native.ENV, "portable")
    if native.built():
        native.set_mode("native")
        assert native.active() == "native"
    native.set_mode("portable")
    assert native.active() == "portable"


@pytest.mark.parametrize("mode", ["native", "portable"])
def test_source_is_wanted_only_by_the_portable_pillow_path(fresh_mode, mode):
    if mode == "native" and not native.built():
        pytest.skip("native kernels not built")
    native.set_mode(mode)
    assert kernels.kernel_mode() == mode
    assert kernels.resize_wants_source("pil_bicubic") is (mode == "portable")
    assert kernels.resize_wants_source("pil_bilinear") is (mode == "portable")
    assert kernels.resize_wants_source("aten_u8") is False
    with pytest.raises(SpecError):
        kernels.resize_wants_source("nearest")


def test_toolkit_bf16_patchify_without_the_extension_is_a_typed_error(fresh_mode):
    fresh_mode.setattr(native, "_native", None)
    fresh_mode.setattr(native, "_missing", "ImportError: gone")
    with pytest.raises(UnsupportedError, match="not built.*gone"):
        kernels.patchify_bf16(np.zeros((4, 4, 3), np.uint8), np.zeros((3, 256), np.uint16), np.zeros(3, np.uint16), 2)
